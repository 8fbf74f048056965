// The cuda-against-cpu.direct check and the small helpers the cuda backend tests share (declared in cuda_vs_cpu.h);
// apart from the tests so cuda_backend_test.cpp and cuda_conv2d_test.cpp both use one copy.
#include "tests/kernels/cuda_vs_cpu.h"

#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/shape_inference.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <random>

namespace convscope::test {

std::shared_ptr<Backend> cudaOrSkip() { return backendOrSkip("cuda"); }

void checkAgainstCpu(
    Backend& cuda, Network net, uint64_t seed, const std::string& what, const std::map<std::string, std::string>& extra)
{
    const ShapeReport shapes = inferShapes(net);
    INFO(what << "  " << shapes.firstError());
    REQUIRE(shapes.ok());
    randomParameters(net, shapes, seed);
    const Tensor input = test::randomTensor(shapes.input, seed * 977 + 5);

    auto cpu = BackendRegistry::instance().find("cpu");
    REQUIRE(cpu);
    auto ref = cpu->createSession("direct", {});
    ref->prepare(net, shapes);
    ref->runPass(input);
    std::vector<Tensor> expected;
    for (size_t i = 0; i < net.layers.size(); ++i)
        expected.push_back(ref->fetchOutput(i, nullptr));

    for (const std::string algorithm : { "direct", "tiled", "implicit_gemm", "winograd", "fft" }) {
        bool supported = true;
        for (size_t i = 0; i < net.layers.size(); ++i) {
            const Support s = cuda.supports(algorithm, net.layers[i].spec, shapes.layers[i]);
            if (!s.supported) {
                INFO(s.reason);
                supported = false;
                // Only the tiled kernel may refuse (huge halos), and fft a stride other than 1; everything in this
                // sweep is otherwise supported.
                CHECK((algorithm == "tiled" || (algorithm == "fft" && s.reason.find("stride") != std::string::npos)));
            }
        }
        if (!supported)
            continue;
        SessionOptions options;
        options.extra = extra;
        options.extra["poison_outputs"] = "1";
        auto session = cuda.createSession(algorithm, options);
        session->prepare(net, shapes);
        const PassTiming t = session->runPass(input);
        CHECK(t.layerMs.size() == net.layers.size());
        for (size_t i = 0; i < net.layers.size(); ++i) {
            double ms = -1;
            const Tensor out = session->fetchOutput(i, &ms);
            const ErrorMetrics m = compare(out, expected[i]);
            INFO("cuda." << algorithm << " layer " << i << " (" << layerTypeName(net.layers[i].spec) << ") "
                         << shapes.layers[i].in.str() << " -> " << shapes.layers[i].out.str() << ": relL2 " << m.relL2
                         << " maxAbs " << m.maxAbs << " " << m.note << " | " << session->layerNote(i));
            CHECK(m.valid);
            CHECK(m.relL2 <= 1e-5);
            CHECK(ms >= 0);
        }
    }
}

uint64_t freshSeed()
{
    const uint64_t seed = Catch::rngSeed() ? Catch::rngSeed() : std::random_device {}();
    std::cout << "seed " << seed << " (replay with --rng-seed " << seed << ")" << std::endl;
    return seed;
}

Padding2d randomPadding(Rng& r, int64_t maxTop, int64_t maxLeft)
{
    return { Padding2d::Mode::Explicit, r(0, maxTop), r(0, maxTop), r(0, maxLeft), r(0, maxLeft) };
}

std::string layerNoteOf(
    Backend& cuda, Network net, const std::string& algorithm, const std::map<std::string, std::string>& extra)
{
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    randomParameters(net, shapes, 1);
    SessionOptions options;
    options.extra = extra;
    auto session = cuda.createSession(algorithm, options);
    session->prepare(net, shapes);
    return session->layerNote(0);
}

} // namespace convscope::test
