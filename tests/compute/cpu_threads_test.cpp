// The CPU side's one threading model (compute/cpu_threads.h): every fast CPU selection gives the same outputs on 1, 2
// and 7 threads (7: a team that divides nothing evenly), layer by layer, on example networks that hold every CPU
// layer kind between them (images and volumes, skips, transposed convolutions, a batch-1 classifier head); the session
// reports the threads it ran on; and OpenBLAS never runs a thread of its own.
#include "compute/backend_registry.h"
#include "compute/cpu/cpu_backend.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu_threads.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "tests/compute/cpu_test_helpers.h"
#include "tests/test_support.h"

using namespace convscope;
using namespace convscope::test;

namespace {

// Restores the default thread count however a test section ends.
struct ThreadCount {
    explicit ThreadCount(int n) { setCpuThreadCount(n); }
    ~ThreadCount() { setCpuThreadCount(0); }
};

std::vector<Tensor> runAll(const Network& net, const ShapeReport& shapes, const std::string& algorithm,
    const Tensor& input, int threads, std::string* reported)
{
    const ThreadCount count(threads);
    auto session = makeCpuBackend()->createSession(algorithm, {});
    session->prepare(net, shapes);
    session->runPass(input);
    *reported = session->metadata().at("threads");
    std::vector<Tensor> outputs;
    for (size_t i = 0; i < net.layers.size(); ++i)
        outputs.push_back(session->fetchOutput(i, nullptr));
    return outputs;
}

Network example(const std::string& file, int64_t batch, int64_t size)
{
    Network net = loadNetwork(examplesDir() / file);
    net.input.batch = batch;
    if (size > 0)
        net.input.height = net.input.width = size;
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    materializeParameters(net, shapes);
    return net;
}

} // namespace

TEST_CASE("cpu threads: every fast selection gives the same outputs on 1, 2 and 7 threads", "[cpu][threads]")
{
    struct Case {
        std::string file;
        int64_t batch, size;
    };
    // ResNet-18 at 64² and batch 1 (stride-2 layers, 1×1 downsamples, the 3-channel stem, skips, the classifier's
    // GEMV), the mixed basic blocks at batch 3, the U-Net (transposed convolutions, concat) and the 3-D autoencoder.
    const std::vector<Case> cases = { { "resnet18.json", 1, 64 }, { "resnet_basic_blocks.json", 3, 0 },
        { "tiny_unet.json", 2, 0 }, { "autoencoder3d.json", 2, 0 }, { "mobilenetv2_block.json", 1, 0 } };
    for (const Case& c : cases) {
        const Network net = example(c.file, c.batch, c.size);
        const ShapeReport shapes = inferShapes(net);
        const Tensor input = randomTensor(shapes.input, 77);
        for (const char* algorithm : { "im2col_gemm", "tap_gemm" }) {
            INFO(c.file << " on cpu." << algorithm);
            std::string reported;
            const std::vector<Tensor> one = runAll(net, shapes, algorithm, input, 1, &reported);
            CHECK(reported == "1");
            for (int threads : { 2, 7 }) {
                INFO(threads << " threads");
                const std::vector<Tensor> many = runAll(net, shapes, algorithm, input, threads, &reported);
                CHECK(reported == std::to_string(threads));
                for (size_t i = 0; i < one.size(); ++i) {
                    INFO("layer " << i << " " << net.layers[i].name);
                    requireClose(many[i], one[i], 1e-6);
                }
            }
        }
    }
}

TEST_CASE("cpu threads: OpenBLAS stays on the calling thread and the count can be set and restored", "[cpu][threads]")
{
    enterCpuThreadPolicy();
    CHECK(blasThreadCount() == 1);
    const int defaultCount = cpuThreadCount();
    REQUIRE(defaultCount >= 1);
    {
        const ThreadCount three(3);
        CHECK(cpuThreadCount() == 3);
    }
    CHECK(cpuThreadCount() == defaultCount);
    CHECK(!blasThreading().empty());
    CHECK(!blasCoreName().empty());
}

TEST_CASE("cpu threads: a batch-1 linear layer split across the team equals one sgemm", "[cpu][threads][linear]")
{
    // 1000 outputs over 7 threads: uneven blocks of 16, and bias, GEMV path; then batch 3 (GEMM path).
    for (int64_t batch : { 1, 3 }) {
        const Tensor in = randomTensor(Shape::features(batch, 777), 5);
        const Tensor w = randomTensor(Shape::nchw(1000, 777, 1, 1), 6);
        const Tensor b = randomTensor(Shape::nchw(1000, 1, 1, 1), 7);
        Tensor reference(Shape::features(batch, 1000));
        cpu::direct::linear(in, w, &b, reference);
        for (int threads : { 1, 7 }) {
            const ThreadCount count(threads);
            enterCpuThreadPolicy();
            Tensor out(Shape::features(batch, 1000));
            poison(out);
            cpu::fast::linear(in, w, &b, out);
            requireClose(out, reference);
        }
    }
}
