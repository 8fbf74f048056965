#include "tests/test_support.h"

#include "compute/random.h"

#include <limits>
#include <random>

namespace convscope::test {

Tensor randomTensor(const Shape& shape, uint64_t seed)
{
    Tensor t(shape);
    Random rng(seed);
    for (int64_t i = 0; i < t.numel(); ++i)
        t.data()[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
    return t;
}

void poison(Tensor& t) { t.fill(std::numeric_limits<float>::quiet_NaN()); }

Network fusableNetwork(const LayerSpec& activation, int64_t batch, int64_t height, int64_t width)
{
    auto layer = [](const std::string& name, LayerSpec spec, const std::string& init, uint64_t seed) {
        Layer l { name, std::move(spec), {}, {}, {}, {}, {}, {}, {} };
        l.init.kind = init;
        l.init.seed = seed;
        return l;
    };
    Network net;
    net.name = "fusable";
    net.input = { batch, 3, height, width, false, "random:3" };
    Conv2d c1;
    c1.out_channels = 5;
    c1.padding = { Padding2d::Mode::Explicit, 1, 0, 1, 2 };
    Conv2d c2;
    c2.out_channels = 6;
    c2.bias = false;
    c2.stride = { 2, 1 };
    Conv2d c3;
    c3.out_channels = 4;
    c3.kernel_size = { 1, 1 };
    net.layers.push_back(layer("c1", c1, "uniform", 1));
    net.layers.push_back(layer("bn1", BatchNorm2d { 1e-3, true }, "random", 2));
    net.layers.push_back(layer("act1", activation, "default", 1));
    net.layers.push_back(layer("pool", MaxPool2d {}, "default", 1));
    net.layers.push_back(layer("c2", c2, "uniform", 3));
    net.layers.push_back(layer("bn2", BatchNorm2d { 1e-5, false }, "random", 4));
    net.layers.push_back(layer("c3", c3, "uniform", 5));
    net.layers.push_back(layer("act3", activation, "default", 1));
    return net;
}

std::filesystem::path dataDir() { return CONVSCOPE_TEST_DATA_DIR; }
std::filesystem::path examplesDir() { return CONVSCOPE_EXAMPLES_DIR; }
std::filesystem::path cliPath() { return CONVSCOPE_CLI_PATH; }

TempDir::TempDir()
{
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("convscope-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
}

TempDir::~TempDir()
{
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
}

} // namespace convscope::test
