// cuda.implicit_gemm's split-K (kernels/cuda/conv2d_implicit_gemm_split.cu): layers whose output tiles leave most
// multiprocessors idle (VGG-16's 512→512 on 14×14 and 7×7, a 64-channel layer on the 64×128 tiles) split their
// reduction on their own, and igemm_splits forces a count on shapes off every tile and stage boundary (parts of one
// step, a last part shorter than the others, planes not a multiple of 4). Each runs unfused (bias in the summing
// pass) and "+fused" (the ReLU there too) through the profiler against cpu.direct, outputs poisoned, relative L2
// ≤ 1e-5 (FP32). On a machine without a usable GPU it prints "SKIPPED: <reason>".
#include "compute/error.h"
#include "compute/profiler.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>

using namespace convscope;

namespace {

struct Case {
    std::string name;
    int64_t n, c, hw, k, kernel, stride, dilation;
    Padding2d pad;
    std::map<std::string, std::string> extra; // igemm_tile / igemm_splits
    bool split; // the layer note must (or must not) say split-K
    bool bias = true;
    int64_t width = 0; // 0: square
};

Network convRelu(const Case& k)
{
    Conv2d c;
    c.out_channels = k.k;
    c.kernel_size = { k.kernel, k.kernel == 7 ? 1 : k.kernel };
    c.stride = { k.stride, k.stride };
    c.dilation = { k.dilation, k.dilation };
    c.padding = k.pad;
    c.bias = k.bias;
    Network net;
    net.name = k.name;
    net.input = { k.n, k.c, k.hw, k.width ? k.width : k.hw, false, "random:" + std::to_string(k.c * 31 + k.hw) };
    Layer conv;
    conv.name = "conv";
    conv.spec = c;
    conv.init.kind = "he_uniform";
    conv.init.seed = static_cast<uint64_t>(k.k + k.hw);
    net.layers.push_back(conv);
    Layer relu;
    relu.name = "relu";
    relu.spec = ReLU {};
    net.layers.push_back(relu);
    return net;
}

RunResult runBoth(const Network& net, const std::map<std::string, std::string>& extra, bool keepOutputs = false)
{
    ProfileOptions opt;
    opt.selections = { { "cuda", "implicit_gemm", false }, { "cuda", "implicit_gemm", true } };
    opt.warmup = 0;
    opt.repeat = 1;
    opt.keepOutputs = keepOutputs;
    opt.session.extra = extra;
    opt.session.extra["poison_outputs"] = "1";
    return profile(net, test::randomTensor(net.input.shape(), 7), opt);
}

} // namespace

TEST_CASE(
    "cuda implicit GEMM split-K: under-filled grids, every part boundary, vs cpu.direct", "[gpu][cuda][conv2d][splitk]")
{
    if (!test::backendOrSkip("cuda"))
        return;
    const auto same = Padding2d { Padding2d::Mode::Same };
    const std::map<std::string, std::string> autoSplit;
    const Case cases[] = {
        // Chosen by the launcher: 2 × 4 tiles of 128×128 (VGG conv5 at batch 1), 1 × 4 on 7×7 (planes of 49
        // pixels: the scalar summing pass), 7 × 4 on 28×28, and 2 tiles of 64×128 (64 output channels): under-filled
        // on any GPU of more than 28 multiprocessors. (Full grids split for balance, VGG's 28×28 layers at batch 8,
        // depend on the multiprocessor count; the forced cases below run the same kernels.)
        { "512→512 @14² b1", 1, 512, 14, 512, 3, 1, 1, Padding2d::symmetric(1, 1), autoSplit, true },
        { "512→512 @7² b2", 2, 512, 7, 512, 3, 1, 1, Padding2d::symmetric(1, 1), autoSplit, true, false },
        { "256→512 @28² b1", 1, 256, 28, 512, 3, 1, 1, Padding2d::symmetric(1, 1), autoSplit, true },
        { "64→64 @14² b1", 1, 64, 14, 64, 3, 1, 1, Padding2d::symmetric(1, 1), autoSplit, true },
        // igemm_splits=1: the small tiles, as before split-K.
        { "512→512 @14² unsplit", 1, 512, 14, 512, 3, 1, 1, Padding2d::symmetric(1, 1), { { "igemm_splits", "1" } },
            false },
        // Forced: 9 steps in 64 parts (capped to 9 parts of one step), stride 2, dilation 2, asymmetric padding,
        // output channels not a multiple of 4; 5×5 "same" in 3 parts on both pipelined tiles; a 7×1 kernel's 14 steps
        // in 5 parts (3, 3, 3, 3, 2); a wide, non-square input.
        { "13→70 s2 d2 asym, 64 parts", 3, 13, 37, 70, 3, 2, 2, { Padding2d::Mode::Explicit, 2, 0, 1, 3 },
            { { "igemm_tile", "128x128cp" }, { "igemm_splits", "64" } }, true, true, 41 },
        { "50→130 5×5 same, 3 parts, 128x128cp", 2, 50, 23, 130, 5, 1, 1, same,
            { { "igemm_tile", "128x128cp" }, { "igemm_splits", "3" } }, true, false, 27 },
        { "50→130 5×5 same, 3 parts, 64x128cp", 2, 50, 23, 130, 5, 1, 1, same,
            { { "igemm_tile", "64x128cp" }, { "igemm_splits", "3" } }, true, true, 27 },
        { "20→36 7×1, 5 parts", 2, 20, 17, 36, 7, 1, 1, { Padding2d::Mode::Explicit, 3, 3, 0, 0 },
            { { "igemm_tile", "64x128cp" }, { "igemm_splits", "5" } }, true, false, 45 },
    };
    for (const Case& k : cases) {
        const Network net = convRelu(k);
        const RunResult r = runBoth(net, k.extra);
        for (const auto& sel : r.selections) {
            INFO(k.name << " " << sel.selection.str() << ": " << sel.failure);
            REQUIRE(sel.ok);
            INFO("note: " << sel.layers[0].note);
            CHECK((sel.layers[0].note.find("split-K") != std::string::npos) == k.split);
            CHECK(sel.layers.back().error.valid);
            for (size_t i = 0; i < sel.layers.size(); ++i) {
                if (!sel.layers[i].error.valid) // the ReLU fused into the convolution has no output of its own
                    continue;
                INFO("layer " << i << " relL2 " << sel.layers[i].error.relL2);
                CHECK(sel.layers[i].error.relL2 <= 1e-5);
            }
        }
    }
}

TEST_CASE("cuda implicit GEMM split-K: the parts are summed in a fixed order", "[gpu][cuda][conv2d][splitk]")
{
    if (!test::backendOrSkip("cuda"))
        return;
    const Case vgg { "512→512 @14² b2", 2, 512, 14, 512, 3, 1, 1, Padding2d::symmetric(1, 1), {}, true };
    const Network net = convRelu(vgg);
    const RunResult a = runBoth(net, {}, true), b = runBoth(net, {}, true);
    REQUIRE(a.selections[0].ok);
    REQUIRE(b.selections[0].ok);
    REQUIRE(a.selections[0].layers[0].output);
    REQUIRE(b.selections[0].layers[0].output);
    CHECK(a.selections[0].layers[0].note.find("split-K") != std::string::npos);
    CHECK(compare(*a.selections[0].layers[0].output, *b.selections[0].layers[0].output).maxAbs == 0.0);
}

TEST_CASE("cuda implicit GEMM split-K: grouped layers stay unsplit; a bad igemm_splits is refused",
    "[gpu][cuda][conv2d][splitk]")
{
    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    Case grouped { "grouped 64→128 g2, 4 parts asked", 1, 64, 15, 128, 3, 1, 1, Padding2d::symmetric(1, 1),
        { { "igemm_tile", "128x128cp" }, { "igemm_splits", "4" } }, false };
    const Network base = convRelu(grouped);
    Network net = base;
    std::get<Conv2d>(net.layers[0].spec).groups = 2;
    const RunResult r = runBoth(net, grouped.extra);
    for (const auto& sel : r.selections) {
        INFO(sel.selection.str() << ": " << sel.failure << " | " << (sel.ok ? sel.layers[0].note : ""));
        REQUIRE(sel.ok);
        CHECK(sel.layers[0].note.find("128x128cp") != std::string::npos);
        CHECK(sel.layers[0].note.find("split-K") == std::string::npos);
        CHECK(sel.layers.back().error.relL2 <= 1e-5);
    }
    for (const char* bad : { "0", "65", "x", "", "2.5" }) {
        SessionOptions o;
        o.extra["igemm_splits"] = bad;
        CHECK_THROWS_WITH(
            cuda->createSession("implicit_gemm", o), Catch::Contains("whole number from 1 (no split) to 64"));
    }
}
