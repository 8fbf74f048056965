// The rounding bound (compute/rounding_bound.h) against the rounding it bounds, emulated on the CPU: a layer's
// input and weights rounded to the format, the sums in FP32 (cpu.direct), the output rounded to the storage
// format — exactly the arithmetic a Tensor Core layer does apart from the order of its FP32 sums. The bound must
// hold on every shape and stay meaningful (well below 1). The GPUs' own layers are held to the same bound by the
// cross-backend test.
#include "compute/backend_registry.h"
#include "compute/materialize.h"
#include "compute/rounding_bound.h"
#include "compute/shape_inference.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>

using namespace convscope;

namespace {

// Round to nearest even at `dropBits` low mantissa bits (TF32 drops 13, BF16 16); FP16 through _Float16 (the
// values here stay in its normal range).
float roundTo(float v, MathMode mode)
{
    if (mode == MathMode::FP16)
        return float(static_cast<_Float16>(v));
    const int drop = mode == MathMode::BF16 ? 16 : mode == MathMode::TF32 ? 13 : 0;
    if (drop == 0 || !std::isfinite(v))
        return v;
    uint32_t b = std::bit_cast<uint32_t>(v);
    b += (1u << (drop - 1)) - 1 + ((b >> drop) & 1u);
    b &= ~((1u << drop) - 1);
    return std::bit_cast<float>(b);
}

std::shared_ptr<const Tensor> rounded(const std::shared_ptr<const Tensor>& t, MathMode mode)
{
    if (!t)
        return t;
    auto r = std::make_shared<Tensor>(t->clone());
    for (int64_t i = 0; i < r->numel(); ++i)
        r->data()[i] = roundTo(r->data()[i], mode);
    return r;
}

Tensor runCpu(const Network& net, const ShapeReport& shapes, const Tensor& input)
{
    auto session = BackendRegistry::instance().find("cpu")->createSession("direct", SessionOptions {});
    session->prepare(net, shapes);
    session->runPass(input);
    double ms = 0;
    return session->fetchOutput(net.layers.size() - 1, &ms);
}

} // namespace

TEST_CASE("rounding bound: FP32 states none", "[rounding_bound]")
{
    Network net;
    net.input = { 1, 3, 8, 8, false, "random:1" };
    Layer l;
    l.name = "c";
    l.spec = test::conv2dSpec(4, { 3, 3 }, Padding2d::symmetric(1, 1));
    net.layers.push_back(l);
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    ReferenceNorms norms { { 1, 1 }, { { 1, 1 } } };
    CHECK(roundingBounds(MathMode::FP32, net, shapes, norms) == std::vector<double> { 0.0 });
    // TF32: operands to 2^-11, FP32 storage: (2·2^-11 + 27·2^-24)·√27 + 2^-24 on top of the input's 2^-24.
    const double k = 27, g = k * 0x1p-24 / (1 - k * 0x1p-24);
    CHECK(roundingBounds(MathMode::TF32, net, shapes, norms)[0]
        == Approx((2 * 0x1p-11 + g) * std::sqrt(k) + 0x1p-24 + 0x1p-24));
}

TEST_CASE("rounding bound: holds for emulated TF32, FP16 and BF16 convolutions and activations", "[rounding_bound]")
{
    struct ConvCase {
        int64_t n, c, h, w, k, kernel, stride, dilation, groups;
    };
    const ConvCase cases[]
        = { { 1, 3, 17, 13, 8, 3, 1, 1, 1 }, { 2, 16, 12, 12, 24, 3, 2, 1, 1 }, { 1, 64, 9, 9, 32, 3, 1, 2, 1 },
              { 2, 12, 10, 10, 12, 5, 1, 1, 3 }, { 1, 256, 6, 6, 16, 3, 1, 1, 1 }, { 1, 512, 4, 4, 8, 1, 1, 1, 1 } };
    for (MathMode mode : { MathMode::TF32, MathMode::FP16, MathMode::BF16 })
        for (const ConvCase& cc : cases)
            for (bool sigmoid : { false, true }) {
                Network net;
                net.input = { cc.n, cc.c, cc.h, cc.w, false, "random:" + std::to_string(cc.c) };
                Layer conv;
                conv.name = "conv";
                conv.spec = test::conv2dSpec(cc.k, { cc.kernel, cc.kernel }, Padding2d::symmetric(1, 1),
                    { cc.dilation, cc.dilation }, cc.groups);
                std::get<Conv2d>(conv.spec).stride = { cc.stride, cc.stride };
                conv.init.seed = uint64_t(cc.c * 31 + cc.k);
                net.layers.push_back(conv);
                if (sigmoid) {
                    Layer act;
                    act.name = "act";
                    act.spec = Sigmoid {};
                    net.layers.push_back(act);
                }
                const ShapeReport shapes = inferShapes(net);
                REQUIRE(shapes.ok());
                materializeParameters(net, shapes);
                const Tensor input = test::randomTensor(shapes.input, uint64_t(cc.h * 7 + cc.c));

                // FP32 reference, layer by layer.
                Network convOnly = net;
                convOnly.layers.resize(1);
                const ShapeReport convShapes = inferShapes(convOnly);
                const Tensor refConv = runCpu(convOnly, convShapes, input);
                const Tensor ref = sigmoid ? runCpu(net, shapes, input) : refConv.clone();

                // The format's arithmetic: rounded input and weights, FP32 sums, each output rounded to storage.
                const MathMode storageMode = mode == MathMode::TF32 ? MathMode::FP32 : mode;
                Tensor in = input.clone();
                for (int64_t i = 0; i < in.numel(); ++i)
                    in.data()[i] = roundTo(in.data()[i], storageMode);
                Network lowered = convOnly;
                lowered.layers[0].weight = rounded(lowered.layers[0].weight, mode);
                Tensor out = runCpu(lowered, convShapes, in);
                for (int64_t i = 0; i < out.numel(); ++i)
                    out.data()[i] = roundTo(out.data()[i], storageMode);
                if (sigmoid) {
                    for (int64_t i = 0; i < out.numel(); ++i)
                        out.data()[i] = roundTo(float(1.0 / (1.0 + std::exp(-double(out.data()[i])))), storageMode);
                }

                ReferenceNorms norms;
                norms.input = tensorNorm(input);
                norms.outputs.push_back(tensorNorm(refConv));
                if (sigmoid)
                    norms.outputs.push_back(tensorNorm(ref));
                const std::vector<double> bounds = roundingBounds(mode, net, shapes, norms);
                const ErrorMetrics e = compare(out, ref);
                INFO(mathModeName(mode) << " conv " << cc.c << "→" << cc.k << " k" << cc.kernel
                                        << (sigmoid ? " + sigmoid" : "") << ": relL2 " << e.relL2 << ", bound "
                                        << bounds.back());
                REQUIRE(e.valid);
                CHECK(e.relL2 <= bounds.back());
                CHECK(bounds.back() < (mode == MathMode::BF16 ? 0.5 : 0.08)); // a bound that still says something
                CHECK(e.relL2 > 0); // the emulation did round
            }
}
