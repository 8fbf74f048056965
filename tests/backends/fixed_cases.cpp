// The fixed cases of the cross-backend test (cross_backend_test.cpp): per layer kind, small networks with awkward
// shapes chosen by hand (odd and non-square sizes, batch 1 to 3, asymmetric padding, groups, broadcast gates,
// three-input merges), and whole networks with skips through fusable groups. The case generator names every kind:
// its last branch does not compile when the kind table gains one without a case.
#include "tests/backends/backend_cases.h"

#include "compute/binary.h"
#include "compute/layer_kinds.h"
#include "compute/normalization.h"

using namespace convscope;

namespace {

using Case = test::NetworkCase;

// A small network under construction (test_support.h): this sweep's input salt and weight seeds.
struct Builder : test::NetworkBuilder {
    explicit Builder(const std::string& name, int64_t n, int64_t c, int64_t h, int64_t w, bool flat = false)
        : NetworkBuilder(name, n, c, h, w, flat, 7, 11)
    {
    }
};

// flatten, reshape and transpose at every rank from 2 to 6 (the input's rank, or the output's), a view read by the
// next layer, and the transformer patterns: NCHW → NHWC (ConvNeXt), flatten(2) then transpose (ViT's patches), the
// channel shuffle's Reshape–Transpose–Reshape (ShuffleNet).
std::vector<Case> layoutCases(const std::string& type, const LayerSpec& kind)
{
    if (std::holds_alternative<Flatten>(kind))
        return { Builder(type, 2, 3, 5, 3).spread("s", 4).add("f", Flatten {}).done("a copy of [2, 4, 5, 3]"),
            Builder(type, 2, 3, 4, 5)
                .spread("s", 6)
                .add("f", Flatten { 2, -1 })
                .add("t", Transpose { { 0, 2, 1 } })
                .done("flatten(2) then transpose(1, 2): ViT's patches [2, 20, 6]"),
            Builder(type, 1, 1, 1, 1).dims({ 2, 3, 2, 4, 5 }).add("f", Flatten { 2, 3 }).done("rank 5 dims 2..3"),
            Builder(type, 1, 1, 1, 1)
                .dims({ 2, 3, 2, 2, 3, 2 })
                .add("f", Flatten { 1, -2 })
                .add("r", ReLU {})
                .done("rank 6 dims 1..−2"),
            Builder(type, 1, 1, 1, 1).dims({ 3, 4, 5 }).add("f", Flatten { 0, 1 }).done("rank 3 dims 0..1"),
            Builder(type, 1, 1, 1, 1).dims({ 6, 7 }).add("f", Flatten { 0, -1 }).done("rank 2 into rank 1") };
    if (std::holds_alternative<Reshape>(kind))
        return { Builder(type, 2, 3, 4, 5).spread("s", 3).add("r", Reshape { { 2, -1 } }).done("rank 4 to [2, -1]"),
            Builder(type, 1, 1, 1, 1)
                .dims({ 2, 6, 5 })
                .add("r", Reshape { { 2, 3, 2, 5 } })
                .add("s", Sigmoid {})
                .done("rank 3 to rank 4, read by a sigmoid"),
            Builder(type, 1, 1, 1, 1).dims({ 6, 10 }).add("r", Reshape { { 3, 2, 5, -1, 1 } }).done("rank 2 to rank 5"),
            Builder(type, 1, 1, 1, 1)
                .dims({ 2, 3, 2, 2, 5 })
                .add("r", Reshape { { 1, 2, 3, 2, 2, 5 } })
                .add("t", Transpose { { 5, 4, 3, 2, 1, 0 } })
                .done("rank 5 to rank 6, then reversed"),
            Builder(type, 1, 1, 1, 1).dims({ 2, 3, 2, 2, 2, 3 }).add("r", Reshape { { 6, -1, 3 } }).done("rank 6 to 3"),
            Builder(type, 2, 6, 3, 4)
                .spread("s", 6)
                .add("g", Reshape { { 2, 2, 3, 3, 4 } })
                .add("t", Transpose { { 0, 2, 1, 3, 4 } })
                .add("back", Reshape { { 2, 6, 3, 4 } })
                .add("c", test::conv2dSpec(3, { 3, 3 }, Padding2d::symmetric(1, 1)))
                .done("ShuffleNet's channel shuffle, read by a convolution") };
    return { Builder(type, 1, 1, 1, 1).dims({ 5, 7 }).add("t", Transpose { { 1, 0 } }).done("rank 2"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 5, 7 })
            .add("t", Transpose { { 0, -1, 1 } })
            .done("rank 3, a negative axis"),
        Builder(type, 2, 3, 4, 5)
            .spread("s", 6)
            .add("t", Transpose { { 0, 2, 3, 1 } })
            .add("back", Transpose { { 0, 3, 1, 2 } })
            .add("c", test::conv2dSpec(2, { 1, 1 }, {}))
            .done("NCHW to NHWC and back (ConvNeXt), read by a convolution"),
        Builder(type, 1, 1, 1, 1).dims({ 2, 3, 2, 4, 5 }).add("t", Transpose { { 4, 0, 3, 1, 2 } }).done("rank 5"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 3, 2, 2, 3, 2 })
            .add("t", Transpose { { 0, 1, 3, 2, 5, 4 } })
            .done("rank 6"),
        Builder(type, 3, 1, 1, 1).dims({ 3, 4 }).add("t", Transpose { { 0, 1 } }).done("the identity permutation"),
        // Sizes across the GPU's 64 × 64 tiles on both traded axes, and a middle axis that merges with its neighbour.
        Builder(type, 1, 1, 1, 1)
            .dims({ 2, 70, 3, 67 })
            .add("t", Transpose { { 0, 3, 1, 2 } })
            .done("tiles: [2, 70, 3, 67] to [2, 67, 70, 3]"),
        Builder(type, 1, 1, 1, 1)
            .dims({ 130, 2, 65 })
            .add("t", Transpose { { 2, 1, 0 } })
            .done("tiles: [130, 2, 65] reversed") };
}

Conv2d conv(int64_t out, int64_t k, int64_t stride = 1, Padding2d pad = {}, int64_t dilation = 1, int64_t groups = 1)
{
    Conv2d c;
    c.out_channels = out;
    c.kernel_size = { k, k };
    c.stride = { stride, stride };
    c.padding = pad;
    c.dilation = { dilation, dilation };
    c.groups = groups;
    return c;
}

// One activation kind after a spreading convolution, on an odd non-square image.
Case activationCase(const std::string& type, LayerSpec spec)
{
    return Builder(type, 2, 3, 7, 9).spread("spread", 4).add("act", std::move(spec)).done("after ±4 1×1 conv");
}

// gelu, softplus, mish, unary (issue 30): past the bends (±4 after a 1×1 convolution), flat and volume inputs of odd
// sizes (the float4 path and its tail); log, sqrt and reciprocal read a softplus's positive output.
std::vector<Case> mathCases(const std::string& type, const LayerSpec& spec, const std::string& variant = {})
{
    std::vector<Case> cases;
    const auto* unary = std::get_if<Unary>(&spec);
    const bool positive
        = unary && (unary->op == Unary::Op::Log || unary->op == Unary::Op::Sqrt || unary->op == Unary::Op::Reciprocal);
    const auto build = [&](test::NetworkBuilder b, const std::string& what) {
        if (positive)
            b.add("pos", Softplus {});
        cases.push_back(b.add("m", spec).done(variant + what));
    };
    build(Builder(type, 2, 3, 7, 9).spread("spread", 4), "after ±4 1×1 conv");
    build(Builder(type, 3, 11, 1, 1, true), "flat [3, 11]");
    build(Builder(type, 1, 2, 5, 3).depth(3).spread3("s", 3), "volume [1, 3, 3, 5, 3]");
    return cases;
}

// binary: NumPy broadcasting both ways (a [N, C, 1, 1] gate second, a one-channel slice first), a constant per channel
// on the right, a scalar constant on the left, and a flat input; a positive operand where the op needs one (div's
// denominator, pow's base: a softplus of the ±4 values, its exponent clamped to ±2).
std::vector<Case> binaryCases(const std::string& type, Binary::Op op)
{
    const bool posA = op == Binary::Op::Pow, posB = op == Binary::Op::Div;
    const auto two = [&](const std::string& what, bool gate, bool slice) {
        Builder b(type, 2, 3, 7, 9);
        b.spread("a", 3).spread("b", 3, { "input" });
        std::string x = "a", y = "b";
        if (slice) {
            b.add("sa", Slice { 1, 0, 1 }, { x });
            x = "sa";
        }
        if (gate) {
            b.add("gb", GlobalAvgPool2d {}, { y });
            y = "gb";
        }
        if (posA) {
            b.add("pa", Softplus {}, { x });
            x = "pa";
            // An exponent within ±2 keeps base^exponent inside FP16's range (0.018^−4 would overflow it).
            b.add("ea", Hardtanh { -2.0, 2.0 }, { y });
            y = "ea";
        }
        if (posB) {
            b.add("pb", Softplus {}, { y });
            y = "pb";
        }
        return b.add("m", Binary { op, {}, {}, false, {} }, { x, y }).done(std::string(binaryOpName(op)) + ", " + what);
    };
    const std::vector<float> perChannel
        = op == Binary::Op::Pow ? std::vector<float> { 2.0f, 0.5f, -1.0f } : std::vector<float> { -1.5f, 0.75f, 2.0f };
    test::NetworkBuilder right = Builder(type, 2, 3, 5, 6).spread("s", 3);
    if (posA)
        right.add("p", Softplus {});
    right.add("m", Binary { op, perChannel, { 3, 1, 1 }, false, {} });
    test::NetworkBuilder left = Builder(type, 1, 2, 4, 5).spread("s", 2);
    if (posB)
        left.add("p", Softplus {});
    left.add("m", Binary { op, { 1.5f }, { 1 }, true, {} });
    std::vector<float> eleven;
    for (int k = 0; k < 11; ++k)
        eleven.push_back(0.25f + 0.2f * float(k));
    test::NetworkBuilder flat = Builder(type, 3, 11, 1, 1, true);
    if (posA)
        flat.add("p", Softplus {});
    flat.add("m", Binary { op, eleven, { 11 }, false, {} });
    return { two("one shape", false, false), two("[N, C, 1, 1] gate second", true, false),
        two("one channel first, broadcast over C", false, true),
        right.done(std::string(binaryOpName(op)) + ", " + "constant [3, 1, 1] on the right"),
        left.done(std::string(binaryOpName(op)) + ", " + "scalar constant on the left"),
        flat.done(std::string(binaryOpName(op)) + ", " + "flat [3, 11] with a constant [11]") };
}

// resize: every mode, coordinate transformation and nearest rounding, by scales and by sizes, up and down, images
// and volumes (the first three are the ones oneDNN's resampling runs).
std::vector<Case> resizeCases(const std::string& type)
{
    using C = Resize::Coordinates;
    using M = Resize::Mode;
    using R = Resize::NearestMode;
    const auto make = [](M m, C c, R r, std::vector<int64_t> size, std::vector<double> scale) {
        Resize l;
        l.mode = m;
        l.coordinate_transformation_mode = c;
        l.nearest_mode = r;
        l.size = std::move(size);
        l.scale_factor = std::move(scale);
        return l;
    };
    Resize cubic = make(M::Cubic, C::HalfPixel, R::Floor, {}, { 1.7, 0.6 });
    Resize keys = make(M::Cubic, C::Asymmetric, R::Floor, { 5, 12 }, {});
    keys.cubic_coeff_a = -0.5;
    keys.exclude_outside = true;
    return { Builder(type, 2, 3, 7, 9)
                 .spread("s", 3)
                 .add("r", make(M::Linear, C::HalfPixel, R::Floor, { 11, 13 }, {}))
                 .done("bilinear half_pixel to 11×13"),
        Builder(type, 1, 2, 7, 9)
            .add("r", make(M::Nearest, C::HalfPixel, R::RoundPreferCeil, { 4, 5 }, {}))
            .done("nearest-exact down to 4×5"),
        Builder(type, 1, 2, 3, 4)
            .depth(3)
            .add("r", make(M::Linear, C::PytorchHalfPixel, R::Floor, { 5, 6, 7 }, {}))
            .done("trilinear to 5×6×7"),
        Builder(type, 2, 3, 7, 9).add("r", Resize {}).done("nearest ×2 (PyTorch's default)"),
        Builder(type, 1, 3, 6, 5)
            .add("r", make(M::Linear, C::AlignCorners, R::Floor, {}, { 2.5 }))
            .done("bilinear align_corners ×2.5"),
        Builder(type, 1, 2, 8, 7).add("r", cubic).done("bicubic ×1.7 × 0.6"),
        Builder(type, 1, 2, 6, 7).add("r", keys).done("cubic A −0.5 exclude_outside asymmetric to 5×12"),
        Builder(type, 1, 2, 6, 7)
            .add("r", make(M::Nearest, C::PytorchHalfPixel, R::RoundPreferFloor, { 1, 5 }, {}))
            .done("nearest round_prefer_floor pytorch_half_pixel to 1×5"),
        Builder(type, 1, 2, 5, 6)
            .add("r", make(M::Nearest, C::AlignCorners, R::Ceil, {}, { 1.5, 0.7 }))
            .done("nearest ceil align_corners ×1.5 × 0.7"),
        Builder(type, 1, 2, 5, 6)
            .add("r", make(M::Linear, C::HalfPixelSymmetric, R::Floor, {}, { 1.3, 2.2 }))
            .done("linear half_pixel_symmetric ×1.3 × 2.2"),
        Builder(type, 1, 2, 5, 6)
            .add("r", make(M::Nearest, C::TfHalfPixelForNn, R::Floor, {}, { 0.8, 1.6 }))
            .done("nearest tf_half_pixel_for_nn"),
        Builder(type, 1, 2, 3, 3)
            .depth(2)
            .add("r", make(M::Nearest, C::Asymmetric, R::Floor, {}, { 2, 1, 3 }))
            .done("volume nearest ×2 ×1 ×3") };
}

// The case generator: every kind is named, and the last branch does not compile.
std::vector<Case> casesFor(const LayerSpec& kind)
{
    const std::string type = layerTypeName(kind);
    return std::visit(
        [&](const auto& k) -> std::vector<Case> {
            using T = std::decay_t<decltype(k)>;
            if constexpr (std::is_same_v<T, Conv2d>) {
                return {
                    Builder(type, 2, 3, 9, 7)
                        .add("c", conv(5, 3, 1, test::explicitPadding(1, 0, 2, 1)))
                        .done("asymmetric padding"),
                    Builder(type, 1, 4, 11, 10)
                        .add("c", conv(6, 3, 2, test::explicitPadding(2, 2, 2, 2), 2, 2))
                        .done("stride 2 dilation 2 groups 2"),
                    Builder(type, 3, 8, 5, 5).add("c", conv(3, 1)).done("1×1"),
                    Builder(type, 8, 64, 4, 4)
                        .add("c", conv(1, 4))
                        .done("64→1 4×4 on 4×4: one output per image, a long reduction on a tiny grid (DCGAN's last "
                              "layer, split-K)"),
                    Builder(type, 1, 17, 12, 13)
                        .add("c", conv(8, 5, 1, { Padding2d::Mode::Same, 0, 0, 0, 0 }))
                        .done("5×5 same, 17 channels (the per-tap GEMM)"),
                    Builder(type, 2, 16, 9, 10)
                        .add("c", conv(16, 3, 2, test::explicitPadding(1, 0, 1, 1), 1, 16))
                        .done("depthwise 3×3 stride 2, 16 channels (MobileNet)"),
                    Builder(type, 1, 5, 8, 7)
                        .add("c", conv(10, 3, 1, test::explicitPadding(2, 2, 2, 2), 2, 5))
                        .done("depthwise, channel multiplier 2, dilation 2, 5 channels"),
                    Builder(type, 2, 6, 23, 19)
                        .add("c", conv(6, 5, 1, test::explicitPadding(2, 2, 2, 2), 1, 6))
                        .add("r", ReLU {})
                        .done("depthwise 5×5, planes of several blocks, a ReLU to fuse"),
                    Builder(type, 1, 3, 9, 8)
                        .add("c", conv(3, 7, 2, test::explicitPadding(3, 3, 3, 3), 1, 3))
                        .done("depthwise 7×7 stride 2 (taps not unrolled)"),
                    Builder(type, 2, 12, 8, 7)
                        .add("c", conv(24, 3, 1, test::explicitPadding(1, 1, 1, 1), 1, 3))
                        .done("groups 3, 8 outputs a group"),
                    Builder(type, 2, 32, 20, 20)
                        .add("c", conv(48, 3, 1, Padding2d::symmetric(1, 1)))
                        .done("32→48 3×3 (oneDNN's blocked layouts, the wider GEMM tiles)"),
                };
            } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                ConvTranspose2d a;
                a.out_channels = 3;
                a.stride = { 2, 2 };
                a.padding = Padding2d::symmetric(1, 1);
                a.output_padding = { 1, 1 };
                ConvTranspose2d b;
                b.out_channels = 4;
                b.kernel_size = { 4, 4 };
                b.stride = { 2, 2 };
                b.padding = Padding2d::symmetric(1, 1);
                b.groups = 2;
                ConvTranspose2d c;
                c.out_channels = 3;
                c.kernel_size = { 2, 3 };
                c.stride = { 3, 2 };
                c.padding = test::explicitPadding(1, 0, 0, 2);
                c.output_padding = { 2, 1 };
                c.dilation = { 1, 2 };
                ConvTranspose2d dw;
                dw.out_channels = 16;
                dw.kernel_size = { 4, 4 };
                dw.stride = { 2, 2 };
                dw.padding = Padding2d::symmetric(1, 1);
                dw.groups = 16;
                // cuda.implicit_gemm's phase GEMMs (at least 32 output and 8 input channels a group): DCGAN's k4 s2,
                // strides 3,4 with dilation, groups, output padding, an asymmetric crop and phases no tap reaches,
                // and stride 1 (one phase written in place).
                ConvTranspose2d gemm { 32, { 4, 4 }, { 2, 2 }, Padding2d::symmetric(1, 1) };
                ConvTranspose2d mixed { 64, { 5, 3 }, { 3, 4 }, test::explicitPadding(3, 0, 0, 1), { 1, 2 }, { 2, 1 },
                    2 };
                ConvTranspose2d dilated { 32, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 0, 0 }, { 2, 2 } };
                return { Builder(type, 2, 4, 5, 6).add("t", a).done("stride 2 output_padding 1"),
                    Builder(type, 2, 8, 3, 4).add("t", gemm).done("k4 stride 2, 32 outputs (the phase GEMMs)"),
                    Builder(type, 1, 16, 3, 3)
                        .add("t", mixed)
                        .done("strides 3,4 dilation 2,1 groups 2, 32 outputs a group, crop, output_padding 1,2"),
                    Builder(type, 1, 8, 4, 5).add("t", dilated).done("stride 1 dilation 2, 32 outputs"),
                    Builder(type, 1, 4, 6, 6).add("t", b).done("k4 stride 2 groups 2 (U-Net's upsampling)"),
                    Builder(type, 2, 5, 4, 5)
                        .add("t", c)
                        .done("strides 3,2 dilation 1,2 output_padding 2,1 asymmetric crop"),
                    Builder(type, 1, 16, 5, 4).add("t", dw).done("depthwise k4 stride 2, 16 channels") };
            } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                MaxPool2d a;
                a.kernel_size = { 3, 3 };
                a.stride = Pair { 2, 2 };
                a.padding = Padding2d::symmetric(1, 1);
                a.ceil_mode = true;
                MaxPool2d b;
                b.dilation = { 2, 2 };
                return { Builder(type, 2, 3, 9, 8).spread("s", 3).add("p", a).done("k3 s2 pad 1 ceil_mode"),
                    Builder(type, 1, 2, 10, 9).spread("s", 2).add("p", b).done("dilation 2") };
            } else if constexpr (std::is_same_v<T, AvgPool2d>) {
                AvgPool2d a;
                a.kernel_size = { 3, 3 };
                a.stride = Pair { 2, 2 };
                a.padding = Padding2d::symmetric(1, 1);
                a.count_include_pad = false;
                AvgPool2d b;
                b.divisor_override = 3;
                return { Builder(type, 2, 3, 9, 8).add("p", a).done("k3 s2 pad 1 without the padding"),
                    Builder(type, 1, 2, 7, 6).add("p", b).done("divisor_override 3") };
            } else if constexpr (std::is_same_v<T, GlobalAvgPool2d>) {
                return { Builder(type, 3, 5, 7, 5).add("g", k).done("7×5"),
                    Builder(type, 2, 3, 64, 48).add("g", k).done("64×48 (float4 planes, grid-stride loops)") };
            } else if constexpr (std::is_same_v<T, BatchNorm2d>) {
                BatchNorm2d plain;
                plain.affine = false;
                return { Builder(type, 2, 3, 6, 7).spread("s", 5).add("bn", k).done("random statistics"),
                    Builder(type, 1, 3, 5, 5).add("bn", plain).done("affine false") };
            } else if constexpr (std::is_same_v<T, LeakyReLU>) {
                return { activationCase(type, LeakyReLU { 0.2 }) };
            } else if constexpr (std::is_same_v<T, ELU>) {
                return { activationCase(type, ELU { 0.7 }) };
            } else if constexpr (
                std::is_same_v<T,
                    ReLU> || std::is_same_v<T, Sigmoid> || std::is_same_v<T, Tanh> || std::is_same_v<T, ReLU6> || std::is_same_v<T, Hardswish> || std::is_same_v<T, Hardsigmoid> || std::is_same_v<T, SiLU>) {
                return { activationCase(type, k) };
            } else if constexpr (std::is_same_v<T, GELU>) {
                std::vector<Case> cases = mathCases(type, GELU { false });
                for (Case& c : mathCases(type, GELU { true }, "tanh, "))
                    cases.push_back(std::move(c));
                return cases;
            } else if constexpr (std::is_same_v<T, Softplus>) {
                std::vector<Case> cases = mathCases(type, k);
                cases.push_back(Builder(type, 2, 3, 7, 9)
                                    .spread("s", 4)
                                    .add("act", Softplus { 2.0, 3.0 })
                                    .done("β 2, x past threshold 3"));
                cases.push_back(
                    Builder(type, 2, 3, 7, 9).spread("s", 4).add("act", Softplus { 0.5, 20.0 }).done("β 0.5"));
                return cases;
            } else if constexpr (std::is_same_v<T, Mish>) {
                return mathCases(type, k);
            } else if constexpr (std::is_same_v<T, Unary>) {
                std::vector<Case> cases;
                for (Unary::Op op : { Unary::Op::Exp, Unary::Op::Log, Unary::Op::Sqrt, Unary::Op::Reciprocal,
                         Unary::Op::Neg, Unary::Op::Abs, Unary::Op::Erf })
                    for (Case& c : mathCases(type, Unary { op }, std::string(unaryOpName(op)) + ", "))
                        cases.push_back(std::move(c));
                return cases;
            } else if constexpr (std::is_same_v<T, Binary>) {
                std::vector<Case> cases;
                for (Binary::Op op : { Binary::Op::Add, Binary::Op::Sub, Binary::Op::Mul, Binary::Op::Div,
                         Binary::Op::Pow, Binary::Op::Min, Binary::Op::Max })
                    for (Case& c : binaryCases(type, op))
                        cases.push_back(std::move(c));
                return cases;
            } else if constexpr (std::is_same_v<T, Hardtanh>) {
                return { activationCase(type, Hardtanh { -1.5, 2.5 }),
                    Builder(type, 3, 11, 1, 1, true).add("ht", k).done("flat [3, 11], default bounds ±1") };
            } else if constexpr (std::is_same_v<T, PReLU>) {
                // Slopes of both signs, drawn per channel: a slope indexed by the wrong channel shows.
                const auto slopes = [](test::NetworkBuilder b, const std::string& what) {
                    b.net.layers.back().init.kind = "uniform";
                    b.net.layers.back().init.low = -1.5;
                    b.net.layers.back().init.high = 1.5;
                    return b.done(what);
                };
                return { slopes(Builder(type, 2, 3, 7, 6).spread("s", 5).add("pr", PReLU { 5 }),
                             "5 slopes, planes of 42 (a float4 spans two channels)"),
                    Builder(type, 2, 3, 5, 6).spread("s", 4).add("pr", k).done("one slope, PyTorch's 0.25"),
                    slopes(Builder(type, 3, 11, 1, 1, true).add("pr", PReLU { 11 }), "flat [3, 11], 11 slopes"),
                    slopes(Builder(type, 2, 3, 4, 5).depth(3).spread3("s", 3).add("pr", PReLU { 3 }),
                        "volume [2, 3, 3, 4, 5], 3 slopes") };
            } else if constexpr (std::is_same_v<T, Flatten>) {
                return layoutCases(type, k);
            } else if constexpr (std::is_same_v<T, Linear>) {
                std::vector<Case> cases = {
                    Builder(type, 3, 37, 1, 1, true).add("fc", Linear { 7, true }).done("flat [3, 37]"),
                    Builder(type, 2, 3, 4, 5).add("f", Flatten {}).add("fc", Linear { 5, false }).done("after flatten")
                };
                for (Case& c : test::fixedTensorCasesFor(k)) // the last axis of other ranks
                    cases.push_back(std::move(c));
                return cases;
            } else if constexpr (isSoftmaxKind<T> || std::is_same_v<T, Reduce>) {
                return test::fixedReduceCasesFor(k); // fixed_cases_reduce.cpp
            } else if constexpr (std::is_same_v<T, Add>) {
                return {
                    Builder(type, 2, 3, 7, 9)
                        .spread("a", 5)
                        .spread("b", 5, { "input" })
                        .add("sum", k, { "a", "b" })
                        .done("two branches"),
                    Builder(type, 1, 3, 5, 6)
                        .spread("a", 3)
                        .spread("b", 3)
                        .add("sum", k, { "a", "input", "b", "a" })
                        .done("four inputs, one named twice"),
                };
            } else if constexpr (std::is_same_v<T, Mul>) {
                return {
                    Builder(type, 2, 4, 7, 5)
                        .spread("a", 4)
                        .add("g", GlobalAvgPool2d {})
                        .add("s", Sigmoid {})
                        .add("gated", k, { "a", "s" })
                        .done("squeeze-and-excitation gate second"),
                    Builder(type, 2, 4, 7, 5)
                        .add("g", GlobalAvgPool2d {})
                        .add("gated", k, { "g", "input" })
                        .done("the [N, C, 1, 1] gate first"),
                    Builder(type, 1, 3, 6, 7).spread("a", 3).add("sq", k, { "a", "a" }).done("same shape (a square)"),
                };
            } else if constexpr (std::is_same_v<T, Concat>) {
                return {
                    Builder(type, 2, 3, 7, 5)
                        .spread("a", 5)
                        .spread("b", 2, { "input" })
                        .add("cat", k, { "input", "a", "b" })
                        .done("3 + 5 + 2 channels"),
                    Builder(type, 1, 1, 9, 4).spread("a", 1).add("cat", k, { "a", "input" }).done("one channel each"),
                    Builder(type, 2, 3, 4, 5).spread("a", 3).add("cat", k, { "a" }).done("one input (DenseNet's)"),
                    Builder(type, 2, 3, 4, 5)
                        .spread("a", 3)
                        .add("cat", Concat { 2 }, { "a", "input", "a" })
                        .done("along H: 4 + 4 + 4 rows"),
                    Builder(type, 3, 2, 3, 5)
                        .spread("a", 2)
                        .add("cat", Concat { 0 }, { "input", "a" })
                        .done("along the batch: 3 + 3"),
                    Builder(type, 1, 1, 1, 1)
                        .dims({ 2, 6, 6 })
                        .add("t", Transpose { { 0, 2, 1 } })
                        .add("cat", Concat { -1 }, { "input", "t", "input" })
                        .add("r", Reshape { { 2, 6, 9, 2 } })
                        .add("cat2", Concat { -2 }, { "r", "r" })
                        .done("rank 3 along dim −1, then rank 4 along dim −2"),
                    Builder(type, 1, 1, 1, 1)
                        .dims({ 2, 3, 2, 2, 3, 2 })
                        .add("cat", Concat { 3 }, { "input", "input" })
                        .done("rank 6 along dim 3"),
                    Builder(type, 1, 1, 1, 1)
                        .dims({ 2, 3, 2, 4, 5 })
                        .add("cat", Concat { 4 }, { "input", "input" })
                        .done("a volume along W"),
                    Builder(type, 4, 9, 1, 1, true)
                        .add("cat", Concat { 1 }, { "input", "input" })
                        .done("flat features"),
                };
            } else if constexpr (std::is_same_v<T, Pad>) {
                Pad constant { { 1, 2, 0, 3 }, Pad::Mode::Constant, -0.5 };
                Pad reflect { { 2, 1, 3, 1 }, Pad::Mode::Reflect, 0 };
                Pad edge { { 6, 6, 8, 8 }, Pad::Mode::Reflect, 0 }; // the most PyTorch allows: size − 1
                Pad replicate { { 3, 0, 1, 4 }, Pad::Mode::Replicate, 0 };
                return { Builder(type, 2, 3, 7, 9).add("p", constant).done("constant −0.5"),
                    Builder(type, 2, 3, 7, 9).add("p", reflect).done("reflect"),
                    Builder(type, 1, 2, 7, 9).add("p", edge).done("reflect by size − 1"),
                    Builder(type, 1, 2, 5, 4).add("p", replicate).done("replicate") };
            } else if constexpr (std::is_same_v<T, Resize>) {
                return resizeCases(type);
            } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                return { Builder(type, 2, 6, 5, 7).add("x", ChannelShuffle { 2 }).done("groups 2 (ShuffleNet)"),
                    Builder(type, 1, 12, 3, 4).add("x", ChannelShuffle { 3 }).done("groups 3 of 12 channels"),
                    Builder(type, 2, 8, 3, 4).depth(3).add("x", ChannelShuffle { 4 }).done("groups 4, a volume"),
                    Builder(type, 1, 5, 2, 3).add("x", ChannelShuffle { 5 }).done("groups = channels (identity)") };
            } else if constexpr (std::is_same_v<T, Slice>) {
                return { Builder(type, 2, 6, 5, 7).add("x", Slice { 1, 1, 4 }).done("channels [1, 4)"),
                    Builder(type, 1, 3, 7, 6).add("x", Slice { 2, 2, 5 }).done("H [2, 5)"),
                    Builder(type, 2, 2, 4, 9).add("x", Slice { 3, 0, 3 }).done("W [0, 3)"),
                    Builder(type, 3, 2, 3, 3).add("x", Slice { 0, 1, 2 }).done("batch [1, 2)"),
                    Builder(type, 1, 2, 4, 3).depth(5).add("x", Slice { 2, 1, 4 }).done("D [1, 4) of a volume"),
                    Builder(type, 2, 10, 1, 1, true).add("x", Slice { 1, 3, 8 }).done("features [3, 8)") };
            } else if constexpr (std::is_same_v<T, Reshape> || std::is_same_v<T, Transpose>) {
                return layoutCases(type, k);
            } else if constexpr (std::is_same_v<T, Identity> || std::is_same_v<T, Dropout>) {
                return {
                    Builder(type, 2, 3, 5, 7).spread("s", 4).add("x", k).add("r", ReLU {}).done("between layers")
                };
            } else if constexpr (isVolumeKind<T>) {
                return test::fixedVolumeCasesFor(k);
            } else if constexpr (isNormKind<T>) {
                return test::fixedNormCasesFor(k);
            } else if constexpr (std::is_same_v<T, Matmul> || std::is_same_v<T, Gather>) {
                return test::fixedTensorCasesFor(k);
            } else {
                static_assert(dependent_false<T>, "cross-backend test: a layer kind has no case generator");
            }
        },
        kind);
}

// Networks with skips through fusable groups: a ResNet basic block with a 1×1 projection, a U-Net level.
std::vector<Case> graphCases()
{
    BatchNorm2d bn;
    ConvTranspose2d up;
    up.out_channels = 4;
    up.kernel_size = { 2, 2 };
    up.stride = { 2, 2 };
    return {
        Builder("graph", 2, 3, 9, 9)
            .add("c1", conv(6, 3, 2, Padding2d::symmetric(1, 1)))
            .add("bn1", bn)
            .add("r1", ReLU {})
            .add("c2", conv(6, 3, 1, Padding2d::symmetric(1, 1)))
            .add("bn2", bn)
            .add("proj", conv(6, 1, 2), { "input" })
            .add("pbn", bn)
            .add("sum", Add {}, { "bn2", "pbn" })
            .add("out", ReLU {})
            .done("basic block with a projection"),
        // Residual fusion's main case (compute/fusion.h): the add of the network's input and bn2 folds into c2, the
        // ReLU after it into c2's epilogue where the backend fuses it; 16 channels so that the Tensor Core paths run.
        Builder("graph", 2, 16, 10, 12)
            .add("c1", conv(16, 3, 1, Padding2d::symmetric(1, 1)))
            .add("bn1", bn)
            .add("r1", ReLU {})
            .add("c2", conv(16, 3, 1, Padding2d::symmetric(1, 1)))
            .add("bn2", bn)
            .add("sum", Add {}, { "input", "bn2" })
            .add("out", ReLU {})
            .done("basic block with an identity skip"),
        Builder("graph", 1, 3, 8, 8)
            .add("e1", conv(4, 3, 1, Padding2d::symmetric(1, 1)))
            .add("er", ReLU {})
            .add("down", MaxPool2d {})
            .add("mid", conv(8, 3, 1, Padding2d::symmetric(1, 1)))
            .add("mr", ReLU6 {})
            .add("up", up)
            .add("cat", Concat {}, { "er", "up" })
            .add("d1", conv(4, 3, 1, Padding2d::symmetric(1, 1)))
            .add("dr", ReLU {})
            .done("one U-Net level"),
    };
}

} // namespace

namespace convscope::test {

std::vector<NetworkCase> fixedCasesFor(const LayerSpec& kind) { return casesFor(kind); }
std::vector<NetworkCase> fixedGraphCases() { return graphCases(); }

} // namespace convscope::test
