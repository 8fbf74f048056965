// Residual fusion (compute/fusion.h) on the GPU backends: a block whose 3×3 conv (batch norm folded) is added to a
// skip made by an earlier 1×1 conv and followed by a ReLU runs as one conv reading the skip, on every conv algorithm
// of cuda (FP32: direct, tiled, implicit_gemm with its pipelined and split-K tiles, winograd, fft, the tiny and
// few-channel kernels; tensor_core in tf32, fp16 and bf16 on the mma.sync, wgmma and TMA kernels, the transposed tile
// and split K) and of cudnn (its fused call's z operand, else an add in the layer), in every math mode. Each layer's
// output is checked against FP32 cpu.direct as the cross-backend test checks it (within 1e-4, 5e-3 for Winograd, plus
// the mode's rounding bound), the unfused selection beside it, and the fused one must have folded the add.
#include "compute/profiler.h"
#include "compute/storage_format.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <iostream>

using namespace convscope;

namespace {

struct Block {
    std::string what;
    int64_t n, c, h, w, k;
    int64_t groups = 1; // of the 3×3 conv
    bool skipInRing = false; // cuda.tensor_core's note must say the TMA kernel copied the skip into its ring
};

// 0 skip (1×1 C→K of the input), 1 c (3×3 C→K of the input), 2 bn, 3 sum (skip + bn), 4 out (ReLU).
Network blockNetwork(const Block& b)
{
    test::NetworkBuilder nb("residual block", b.n, b.c, b.h, b.w, false, 9, 700);
    Conv2d skip;
    skip.out_channels = b.k;
    skip.kernel_size = { 1, 1 };
    Conv2d c;
    c.out_channels = b.k;
    c.padding = Padding2d::symmetric(1, 1);
    c.bias = false;
    c.groups = b.groups;
    return nb.add("skip", skip, { "input" })
        .add("c", c, { "input" })
        .add("bn", BatchNorm2d {})
        .add("sum", Add {}, { "skip", "bn" })
        .add("out", ReLU {})
        .net;
}

double toleranceFor(const SelectionResult& sr, size_t layer)
{
    const std::string& note = sr.layers[layer].note;
    const bool winograd
        = sr.selection.algorithm.find("winograd") != std::string::npos || note.find("winograd") != std::string::npos;
    return winograd ? 5e-3 : 1e-4;
}

void checkBlocks(const std::string& backendName, const std::vector<std::string>& algorithms,
    const std::vector<Block>& blocks, const std::vector<MathMode>& modes, std::map<std::string, std::string> extra = {})
{
    auto backend = test::backendOrSkip(backendName);
    if (!backend)
        return;
    REQUIRE(backend->fusesResidual());
    for (const MathMode math : modes)
        for (const Block& b : blocks) {
            const Network net = blockNetwork(b);
            ProfileOptions opt;
            opt.warmup = 0;
            opt.repeat = 1;
            opt.interleave = false;
            opt.session.math = math;
            opt.session.extra = extra;
            opt.session.extra["poison_outputs"] = "1";
            for (const auto& a : algorithms)
                for (bool fused : { false, true })
                    opt.selections.push_back({ backendName, a, fused });
            const RunResult r = profile(net, opt);
            for (const SelectionResult& sr : r.selections) {
                INFO(b.what << " on " << sr.selection.str() << " in " << mathModeName(math) << ": " << sr.failure);
                if (!sr.ok && sr.unsupported) {
                    std::cout << "refused, skipped: " << b.what << " on " << sr.selection.str() << " in "
                              << mathModeName(math) << ": " << sr.failure << "\n";
                    continue;
                }
                REQUIRE(sr.ok);
                REQUIRE(sr.layers.size() == net.layers.size());
                if (sr.selection.fused) {
                    CHECK(sr.layers[3].note.find("fused: add (skip from layer 0 (skip)) folded into layer 1 (c)")
                        != std::string::npos);
                    CHECK(sr.layers[1].note.find("add layer 3 (sum)") != std::string::npos);
                    if (b.skipInRing)
                        CHECK(sr.layers[1].note.find("skip's tile copied by TMA into the ring") != std::string::npos);
                }
                for (size_t i = 0; i < net.layers.size(); ++i) {
                    const ErrorMetrics& m = sr.layers[i].error;
                    const bool folded = sr.selection.fused && (i == 1 || i == 2 || i == 3);
                    INFO("layer " << i << " (" << net.layers[i].name << "): relL2 " << m.relL2 << " bound " << m.bound
                                  << " " << m.note << " | " << sr.layers[i].note << " | " << sr.layers[1].note);
                    CHECK(m.valid == !folded);
                    if (m.valid)
                        CHECK(m.relL2 <= toleranceFor(sr, folded ? 1 : i) + m.bound);
                }
            }
        }
}

const std::vector<MathMode> kEveryMode { MathMode::FP32, MathMode::TF32, MathMode::FP16, MathMode::BF16 };

} // namespace

TEST_CASE("cuda residual fusion: every FP32 conv algorithm's epilogue adds the skip", "[gpu][cuda][fusion]")
{
    checkBlocks("cuda", { "direct", "tiled", "implicit_gemm", "winograd", "fft" },
        {
            { "tiny: 4 -> 6 at 5x7", 1, 4, 5, 7, 6 }, // the tiny-layer kernel
            { "few channels: 3 -> 16 at 61x68, batch 2", 2, 3, 61, 68, 16 }, // the stem kernel (4 outputs a thread)
            { "16 -> 24 at 33x29, batch 3", 3, 16, 33, 29, 24 },
            { "128 -> 128 at 7x7 (split K)", 2, 128, 7, 7, 128 },
        },
        { MathMode::FP32 });
    // The implicit GEMM's tiles and its split-K reduction, forced.
    checkBlocks("cuda", { "implicit_gemm" }, { { "32 -> 40 at 20x20", 2, 32, 20, 20, 40 } }, { MathMode::FP32 },
        { { "igemm_splits", "4" } });
}

TEST_CASE("cuda residual fusion: the Tensor Core kernels' epilogues, every storage format", "[gpu][cuda][fusion]")
{
    const std::vector<Block> blocks {
        { "12 -> 20 at 10x10 (C not a multiple of the piece)", 2, 12, 10, 10, 20 },
        { "16 -> 64 at 12x12, batch 8", 8, 16, 12, 12, 64 },
        { "256 -> 256 at 14x14 (split K)", 1, 256, 14, 14, 256 },
        { "64 -> 8 at 64x128, batch 8 (TMA, several work items a block)", 8, 64, 64, 128, 8 },
        { "128 -> 256 at 16x16, batch 2 (TMA, 16-byte epilogue)", 2, 128, 16, 16, 256 },
        { "128 -> 96 at 30x100, batch 5 (window tiles)", 5, 128, 30, 100, 96 },
        { "64 -> 40 at 140x256 (transposed tile, 16-byte stores)", 1, 64, 140, 256, 40 },
        { "128 -> 36 at 50x200, batch 3 (transposed tile, one-value stores)", 3, 128, 50, 200, 36 },
        { "3 -> 64 at 36x150, batch 2 (the fp16 / bf16 stem kernel, 16-byte stores)", 2, 3, 36, 150, 64 },
        { "5 -> 36 at 20x20 (the stem kernel, one-value stores)", 1, 5, 20, 20, 36 },
    };
    const std::vector<MathMode> modes { MathMode::TF32, MathMode::FP16, MathMode::BF16 };
    checkBlocks("cuda", { "tensor_core" }, blocks, modes); // the kernel the plan picks
    for (const char* kernel : { "mma", "wgmma" })
        checkBlocks("cuda", { "tensor_core" }, { blocks[0], blocks[1], blocks[2] }, modes, { { "tc_kernel", kernel } });
    // The TMA kernel's skip through its ring, on the tiles that take it (one entry or two, 16-bit or FP32): a channel
    // block past K (its boxes partly or wholly off the skip), pixels off the map, several items a block; and K not a
    // multiple of 16 bytes' channels (the skip from global memory).
    for (const char* tile : { "tma128x128", "tma128x64" })
        checkBlocks("cuda", { "tensor_core" },
            { { "128 -> 200 at 28x30, batch 3 (the skip through the ring)", 3, 128, 28, 30, 200, 1, true },
                { "64 -> 256 at 56x56, batch 4 (the skip through the ring, several items a block)", 4, 64, 56, 56, 256,
                    1, true },
                { "64 -> 36 at 30x30, batch 2 (16-bit: the skip from global memory)", 2, 64, 30, 30, 36 } },
            modes, { { "tc_tile", tile }, { "tc_split", "1" } });
    // The storage-format direct kernels (stored_conv.cuh): every conv of cuda.direct in these modes, and the grouped
    // and depthwise ones of cuda.tensor_core.
    checkBlocks("cuda", { "direct", "tensor_core" },
        { blocks[1], { "grouped 32 -> 32, 4 groups", 2, 32, 12, 12, 32, 4 },
            { "depthwise 24 -> 24", 2, 24, 9, 11, 24, 24 },
            { "depthwise 13 -> 13 (one channel a thread)", 1, 13, 6, 7, 13, 13 } },
        modes);
    // cuda's FP32 algorithms in the Tensor Core modes run on FP32 copies: the skip is a copy too.
    checkBlocks("cuda", { "implicit_gemm", "winograd" }, { blocks[1] }, modes);
}

TEST_CASE("cudnn residual fusion: the fused call's z operand, else an add in the layer", "[gpu][cudnn][fusion]")
{
    const std::vector<Block> blocks {
        { "16 -> 24 at 17x23, batch 2", 2, 16, 17, 23, 24 },
        { "64 -> 64 at 28x28, batch 4", 4, 64, 28, 28, 64 },
    };
    checkBlocks("cudnn", { "auto", "implicit_precomp_gemm", "implicit_gemm" }, blocks, kEveryMode);
    // The NHWC layout of the FP32 path adds the (NCHW) skip after its transpose back.
    checkBlocks("cudnn", { "implicit_precomp_gemm" }, blocks, { MathMode::FP32 }, { { "layout", "nhwc" } });
}
