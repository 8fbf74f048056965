// The onednn backend in --math bf16 (and what it says for the other modes): the activations are really stored as
// bf16 (every fetched value is a bf16 number), the convolutions run on the CPU's own BF16 units (oneDNN's
// implementation name), the error against cpu.direct is the rounding's (non-zero, within the bound of
// compute/rounding_bound.h), a second pass reuses every buffer, and the metadata says what ran. cpu.* computes FP32
// in every mode and says so. Every layer kind in bf16 is tests/backends/cross_backend_test.cpp. On a CPU without
// AVX512-BF16 or AMX the bf16 cases print SKIPPED with the backend's refusal.
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/rounding_bound.h"
#include "compute/shape_inference.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>

using namespace convscope;
using convscope::test::oneLayer;
using convscope::test::randomParameters;

namespace {

SessionOptions mathOptions(MathMode m)
{
    SessionOptions o;
    o.math = m;
    return o;
}

// The onednn backend when it runs bf16 on this machine, else null after printing SKIPPED with its refusal.
std::shared_ptr<Backend> onednnBf16OrSkip()
{
    auto onednn = test::backendOrSkip("onednn");
    if (!onednn)
        return nullptr;
    try {
        onednn->createSession("auto", mathOptions(MathMode::BF16));
    } catch (const UnsupportedError& e) {
        CHECK_THAT(e.what(), Catch::StartsWith("onednn bf16") && Catch::Contains("this CPU has"));
        std::cout << "SKIPPED: " << e.what() << std::endl;
        return nullptr;
    }
    return onednn;
}

TensorNorm normOf(const Tensor& t)
{
    TensorNorm n;
    for (int64_t k = 0; k < t.numel(); ++k) {
        n.l2 += double(t.data()[k]) * t.data()[k];
        n.maxAbs = std::max(n.maxAbs, double(std::abs(t.data()[k])));
    }
    n.l2 = std::sqrt(n.l2);
    return n;
}

// A float that bf16 holds exactly: its low 16 bits are zero.
bool isBf16(float v)
{
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    return (bits & 0xFFFFu) == 0;
}

} // namespace

TEST_CASE("onednn bf16: activations stored as bf16, native BF16 convolution, error within the rounding bound",
    "[onednn][bf16]")
{
    auto onednn = onednnBf16OrSkip();
    if (!onednn)
        return;
    // conv → batch norm → relu → max pool → linear: weights converted at prepare, statistics kept FP32.
    Network net;
    net.input = { 2, 16, 12, 10, false, "random:5" };
    for (auto [name, spec] :
        { std::pair { "conv", LayerSpec { Conv2d { 32, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) } } },
            std::pair { "bn", LayerSpec { BatchNorm2d {} } }, std::pair { "relu", LayerSpec { ReLU {} } },
            std::pair { "pool", LayerSpec { MaxPool2d {} } }, std::pair { "flat", LayerSpec { Flatten {} } },
            std::pair { "fc", LayerSpec { Linear { 10, true } } } }) {
        Layer l;
        l.name = name;
        l.spec = spec;
        net.layers.push_back(l);
    }
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    randomParameters(net, shapes, 41);
    const Tensor input = test::randomTensor(shapes.input, 43);

    auto ref = BackendRegistry::instance().find("cpu")->createSession("direct", {});
    ref->prepare(net, shapes);
    ref->runPass(input);
    auto session = onednn->createSession("auto", mathOptions(MathMode::BF16));
    session->prepare(net, shapes);
    session->runPass(input);
    const PassTiming t = session->runPass(input); // the second pass reuses every buffer
    REQUIRE(t.layerMs.size() == net.layers.size());
    CHECK(t.h2dMs >= 0); // the input's conversion to bf16
    // The bound of each layer (compute/rounding_bound.h), its gains measured on the FP32 reference as the profiler
    // does.
    ReferenceNorms norms;
    norms.input = normOf(input);
    std::vector<Tensor> expectedOutputs;
    for (size_t i = 0; i < net.layers.size(); ++i) {
        expectedOutputs.push_back(ref->fetchOutput(i, nullptr));
        norms.outputs.push_back(normOf(expectedOutputs.back()));
    }
    const std::vector<double> bounds = roundingBounds(MathMode::BF16, net, shapes, norms);
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const Tensor& expected = expectedOutputs[i];
        double ms = -1;
        const Tensor out = session->fetchOutput(i, &ms);
        const ErrorMetrics m = compare(out, expected);
        INFO("layer " << net.layers[i].name << ": relL2 " << m.relL2 << " bound " << bounds[i] << " | "
                      << session->layerNote(i));
        REQUIRE(out.shape() == expected.shape());
        CHECK(m.valid);
        CHECK(m.relL2 > 0); // rounded: a run that silently computed FP32 would match to ~1e-7
        CHECK(m.relL2 <= bounds[i]);
        CHECK(ms >= 0);
        int64_t notBf16 = 0;
        for (int64_t k = 0; k < out.numel(); ++k)
            notBf16 += isBf16(out.data()[k]) ? 0 : 1;
        CHECK(notBf16 == 0);
    }
    // oneDNN's own BF16 kernels (avx512_core_bf16, or AMX), not its emulation on plain AVX-512.
    const std::string convNote = session->layerNote(0);
    INFO(convNote);
    CHECK((convNote.find("bf16") != std::string::npos || convNote.find("amx") != std::string::npos));

    const auto meta = session->metadata();
    CHECK_THAT(meta.at("math"), Catch::StartsWith("bf16 storage, bf16 products, fp32 accumulation (oneDNN, "));
    CHECK_THAT(meta.at("storage"), Catch::StartsWith("bf16"));
    CHECK_THAT(onednn->info().at("bf16"), Catch::StartsWith("native ("));
}

TEST_CASE("onednn: tf32 runs FP32, fp16 runs or is refused naming what is missing", "[onednn][bf16]")
{
    auto onednn = test::backendOrSkip("onednn");
    if (!onednn)
        return;
    CHECK(onednn->createSession("auto", mathOptions(MathMode::FP32))->metadata().at("math") == "fp32");
    CHECK(onednn->createSession("auto", mathOptions(MathMode::TF32))->metadata().at("math")
        == "fp32 (the CPU has no TF32)");
    try {
        auto s = onednn->createSession("auto", mathOptions(MathMode::FP16));
        // A oneDNN with f16 kernels on a CPU with AVX512-FP16 or AMX-FP16.
        CHECK_THAT(s->metadata().at("math"), Catch::StartsWith("fp16 storage"));
    } catch (const UnsupportedError& e) {
        const std::string why = e.what();
        INFO(why);
        CHECK_THAT(why, Catch::StartsWith("onednn fp16"));
        CHECK((why.find("needs AVX512-FP16 or AMX-FP16; this CPU has") != std::string::npos
            || why.find("has no f16 convolution") != std::string::npos));
        CHECK_THAT(onednn->info().at("fp16"), Catch::StartsWith("no: onednn fp16"));
    }
    CHECK_FALSE(onednn->info().at("cpu_isa").empty());
}

TEST_CASE("cpu: every math mode computes FP32, says so and is never refused", "[onednn][bf16]")
{
    auto cpu = BackendRegistry::instance().find("cpu");
    REQUIRE(cpu);
    Network net = oneLayer(Shape::nchw(1, 3, 9, 8), Conv2d { 4, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1) });
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    randomParameters(net, shapes, 7);
    const Tensor input = test::randomTensor(shapes.input, 9);
    auto fp32 = cpu->createSession("direct", {});
    fp32->prepare(net, shapes);
    fp32->runPass(input);
    const Tensor expected = fp32->fetchOutput(0, nullptr);
    for (MathMode m : { MathMode::FP16, MathMode::BF16 }) {
        auto s = cpu->createSession("direct", mathOptions(m));
        s->prepare(net, shapes);
        s->runPass(input);
        const Tensor out = s->fetchOutput(0, nullptr);
        REQUIRE(out.numel() == expected.numel());
        CHECK(std::memcmp(out.data(), expected.data(), size_t(out.numel()) * sizeof(float)) == 0);
        CHECK_THAT(s->metadata().at("math"), Catch::StartsWith("fp32: our CPU kernels compute in FP32; "));
        CHECK_THAT(s->metadata().at("math"), Catch::Contains("on the CPU runs on onednn"));
    }
}
