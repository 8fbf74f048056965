#include "tests/test_support.h"

#include "compute/profiler.h"
#include "compute/random.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

namespace convscope::test {

ProfileOptions onePassOptions(std::vector<Selection> selections)
{
    ProfileOptions o;
    o.selections = std::move(selections);
    o.warmup = 0;
    o.repeat = 1;
    o.interleave = false;
    o.keepOutputs = true;
    o.reference.reset();
    return o;
}

Tensor onePassOutput(const Network& net, const Tensor& input, const std::string& selection)
{
    RunResult run = profile(net, input, onePassOptions({ Selection::parse(selection) }));
    INFO(run.selections.at(0).failure);
    REQUIRE(run.selections.at(0).ok);
    return std::move(*run.selections[0].layers.back().output);
}

int freeLoopbackPort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

Tensor randomTensor(const Shape& shape, uint64_t seed)
{
    Tensor t(shape);
    Random rng(seed);
    for (int64_t i = 0; i < t.numel(); ++i)
        t.data()[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
    return t;
}

double sampledConv2dRelL2(const Tensor& out, const Tensor& in, const Tensor& weight, const Tensor* bias,
    const Conv2d& spec, const Padding2d& pad, int samples, uint64_t seed)
{
    const Shape& o = out.shape();
    const Shape& x = in.shape();
    const int64_t cg = x.c / spec.groups, kg = o.c / spec.groups;
    Random rng(seed);
    double err = 0, ref = 0;
    for (int i = 0; i < samples; ++i) {
        const auto pick = [&](int64_t count) { return std::min(count - 1, int64_t(rng.uniform(0.0, double(count)))); };
        const int64_t n = pick(o.n), k = pick(o.c), oh = pick(o.h), ow = pick(o.w);
        const int64_t first = (k / kg) * cg;
        double acc = bias ? bias->data()[k] : 0.0;
        for (int64_t c = 0; c < cg; ++c)
            for (int64_t ki = 0; ki < spec.kernel_size[0]; ++ki) {
                const int64_t ih = oh * spec.stride[0] - pad.top + ki * spec.dilation[0];
                if (ih < 0 || ih >= x.h)
                    continue;
                for (int64_t kj = 0; kj < spec.kernel_size[1]; ++kj) {
                    const int64_t iw = ow * spec.stride[1] - pad.left + kj * spec.dilation[1];
                    if (iw >= 0 && iw < x.w)
                        acc += double(in.data()[((n * x.c + first + c) * x.h + ih) * x.w + iw])
                            * double(
                                weight.data()[((k * cg + c) * spec.kernel_size[0] + ki) * spec.kernel_size[1] + kj]);
                }
            }
        const double got = out.data()[((n * o.c + k) * o.h + oh) * o.w + ow];
        err += (got - acc) * (got - acc);
        ref += acc * acc;
    }
    return ref > 0 ? std::sqrt(err / ref) : std::sqrt(err);
}

void poison(Tensor& t) { t.fill(std::numeric_limits<float>::quiet_NaN()); }

Conv2d conv2dSpec(int64_t out, Pair kernel, Padding2d pad, Pair dilation, int64_t groups, bool bias)
{
    Conv2d c;
    c.out_channels = out;
    c.kernel_size = kernel;
    c.padding = pad;
    c.dilation = dilation;
    c.groups = groups;
    c.bias = bias;
    return c;
}

Padding2d explicitPadding(int64_t top, int64_t bottom, int64_t left, int64_t right)
{
    return { Padding2d::Mode::Explicit, top, bottom, left, right };
}

Padding3d explicitPadding3d(int64_t front, int64_t back, int64_t top, int64_t bottom, int64_t left, int64_t right)
{
    return { Padding3d::Mode::Explicit, front, back, top, bottom, left, right };
}

Conv3d conv3dSpec(int64_t out, Triple kernel, Triple stride, Padding3d pad, Triple dilation, int64_t groups)
{
    Conv3d c;
    c.out_channels = out;
    c.kernel_size = kernel;
    c.stride = stride;
    c.padding = pad;
    c.dilation = dilation;
    c.groups = groups;
    return c;
}

ConvTranspose2d convTranspose2dSpec(
    int64_t out, Pair kernel, Pair stride, Padding2d pad, Pair outputPadding, Pair dilation, int64_t groups)
{
    ConvTranspose2d c;
    c.out_channels = out;
    c.kernel_size = kernel;
    c.stride = stride;
    c.padding = pad;
    c.output_padding = outputPadding;
    c.dilation = dilation;
    c.groups = groups;
    return c;
}

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

NetworkBuilder::NetworkBuilder(const std::string& name, int64_t n, int64_t c, int64_t h, int64_t w, bool flat,
    int64_t inputSalt, uint64_t seedBase_)
    : seedBase(seedBase_)
{
    net.name = name;
    net.input = { n, c, flat ? 1 : h, flat ? 1 : w, flat,
        "random:" + std::to_string(static_cast<int64_t>(name.size()) * inputSalt + c) };
}

NetworkBuilder& NetworkBuilder::add(const std::string& name, LayerSpec spec, std::vector<std::string> inputs)
{
    Layer l;
    l.name = name;
    l.spec = std::move(spec);
    l.inputs = std::move(inputs);
    l.init.seed = net.layers.size() + seedBase;
    if (std::holds_alternative<BatchNorm2d>(l.spec) || std::holds_alternative<BatchNorm3d>(l.spec))
        l.init.kind = "random";
    net.layers.push_back(std::move(l));
    return *this;
}

namespace {
    void spreadWeights(Layer& l)
    {
        l.init.kind = "uniform";
        l.init.low = -4.0;
        l.init.high = 4.0;
    }
} // namespace

NetworkBuilder& NetworkBuilder::spread(const std::string& name, int64_t channels, std::vector<std::string> inputs)
{
    Conv2d c;
    c.out_channels = channels;
    c.kernel_size = { 1, 1 };
    add(name, c, std::move(inputs));
    spreadWeights(net.layers.back());
    return *this;
}

NetworkBuilder& NetworkBuilder::spread3(const std::string& name, int64_t channels)
{
    Conv3d c;
    c.out_channels = channels;
    c.kernel_size = { 1, 1, 1 };
    add(name, c);
    spreadWeights(net.layers.back());
    return *this;
}

NetworkBuilder& NetworkBuilder::dims(const std::vector<int64_t>& d)
{
    net.input = InputSpec::ofDims(d, net.input.source);
    return *this;
}

NetworkBuilder& NetworkBuilder::depth(int64_t d)
{
    net.input.depth = d;
    return *this;
}

namespace {
    struct CaseFilter {
        std::vector<std::string> ops, backends;
        bool set = false;
    };
    CaseFilter g_filter;

    std::vector<std::string> splitList(const std::string& list)
    {
        std::vector<std::string> items;
        std::stringstream in(list);
        for (std::string item; std::getline(in, item, ',');)
            if (!item.empty())
                items.push_back(item);
        return items;
    }

    const CaseFilter& caseFilter()
    {
        if (!g_filter.set) {
            const char* ops = std::getenv("CONVSCOPE_TEST_OP");
            const char* backends = std::getenv("CONVSCOPE_TEST_BACKEND");
            setCaseFilter(ops ? ops : "", backends ? backends : "");
        }
        return g_filter;
    }
} // namespace

void setCaseFilter(const std::string& ops, const std::string& backends)
{
    g_filter.ops = splitList(ops);
    g_filter.backends = splitList(backends);
    g_filter.set = true;
}

bool opSelected(const std::string& kind)
{
    const auto& ops = caseFilter().ops;
    return ops.empty() || std::find(ops.begin(), ops.end(), kind) != ops.end();
}

bool backendSelected(const std::string& backend)
{
    const auto& names = caseFilter().backends;
    return names.empty() || std::any_of(names.begin(), names.end(), [&](const std::string& n) {
        return n == backend || n.rfind(backend + ".", 0) == 0;
    });
}

bool algorithmSelected(const std::string& backend, const std::string& algorithm)
{
    const auto& names = caseFilter().backends;
    return names.empty() || std::any_of(names.begin(), names.end(), [&](const std::string& n) {
        return n == backend || n == backend + "." + algorithm;
    });
}

} // namespace convscope::test
