// The cuda backend's non-convolution layers in the Tensor Core math modes' storage formats (tf32: FP32
// channels-last; fp16, bf16: FP16/BF16 channels-last; compute/storage_format.h): every such kind, on odd and
// vector-friendly channel counts, through the profiler against cpu.direct in FP32. Each layer's relL2 must stay within
// the bound the profiler states for the mode (compute/rounding_bound.h), and the layer must have run natively in the
// storage format — its note does not say it ran on FP32 copies. Outputs are poisoned with NaN before the pass, so an
// element a kernel forgets fails. Prints SKIPPED without a usable GPU.
#include "compute/backend_registry.h"
#include "compute/profiler.h"
#include "compute/storage_format.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <iostream>
#include <variant>

using namespace convscope;

namespace {

using StorageCase = test::NetworkCase;

// A small network under construction (test_support.h): this suite's input salt and weight seeds.
struct NetBuilder : test::NetworkBuilder {
    NetBuilder(const std::string& name, int64_t n, int64_t c, int64_t h, int64_t w, bool flat = false)
        : NetworkBuilder(name, n, c, h, w, flat, 13, 5)
    {
    }
};

MaxPool2d maxPool(Pair k, Pair stride, Padding2d pad, Pair dilation, bool ceil)
{
    MaxPool2d p;
    p.kernel_size = k;
    p.stride = stride;
    p.padding = pad;
    p.dilation = dilation;
    p.ceil_mode = ceil;
    return p;
}

AvgPool2d avgPool(Pair k, Pair stride, Padding2d pad, bool ceil, bool countPad, std::optional<int64_t> divisor = {})
{
    AvgPool2d p;
    p.kernel_size = k;
    p.stride = stride;
    p.padding = pad;
    p.ceil_mode = ceil;
    p.count_include_pad = countPad;
    p.divisor_override = divisor;
    return p;
}

Pad padOf(std::array<int64_t, 4> amounts, Pad::Mode mode, double value = 0)
{
    Pad p;
    p.padding = amounts;
    p.mode = mode;
    p.value = value;
    return p;
}

Linear linearOf(int64_t out, bool bias = true)
{
    Linear l;
    l.out_features = out;
    l.bias = bias;
    return l;
}

std::vector<StorageCase> storageCases()
{
    std::vector<StorageCase> cases;
    const Padding2d asym { Padding2d::Mode::Explicit, 0, 1, 1, 0 };
    // Channels: a whole number of 16-byte packs in every type (16, 24), of FP32 packs only (4·k), and odd (5, 3).
    for (const auto& [n, c, h, w] :
        std::vector<std::array<int64_t, 4>> { { 2, 16, 9, 7 }, { 3, 5, 6, 5 }, { 1, 24, 14, 13 }, { 2, 12, 8, 8 } }) {
        const std::string tag
            = std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
        LeakyReLU leaky;
        leaky.negative_slope = 0.2;
        ELU elu;
        elu.alpha = 0.7;
        Hardtanh ht;
        ht.min_val = -2.0;
        ht.max_val = 3.0;
        PReLU perChannel;
        perChannel.num_parameters = c;
        PReLU shared;
        cases.push_back(NetBuilder("act-" + tag, n, c, h, w)
                            .spread("s", c)
                            .add("relu", ReLU {}, { "s" })
                            .add("leaky", leaky, { "s" })
                            .add("sigmoid", Sigmoid {}, { "s" })
                            .add("tanh", Tanh {}, { "s" })
                            .add("elu", elu, { "s" })
                            .add("relu6", ReLU6 {}, { "s" })
                            .add("hardswish", Hardswish {}, { "s" })
                            .add("hardsigmoid", Hardsigmoid {}, { "s" })
                            .add("silu", SiLU {}, { "s" })
                            .add("hardtanh", ht, { "s" })
                            .add("prelu_c", perChannel, { "s" })
                            .add("prelu_1", shared, { "s" })
                            .add("bn", BatchNorm2d {}, { "s" })
                            .add("softmax", Softmax {}, { "s" })
                            .done("activations, batch norm, softmax"));
        cases.push_back(
            NetBuilder("pool-" + tag, n, c, h, w)
                .spread("s", c)
                .add("max2", maxPool({ 2, 2 }, { 2, 2 }, {}, { 1, 1 }, false), { "s" })
                .add("max3", maxPool({ 3, 3 }, { 2, 2 }, Padding2d::symmetric(1, 1), { 1, 1 }, true), { "s" })
                .add("maxdil", maxPool({ 3, 2 }, { 1, 2 }, asym, { 2, 1 }, false), { "s" })
                .add("avg3", avgPool({ 3, 3 }, { 2, 2 }, Padding2d::symmetric(1, 1), true, false), { "s" })
                .add("avgpad", avgPool({ 3, 2 }, { 2, 1 }, asym, false, true), { "s" })
                .add("avgdiv", avgPool({ 2, 3 }, { 2, 2 }, Padding2d::symmetric(1, 1), true, true, 3), { "s" })
                .add("avg2", avgPool({ 2, 2 }, { 2, 2 }, {}, false, true), { "s" })
                .add("gap", GlobalAvgPool2d {}, { "s" })
                .done("max and average pools, global average"));
        cases.push_back(NetBuilder("merge-" + tag, n, c, h, w)
                            .spread("s", c)
                            .add("r", ReLU {}, { "s" })
                            .add("t", Tanh {}, { "s" })
                            .add("add3", Add {}, { "s", "r", "t" })
                            .add("mul", Mul {}, { "s", "t" })
                            .add("gap", GlobalAvgPool2d {}, { "s" })
                            .add("gate", Sigmoid {}, { "gap" })
                            .add("mulgate", Mul {}, { "s", "gate" })
                            .add("gatemul", Mul {}, { "gate", "t" })
                            .add("cat", Concat {}, { "s", "r", "mulgate" })
                            .add("padc", padOf({ 1, 2, 0, 3 }, Pad::Mode::Constant, 0.5), { "cat" })
                            .add("padr", padOf({ 2, 1, 1, 2 }, Pad::Mode::Reflect), { "s" })
                            .add("pade", padOf({ 0, 3, 2, 1 }, Pad::Mode::Replicate), { "t" })
                            .done("add, mul (full and gate), concat, pad"));
        cases.push_back(NetBuilder("head-" + tag, n, c, h, w)
                            .spread("s", c)
                            .add("pool", maxPool({ 2, 2 }, { 2, 2 }, {}, { 1, 1 }, false), { "s" })
                            .add("flat", Flatten {}, { "pool" })
                            .add("fc1", linearOf(33), { "flat" })
                            .add("r", ReLU {}, { "fc1" })
                            .add("fc2", linearOf(10, false), { "r" })
                            .add("sm", Softmax {}, { "fc2" })
                            .done("flatten of channels-last, linear, softmax"));
    }
    // Linear layers on every path: one launch, split-K (≥ 2^20 weights), unaligned `in`, the tiled GEMM (> 8 rows), and
    // the tiled GEMM split along `in` (ResNet-50's classifier at batch 32; 1030 inputs in 13 slices of 80, the last
    // 70).
    cases.push_back(NetBuilder("fc-split", 8, 2048, 1, 1, true)
                        .add("fc", linearOf(1024), {})
                        .add("sm", Softmax {})
                        .done("2048→1024 at batch 8"));
    cases.push_back(NetBuilder("fc-odd", 3, 1030, 1, 1, true)
                        .add("fc", linearOf(1500), {})
                        .add("p", PReLU {})
                        .done("1030→1500 at batch 3"));
    cases.push_back(NetBuilder("fc-one", 1, 400, 1, 1, true)
                        .add("fc", linearOf(120), {})
                        .add("t", Tanh {})
                        .done("400→120 at batch 1"));
    cases.push_back(NetBuilder("fc-gemm", 12, 100, 1, 1, true)
                        .add("fc", linearOf(50), {})
                        .add("h", Hardswish {})
                        .done("100→50 at batch 12"));
    cases.push_back(
        NetBuilder("fc-gemm-split", 32, 2048, 1, 1, true).add("fc", linearOf(1000), {}).done("2048→1000 at batch 32"));
    cases.push_back(NetBuilder("fc-gemm-uneven", 20, 1030, 1, 1, true)
                        .add("fc", linearOf(70, false), {})
                        .add("r", ReLU {})
                        .done("1030→70 at batch 20"));
    // The Tensor Core path of every mode here (up to 32 rows, `in` a whole number of 16-byte packs; "fc-mma" in the
    // name: the test checks the note): a step cut short (1032 inputs) with outputs past the last warp's 16 (70) at 13
    // rows (two 8-row tiles), VGG-16's fc1 width split in 64 slices, and 17 rows (four tiles, the last with one row).
    cases.push_back(NetBuilder("fc-mma-rows", 13, 1032, 1, 1, true)
                        .add("fc", linearOf(70), {})
                        .add("r", ReLU {})
                        .done("1032→70 at batch 13"));
    cases.push_back(
        NetBuilder("fc-mma-wide", 5, 25088, 1, 1, true).add("fc", linearOf(48, false), {}).done("25088→48 at batch 5"));
    cases.push_back(
        NetBuilder("fc-mma-17", 17, 256, 1, 1, true).add("fc", linearOf(1000), {}).done("256→1000 at batch 17"));
    return cases;
}

bool isConv2d(const LayerSpec& spec) { return std::holds_alternative<Conv2d>(spec); }

} // namespace

TEST_CASE("cuda: non-convolution layers run natively in tf32, fp16 and bf16 storage within the rounding bound",
    "[gpu][cuda][storage]")
{
    const auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    int checked = 0;
    for (const MathMode mode : { MathMode::TF32, MathMode::FP16, MathMode::BF16 }) {
        ProfileOptions options;
        options.warmup = 0;
        options.repeat = 1;
        options.interleave = false;
        options.selections = { { "cuda", "direct", false } };
        options.session.math = mode;
        options.session.extra["poison_outputs"] = "1";
        for (const StorageCase& c : storageCases()) {
            INFO(c.name << " in " << mathModeName(mode));
            const RunResult run = profile(c.net, options);
            REQUIRE(run.selections.size() == 1);
            const SelectionResult& sr = run.selections[0];
            INFO(sr.failure);
            CHECK(sr.ok);
            if (!sr.ok || sr.layers.size() != c.net.layers.size())
                continue;
            for (size_t i = 0; i < sr.layers.size(); ++i) {
                const LayerResult& l = sr.layers[i];
                INFO("layer " << i << " (" << c.net.layers[i].name << "): relL2 " << l.error.relL2 << " bound "
                              << l.error.bound << " | " << l.note << " | " << l.error.note);
                CHECK(l.error.valid);
                CHECK(l.error.bound > 0);
                CHECK(l.error.relL2 <= l.error.bound);
                if (!isConv2d(c.net.layers[i].spec) && !std::holds_alternative<Flatten>(c.net.layers[i].spec)) {
                    CHECK(l.note.find("FP32 copies") == std::string::npos);
                    CHECK(l.note.find(std::string("native ") + dtypeName(gpuStorageFor(mode).dtype))
                        != std::string::npos);
                }
                if (std::holds_alternative<Linear>(c.net.layers[i].spec) && c.name.rfind("fc-mma", 0) == 0)
                    CHECK(l.note.find("Tensor Cores") != std::string::npos);
                ++checked;
            }
        }
    }
    std::cout << "cuda storage formats: " << checked << " layer outputs checked against cpu.direct FP32" << std::endl;
    CHECK(checked > 0);
}
