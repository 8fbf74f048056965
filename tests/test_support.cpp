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
