// The cudnn backend in the Tensor Core math modes (issue 20): tf32, fp16 and bf16 sessions store every tensor
// channels-last in FP32 / FP16 / BF16, and the layers cuDNN and cuBLAS have calls for run natively on that storage.
// Through the profiler against cpu.direct in FP32: every layer's relative L2 error stays within the rounding bound
// the profiler states for it (compute/rounding_bound.h), and no native kind's note says it ran on FP32 copies.
// conv2d runs a randomized sweep (odd channel counts, stride, dilation, padding, groups, with and without bias) on
// cudnn.auto racing both APIs, on auto restricted to the graph API (option cudnn_api=graph) and to the legacy API,
// and on one pinned legacy algorithm. Asymmetric-padded conv2d runs natively too (its pad step on the storage), and in
// fp16/bf16 conv_transpose2d, conv3d and conv_transpose3d (their pad and crop steps on the storage): every such
// convolution's note says it ran natively in the storage type. Without a usable cuDNN every case prints
// "SKIPPED: <reason>".
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "compute/storage_format.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <tuple>
#include <utility>
#include <variant>

using namespace convscope;

namespace {

const std::vector<MathMode> kModes = { MathMode::TF32, MathMode::FP16, MathMode::BF16 };

Layer layer(const std::string& name, LayerSpec spec, std::vector<std::string> inputs = {})
{
    Layer l { name, std::move(spec), std::move(inputs), {}, {}, {}, {}, {}, {} };
    l.init.kind = "uniform";
    l.init.seed = std::hash<std::string> {}(name) % 1000;
    return l;
}

bool nativeKind(const LayerSpec& s)
{
    return isConvolution(s) || std::holds_alternative<Linear>(s) || std::holds_alternative<ReLU>(s)
        || std::holds_alternative<Sigmoid>(s) || std::holds_alternative<Tanh>(s) || std::holds_alternative<ELU>(s)
        || std::holds_alternative<ReLU6>(s) || std::holds_alternative<SiLU>(s) || std::holds_alternative<MaxPool2d>(s)
        || std::holds_alternative<AvgPool2d>(s) || std::holds_alternative<GlobalAvgPool2d>(s)
        || std::holds_alternative<BatchNorm2d>(s) || std::holds_alternative<Softmax>(s)
        || std::holds_alternative<Add>(s) || std::holds_alternative<Mul>(s);
}

// Profiles `net` on the cudnn selections in `mode` against cpu.direct (FP32) and checks every layer.
void checkNative(Network net, MathMode mode, const std::vector<std::string>& algorithms, const std::string& what,
    const std::map<std::string, std::string>& extra = {})
{
    const ShapeReport shapes = inferShapes(net);
    INFO(what << " " << mathModeName(mode) << "  " << shapes.firstError());
    REQUIRE(shapes.ok());
    test::randomParameters(net, shapes, 1234);
    const Tensor input = test::randomTensor(shapes.input, 77);
    ProfileOptions opt;
    for (const auto& a : algorithms)
        opt.selections.push_back({ "cudnn", a, false });
    opt.warmup = 1;
    opt.repeat = 2;
    opt.session.math = mode;
    opt.session.extra = extra;
    opt.session.extra["poison_outputs"] = "1";
    const RunResult r = profile(net, input, opt);
    for (const auto& sel : r.selections) {
        INFO(sel.selection.str() << ": " << sel.failure);
        if (!sel.ok && sel.unsupported && sel.selection.algorithm != "auto") {
            // A pinned algorithm cuDNN does not run on this configuration is refused with cuDNN's reason.
            std::cout << "note: " << what << " " << mathModeName(mode) << ": " << sel.failure << "\n";
            CHECK(sel.failure.find("unsupported") != std::string::npos);
            continue;
        }
        REQUIRE(sel.ok);
        CHECK(sel.metadata.at("math").rfind(mathModeName(mode), 0) == 0);
        for (size_t i = 0; i < net.layers.size(); ++i) {
            const LayerResult& lr = sel.layers[i];
            INFO("layer " << i << " (" << net.layers[i].name << "): " << lr.note << "  relL2 " << lr.error.relL2
                          << ", bound " << lr.error.bound);
            REQUIRE(lr.error.valid);
            CHECK(lr.error.bound > 0);
            CHECK(lr.error.relL2 <= lr.error.bound);
            if (nativeKind(net.layers[i].spec) && !isConvolution(net.layers[i].spec))
                CHECK(lr.note.find("FP32 copies") == std::string::npos);
            // What ran, in the note: "native fp16 NHWC (CUDNN_DATA_HALF tensors, ...)" (NDHWC for volumes). Under auto
            // every convolution runs natively; a pinned conv3d algorithm cuDNN refuses on NDHWC storage runs on the
            // FP32 copies instead, and its note says that, never both.
            if (isConvolution(net.layers[i].spec)) {
                const bool nat
                    = lr.note.find(std::string("native ") + dtypeName(gpuStorageFor(mode).dtype)) != std::string::npos;
                const bool copies = lr.note.find("FP32 copies") != std::string::npos;
                // tf32 keeps conv_transpose2d and the 3-D convolutions on the copies (storage_ops.cpp says why).
                const LayerSpec& k = net.layers[i].spec;
                const bool tf32Copies = mode == MathMode::TF32 && !std::holds_alternative<Conv2d>(k);
                if (tf32Copies)
                    CHECK(copies);
                else if (sel.selection.algorithm == "auto" || !std::holds_alternative<Conv3d>(k))
                    CHECK(nat);
                CHECK(nat != copies);
            }
        }
    }
}

} // namespace

TEST_CASE("cudnn tf32/fp16/bf16: conv2d sweep natively on channels-last storage, both APIs, vs cpu.direct",
    "[gpu][cudnn][conv2d][storage]")
{
    if (!test::backendOrSkip("cudnn"))
        return;
    const uint64_t seed = 20;
    std::cout << "cudnn storage sweep seed " << seed << "\n";
    test::Rng rng(seed);
    for (int t = 0; t < 8; ++t) {
        Conv2d c;
        const int64_t groups = t % 4 == 3 ? rng(2, 3) : 1;
        const int64_t cin = groups * rng(1, 9); // odd counts too (3, 5, 7, ...)
        c.out_channels = groups * rng(1, 12);
        c.groups = groups;
        const int64_t k = rng(1, 3) * 2 - 1; // 1, 3, 5
        c.kernel_size = { k, t % 2 ? k : rng(1, 3) };
        c.stride = { rng(1, 2), rng(1, 2) };
        c.dilation = { t % 3 == 2 ? 2 : 1, 1 };
        c.padding = Padding2d::symmetric(rng(0, 2), rng(0, 2));
        c.bias = t % 2 == 0;
        const Shape in = Shape::nchw(rng(1, 3), cin, rng(9, 21), rng(9, 21));
        Network net = test::oneLayer(in, c);
        net.layers[0].init.kind = "uniform";
        const std::string what = "conv2d case " + std::to_string(t) + " in " + in.str() + " k" + std::to_string(k)
            + " g" + std::to_string(groups);
        for (MathMode m : kModes) {
            checkNative(net, m, { "auto", "implicit_precomp_gemm" }, what);
            checkNative(net, m, { "auto" }, what + " (graph API)", { { "cudnn_api", "graph" } });
            checkNative(net, m, { "auto" }, what + " (legacy API)", { { "cudnn_api", "legacy" } });
        }
    }
}

TEST_CASE("cudnn tf32/fp16/bf16: every native kind in one network, vs cpu.direct", "[gpu][cudnn][storage]")
{
    if (!test::backendOrSkip("cudnn"))
        return;
    Network net;
    net.name = "native-kinds";
    net.input = { 2, 5, 20, 18, false, "random:3" };
    Conv2d c1;
    c1.out_channels = 16;
    c1.padding = Padding2d::symmetric(1, 1);
    Conv2d c2 = c1;
    c2.bias = false;
    Conv2d c3 = c1;
    c3.kernel_size = { 1, 1 };
    c3.padding = {};
    net.layers = { layer("c1", c1), layer("bn", BatchNorm2d {}), layer("relu", ReLU {}), layer("max", MaxPool2d {}),
        layer("c2", c2), layer("sig", Sigmoid {}), layer("c3", c3, { "sig" }), layer("tanh", Tanh {}, { "c2" }),
        layer("elu", ELU { 0.7 }), layer("relu6", ReLU6 {}), layer("silu", SiLU {}),
        layer("add", Add {}, { "silu", "sig", "tanh" }), layer("mul", Mul {}, { "add", "elu" }),
        layer("avg", AvgPool2d { { 3, 3 }, Pair { 1, 1 }, Padding2d::symmetric(1, 1), false, false, std::nullopt }),
        layer("gap", GlobalAvgPool2d {}), layer("flat", Flatten {}), layer("fc", Linear { 7, true }),
        layer("softmax", Softmax {}) };
    for (MathMode m : kModes)
        checkNative(net, m, { "auto" }, "native kinds");
}

namespace {

// conv2d 5→16 (3×3, padding 1) on [2, 5, 12, 10], then the layers `tail` names (each reads the layer above unless
// it names its inputs): one kind at a time, so a failure names the kind.
Network kindNet(std::vector<Layer> tail)
{
    Network net;
    net.name = "native-kind";
    net.input = { 2, 5, 12, 10, false, "random:3" };
    Conv2d c;
    c.out_channels = 16;
    c.padding = Padding2d::symmetric(1, 1);
    net.layers = { layer("c", c) };
    for (auto& l : tail)
        net.layers.push_back(std::move(l));
    return net;
}

void checkKind(const std::vector<Layer>& tail, const std::string& what)
{
    if (!test::backendOrSkip("cudnn"))
        return;
    for (MathMode m : kModes) {
        checkNative(kindNet(tail), m, { "auto" }, what);
        // The graph API's plan never fuses the bias: the conv2d's bias runs as our vectorized pass (16 channels).
        checkNative(kindNet(tail), m, { "auto" }, what + " (graph API)", { { "cudnn_api", "graph" } });
    }
}

} // namespace

TEST_CASE("cudnn storage kind: batchnorm2d", "[gpu][cudnn][storage]")
{
    checkKind({ layer("bn", BatchNorm2d {}) }, "bn");
}
TEST_CASE("cudnn storage kind: relu", "[gpu][cudnn][storage]") { checkKind({ layer("a", ReLU {}) }, "relu"); }
TEST_CASE("cudnn storage kind: sigmoid", "[gpu][cudnn][storage]") { checkKind({ layer("a", Sigmoid {}) }, "sigmoid"); }
TEST_CASE("cudnn storage kind: tanh", "[gpu][cudnn][storage]") { checkKind({ layer("a", Tanh {}) }, "tanh"); }
TEST_CASE("cudnn storage kind: elu", "[gpu][cudnn][storage]") { checkKind({ layer("a", ELU { 0.7 }) }, "elu"); }
TEST_CASE("cudnn storage kind: relu6", "[gpu][cudnn][storage]") { checkKind({ layer("a", ReLU6 {}) }, "relu6"); }
TEST_CASE("cudnn storage kind: silu", "[gpu][cudnn][storage]") { checkKind({ layer("a", SiLU {}) }, "silu"); }
TEST_CASE("cudnn storage kind: maxpool2d", "[gpu][cudnn][storage]") { checkKind({ layer("p", MaxPool2d {}) }, "max"); }
TEST_CASE("cudnn storage kind: avgpool2d", "[gpu][cudnn][storage]")
{
    checkKind(
        { layer("p", AvgPool2d { { 3, 3 }, Pair { 1, 1 }, Padding2d::symmetric(1, 1), false, false, std::nullopt }) },
        "avg");
}
TEST_CASE("cudnn storage kind: global average pool", "[gpu][cudnn][storage]")
{
    checkKind({ layer("g", GlobalAvgPool2d {}) }, "gap");
}
TEST_CASE("cudnn storage kind: linear", "[gpu][cudnn][storage]")
{
    checkKind({ layer("g", GlobalAvgPool2d {}), layer("f", Flatten {}), layer("fc", Linear { 7, true }) }, "linear");
}
TEST_CASE("cudnn storage kind: softmax", "[gpu][cudnn][storage]") { checkKind({ layer("s", Softmax {}) }, "softmax"); }
TEST_CASE("cudnn storage kind: add of three", "[gpu][cudnn][storage]")
{
    checkKind({ layer("a", ReLU {}), layer("b", Tanh {}, { "c" }), layer("add", Add {}, { "a", "b", "c" }) }, "add");
}
TEST_CASE("cudnn storage kind: add of two", "[gpu][cudnn][storage]")
{
    checkKind({ layer("a", ReLU {}), layer("add", Add {}, { "a", "c" }) }, "add2");
}
TEST_CASE("cudnn storage kind: mul", "[gpu][cudnn][storage]")
{
    checkKind({ layer("a", Sigmoid {}), layer("mul", Mul {}, { "a", "c" }) }, "mul");
}

namespace {

// A one-layer network on a volume input [n, c, d, h, w].
Network volumeNet(const Shape& in, LayerSpec spec)
{
    Network net = test::oneLayer(in, std::move(spec));
    net.input.depth = in.d;
    net.layers[0].init.kind = "uniform";
    return net;
}

} // namespace

TEST_CASE("cudnn tf32/fp16/bf16: asymmetric-padded conv2d natively (pad step on the storage), vs cpu.direct",
    "[gpu][cudnn][conv2d][storage]")
{
    if (!test::backendOrSkip("cudnn"))
        return;
    Conv2d c;
    c.out_channels = 16;
    c.padding = test::explicitPadding(1, 0, 2, 1); // "same"-like: one row more at the top, one column at the left
    Conv2d s2 = c;
    s2.stride = { 2, 2 };
    s2.padding = Padding2d { Padding2d::Mode::Same };
    s2.bias = false;
    for (MathMode m : kModes) {
        for (const auto& [spec, what] : { std::pair { c, "asymmetric 3×3" }, std::pair { s2, "same stride 2" } }) {
            Network net = test::oneLayer(Shape::nchw(2, 8, 13, 10), spec);
            net.layers[0].init.kind = "uniform";
            checkNative(net, m, { "auto", "implicit_precomp_gemm" }, what);
            checkNative(net, m, { "auto" }, std::string(what) + " (graph API)", { { "cudnn_api", "graph" } });
        }
    }
}

TEST_CASE(
    "cudnn fp16/bf16: conv_transpose2d natively on the storage (crop step and bias), tf32 on copies, vs cpu.direct",
    "[gpu][cudnn][conv_transpose2d][storage]")
{
    if (!test::backendOrSkip("cudnn"))
        return;
    ConvTranspose2d crop; // output_padding: cuDNN writes the full output, our channels-last crop adds the bias
    crop.out_channels = 16;
    crop.stride = { 2, 2 };
    crop.padding = Padding2d::symmetric(1, 1);
    crop.output_padding = { 1, 1 };
    ConvTranspose2d up; // U-Net's upsampling: cuDNN writes the output itself, the bias is our pass
    up.out_channels = 8;
    up.kernel_size = { 4, 4 };
    up.stride = { 2, 2 };
    up.padding = Padding2d::symmetric(1, 1);
    up.groups = 2;
    ConvTranspose2d odd = up; // odd channel counts: the unvectorized paths
    odd.out_channels = 5;
    odd.groups = 1;
    odd.bias = false;
    for (MathMode m : kModes)
        for (const auto& [spec, in, what] : { std::tuple { crop, Shape::nchw(2, 8, 7, 9), "stride 2 output_padding 1" },
                 std::tuple { up, Shape::nchw(1, 16, 8, 8), "k4 stride 2 groups 2" },
                 std::tuple { odd, Shape::nchw(2, 3, 5, 6), "3→5 channels, no bias" } }) {
            Network net = test::oneLayer(in, spec);
            net.layers[0].init.kind = "uniform";
            checkNative(net, m, { "auto", "implicit_gemm" }, what);
        }
}

TEST_CASE("cudnn fp16/bf16: conv3d and conv_transpose3d natively on NDHWC storage, tf32 on copies, vs cpu.direct",
    "[gpu][cudnn][conv3d][storage]")
{
    if (!test::backendOrSkip("cudnn"))
        return;
    // Symmetric padding with a bias (cuDNN's fused call when implicit_precomp_gemm wins, else our bias pass); the
    // lecture encoder's "same" stride 2 (the pad step on the storage); an odd channel count without bias.
    const Conv3d sym = test::conv3dSpec(16, { 3, 3, 3 }, { 1, 1, 1 }, Padding3d::symmetric(1, 1, 1));
    const Conv3d same = test::conv3dSpec(8, { 3, 3, 3 }, { 2, 2, 2 }, { Padding3d::Mode::Same });
    Conv3d odd = test::conv3dSpec(5, { 2, 3, 1 }, { 1, 2, 1 }, test::explicitPadding3d(1, 0, 1, 1, 0, 0));
    odd.bias = false;
    ConvTranspose3d up; // the decoder's upsampling
    up.out_channels = 8;
    up.kernel_size = { 4, 4, 4 };
    up.stride = { 2, 2, 2 };
    up.padding = Padding3d::symmetric(1, 1, 1);
    ConvTranspose3d crop; // output_padding and an odd channel count
    crop.out_channels = 3;
    crop.stride = { 2, 2, 2 };
    crop.padding = Padding3d::symmetric(1, 1, 1);
    crop.output_padding = { 1, 1, 1 };
    const std::vector<std::tuple<LayerSpec, Shape, std::string>> cases = {
        { sym, Shape::ncdhw(2, 8, 6, 7, 5), "conv3d 8→16 3×3×3 pad 1" },
        { same, Shape::ncdhw(1, 16, 8, 9, 10), "conv3d 16→8 same stride 2" },
        { odd, Shape::ncdhw(2, 3, 5, 6, 4), "conv3d 3→5 asymmetric, no bias" },
        { up, Shape::ncdhw(1, 16, 4, 5, 4), "conv_transpose3d 16→8 k4 stride 2" },
        { crop, Shape::ncdhw(2, 4, 3, 4, 5), "conv_transpose3d 4→3 output_padding 1" },
    };
    for (MathMode m : kModes)
        for (const auto& [spec, in, what] : cases)
            checkNative(volumeNet(in, spec), m, { "auto", "implicit_gemm" }, what);
}

TEST_CASE("cudnn fp16: option native_conv=0 leaves the convolutions on FP32 copies, and the notes say so",
    "[gpu][cudnn][storage]")
{
    if (!test::backendOrSkip("cudnn"))
        return;
    ConvTranspose2d up;
    up.out_channels = 8;
    up.kernel_size = { 4, 4 };
    up.stride = { 2, 2 };
    up.padding = Padding2d::symmetric(1, 1);
    Network net = test::oneLayer(Shape::nchw(1, 16, 8, 8), up);
    net.layers[0].init.kind = "uniform";
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    test::randomParameters(net, shapes, 1234);
    ProfileOptions opt;
    opt.selections = { { "cudnn", "auto", false } };
    opt.warmup = 1;
    opt.repeat = 2;
    opt.session.math = MathMode::FP16;
    opt.session.extra["native_conv"] = "0";
    const RunResult r = profile(net, test::randomTensor(shapes.input, 77), opt);
    REQUIRE(r.selections.size() == 1);
    const SelectionResult& sel = r.selections[0];
    INFO(sel.failure);
    REQUIRE(sel.ok);
    const LayerResult& lr = sel.layers[0];
    INFO(lr.note);
    CHECK(lr.note.find("FP32 copies") != std::string::npos);
    CHECK(lr.note.find("native fp16") == std::string::npos);
    CHECK(lr.error.relL2 <= lr.error.bound);
}
