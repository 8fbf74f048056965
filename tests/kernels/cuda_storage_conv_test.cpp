// The cuda backend's convolutions and 3-D kinds in the Tensor Core math modes' storage formats (tf32: FP32
// channels-last; fp16, bf16: FP16/BF16 channels-last; compute/storage_format.h): depthwise and grouped conv2d (what the
// Tensor Core kernel refuses; MobileNet's blocks), conv_transpose2d with strides, dilation, output_padding, groups
// and an asymmetric crop, and every 3-D kind, on channel counts that take the 16-byte, the 4-channel and the
// one-channel forms of stored_conv_kernel.cuh. Through the profiler against cpu.direct in FP32, under cuda.direct and
// cuda.tensor_core, unfused and "+fused" (a fused activation in the storage-format conv's epilogue): every layer's
// relL2 stays within the rounding bound the profiler states, no layer ran on FP32 copies, and (unfused) each layer's
// note says it ran a native kernel in the format or the Tensor Core kernel. Outputs are poisoned with NaN before the
// pass, so an element a kernel forgets fails. Prints SKIPPED without a usable GPU.
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

using ConvCase = test::NetworkCase;

// A small network under construction (test_support.h): this suite's input salt and weight seeds; d > 0 makes the
// input a volume.
struct Net : test::NetworkBuilder {
    Net(const std::string& name, int64_t n, int64_t c, int64_t h, int64_t w, int64_t d = 0)
        : NetworkBuilder(name, n, c, h, w, false, 17, 23)
    {
        depth(d);
    }
};

Conv2d conv(int64_t out, Pair k, Pair stride, Padding2d pad, Pair dilation, int64_t groups)
{
    Conv2d c;
    c.out_channels = out;
    c.kernel_size = k;
    c.stride = stride;
    c.padding = pad;
    c.dilation = dilation;
    c.groups = groups;
    return c;
}

ConvTranspose3d convT3(
    int64_t out, Triple k, Triple stride, Padding3d pad, Triple outPad, Triple dilation, int64_t groups)
{
    ConvTranspose3d c;
    c.out_channels = out;
    c.kernel_size = k;
    c.stride = stride;
    c.padding = pad;
    c.output_padding = outPad;
    c.dilation = dilation;
    c.groups = groups;
    return c;
}

std::vector<ConvCase> convCases()
{
    std::vector<ConvCase> cases;
    const Padding2d same1 = Padding2d::symmetric(1, 1);
    // 16 channels: 16-byte packs in every type; 12: FP32 packs only; 5: one channel a thread.
    for (const int64_t c : { 16, 12, 5 }) {
        const std::string tag = std::to_string(c) + "ch";
        cases.push_back(Net("mobilenet-" + tag, 2, c, 13, 11)
                            .add("expand", conv(c, { 1, 1 }, { 1, 1 }, {}, { 1, 1 }, 1))
                            .add("bn1", BatchNorm2d {})
                            .add("r1", ReLU {})
                            .add("dw", conv(c, { 3, 3 }, { 1, 1 }, same1, { 1, 1 }, c))
                            .add("bn2", BatchNorm2d {})
                            .add("r2", ReLU6 {})
                            .add("dw2", conv(c, { 3, 3 }, { 2, 2 }, test::explicitPadding(0, 1, 1, 0), { 1, 1 }, c))
                            .add("dw5", conv(c, { 5, 3 }, { 1, 2 }, test::explicitPadding(4, 3, 1, 2), { 2, 1 }, c))
                            .add("mult2", conv(2 * c, { 3, 3 }, { 1, 1 }, same1, { 1, 1 }, c))
                            .add("mult4", conv(4 * c, { 3, 3 }, { 2, 1 }, same1, { 1, 1 }, c), { "dw5" })
                            .add("t", Tanh {})
                            .done("depthwise (channel multipliers 1, 2, 4), stride, dilation, asymmetric padding"));
        cases.push_back(Net("upsample-" + tag, 2, c, 5, 6)
                            .add("up", test::convTranspose2dSpec(c, { 3, 3 }, { 2, 2 }, same1, { 1, 1 }, { 1, 1 }, 1))
                            .add("dwup", test::convTranspose2dSpec(c, { 4, 4 }, { 2, 2 }, same1, { 0, 0 }, { 1, 1 }, c))
                            .add("odd",
                                test::convTranspose2dSpec(
                                    3, { 2, 3 }, { 3, 2 }, test::explicitPadding(1, 0, 0, 2), { 2, 1 }, { 1, 2 }, 1))
                            .done("conv_transpose2d: stride 2 output_padding 1, depthwise k4 s2, strides 3,2 "
                                  "dilation 1,2 output_padding 2,1 asymmetric crop"));
    }
    // Groups whose outputs per group take the 4-channel form (24 / 3 = 8) or the one-channel form (12 / 4 = 3).
    cases.push_back(
        Net("grouped", 2, 12, 10, 9)
            .add("g3", conv(24, { 3, 3 }, { 2, 2 }, test::explicitPadding(1, 0, 2, 1), { 1, 1 }, 3))
            .add("r", ReLU {})
            .add("g4", conv(12, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(2, 2), { 2, 2 }, 4))
            .add("dense", conv(8, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1))
            .add("tg",
                test::convTranspose2dSpec(8, { 4, 4 }, { 2, 2 }, Padding2d::symmetric(1, 1), { 0, 0 }, { 1, 1 }, 2))
            .done("grouped conv2d and conv_transpose2d"));
    // Volumes: every 3-D kind, 8 channels (packs) and 3 (one channel a thread).
    for (const int64_t c : { 8, 3 }) {
        MaxPool3d mp;
        mp.kernel_size = { 3, 3, 3 };
        mp.stride = Triple { 2, 2, 2 };
        mp.padding = Padding3d::symmetric(1, 1, 1);
        mp.ceil_mode = true;
        MaxPool3d mpd;
        mpd.kernel_size = { 2, 3, 2 };
        mpd.dilation = { 2, 1, 2 };
        AvgPool3d ap;
        ap.kernel_size = { 3, 3, 3 };
        ap.stride = Triple { 2, 2, 2 };
        ap.padding = Padding3d::symmetric(1, 1, 1);
        ap.count_include_pad = false;
        ap.ceil_mode = true;
        AvgPool3d apc = ap;
        apc.count_include_pad = true;
        AvgPool3d apd;
        apd.divisor_override = 3;
        const std::string tag = std::to_string(c) + "ch";
        cases.push_back(
            Net("volume-" + tag, 2, c, 7, 6, 5)
                .add("c",
                    test::conv3dSpec(
                        8, { 3, 3, 3 }, { 1, 1, 1 }, { Padding3d::Mode::Explicit, 1, 0, 2, 1, 0, 2 }, { 1, 1, 1 }, 1))
                .add("bn", BatchNorm3d {})
                .add("r", ReLU {})
                .add("dw", test::conv3dSpec(8, { 3, 3, 3 }, { 1, 2, 1 }, Padding3d::symmetric(1, 1, 1), { 1, 1, 2 }, 8))
                .add("g", test::conv3dSpec(6, { 3, 2, 3 }, { 2, 1, 2 }, Padding3d::symmetric(2, 1, 2), { 2, 2, 1 }, 2),
                    { "r" })
                .add("up", convT3(4, { 2, 2, 2 }, { 2, 2, 2 }, {}, { 0, 0, 0 }, { 1, 1, 1 }, 1), { "r" })
                .add("upodd",
                    convT3(c, { 2, 3, 3 }, { 3, 1, 2 }, { Padding3d::Mode::Explicit, 1, 0, 0, 2, 1, 1 }, { 2, 0, 1 },
                        { 1, 2, 2 }, 1),
                    { "r" })
                .add("updw",
                    convT3(8, { 3, 3, 3 }, { 2, 2, 2 }, Padding3d::symmetric(1, 1, 1), { 1, 1, 1 }, { 1, 1, 1 }, 8),
                    { "r" })
                .add("max", mp, { "r" })
                .add("maxdil", mpd, { "r" })
                .add("avg", ap, { "r" })
                .add("avgpad", apc, { "r" })
                .add("avgdiv", apd, { "r" })
                .add("gap", GlobalAvgPool3d {}, { "r" })
                .done("conv3d (dense, depthwise, grouped), conv_transpose3d, pools, batch norm"));
    }
    return cases;
}

} // namespace

TEST_CASE("cuda: grouped, depthwise, transposed and 3-D convolutions and the 3-D pools run natively in tf32, fp16 and "
          "bf16 storage within the rounding bound",
    "[gpu][cuda][storage]")
{
    const auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    int checked = 0;
    for (const MathMode mode : { MathMode::TF32, MathMode::FP16, MathMode::BF16 }) {
        const std::string native = std::string("native ") + dtypeName(gpuStorageFor(mode).dtype);
        ProfileOptions options;
        options.warmup = 0;
        options.repeat = 1;
        options.interleave = false;
        for (const char* algorithm : { "direct", "tensor_core" })
            for (bool fused : { false, true })
                options.selections.push_back({ "cuda", algorithm, fused });
        options.session.math = mode;
        options.session.extra["poison_outputs"] = "1";
        for (const ConvCase& c : convCases()) {
            INFO(c.name << " in " << mathModeName(mode));
            const RunResult run = profile(c.net, options);
            REQUIRE(run.selections.size() == options.selections.size());
            for (const SelectionResult& sr : run.selections) {
                INFO(sr.selection.str() << ": " << sr.failure);
                CHECK(sr.ok);
                if (!sr.ok || sr.layers.size() != c.net.layers.size())
                    continue;
                for (size_t i = 0; i < sr.layers.size(); ++i) {
                    const LayerResult& l = sr.layers[i];
                    INFO("layer " << i << " (" << c.net.layers[i].name << "): relL2 " << l.error.relL2 << " bound "
                                  << l.error.bound << " | " << l.note << " | " << l.error.note);
                    CHECK(l.note.find("FP32 copies") == std::string::npos);
                    // Every layer runs in the storage format: the stored kernels say "native <dtype>", the Tensor
                    // Core convolution names its instruction (mma.sync, or wgmma on sm_90).
                    if (!sr.selection.fused)
                        CHECK((l.note.find(native) != std::string::npos || l.note.find("mma.sync") != std::string::npos
                            || l.note.find("wgmma") != std::string::npos));
                    if (!l.error.valid) {
                        CHECK(sr.selection.fused); // only a layer folded away by +fused has no output
                        continue;
                    }
                    CHECK(l.error.bound > 0);
                    CHECK(l.error.relL2 <= l.error.bound);
                    ++checked;
                }
            }
        }
    }
    std::cout << "cuda storage-format convolutions: " << checked << " layer outputs checked against cpu.direct FP32"
              << std::endl;
    CHECK(checked > 0);
}
