// cuda.tensor_core (conv2d_tensor_core.cu) in tf32, fp16 and bf16 against two host references in double:
//   - the same rounded operands (input and weights rounded as the session rounds them: to nearest, ties to even, for
//     FP16 and BF16 storage and for TF32, as roundTf32 and the TMA copy do), so the only differences are the FP32
//     accumulation order and the rounding of the stored output: every element within s·|y| + γ·Σ|w·x| (s the output
//     format's unit roundoff, γ = (K+2)·2^-23, twice the FP32 γ_K), relative L2 ≤ 1e-5 in tf32 (FP32 output) and ≤ s
//     in fp16/bf16, and in fp16/bf16 at least 95% of the elements exactly the reference rounded to the format;
//   - the unrounded FP32 operands, within the format's bound (compute/rounding_bound.h):
//     relL2 ≤ (2u + K·2^-24)·√K + s, K = C·R·S.
// Each case runs with the launcher's choice, with every mma.sync block shape and k-tile row (--option tc_tile,
// tc_kbytes), with the cp.async-fed wgmma kernel (tc_kernel=wgmma and each wg…/ws… tile) and the TMA-fed one
// (tc_kernel=tma, each tma… tile, both tc_release), which run on compute capability 9.0 (elsewhere the request runs
// mma.sync, and the note must say why; a TMA request the layer does not fit runs the cp.async wgmma kernel and says
// why).
// Shapes: odd C (the element-by-element copy), K not a multiple of the tile, stride 2, dilation 2, asymmetric
// padding, 1×1, a 7×7 stem, batch 1 and 8, a fused activation, a layer that splits K, a grid of more tiles than
// multiprocessors (the persistent kernels' loop over work items), and a grouped layer (which the
// Tensor Core kernel leaves to the channels-last direct kernel in the storage format). Prints SKIPPED without a usable
// GPU.
#include "compute/error.h"
#include "compute/fusion.h"
#include "compute/rounding_bound.h"
#include "compute/shape_inference.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

using namespace convscope;

namespace {

// v rounded to a binary format with `mant` fraction bits and smallest normal exponent `emin`, to nearest even.
double roundToFormat(double v, int mant, int emin)
{
    if (v == 0 || !std::isfinite(v))
        return v;
    const double q = std::ldexp(1.0, std::max(std::ilogb(v), emin) - mant);
    return std::nearbyint(v / q) * q;
}

// What the session does to a GEMM operand in `mode`.
double roundOperand(MathMode mode, float v)
{
    switch (mode) {
    case MathMode::TF32: { // roundTf32 (and the TMA copy): 10 fraction bits, to nearest, ties to even
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        bits = (bits + 0xfffu + ((bits >> 13) & 1u)) & 0xffffe000u;
        float r;
        std::memcpy(&r, &bits, 4);
        return r;
    }
    case MathMode::FP16:
        return roundToFormat(v, 10, -14);
    case MathMode::BF16:
        return roundToFormat(v, 7, -126);
    case MathMode::FP32:
        break;
    }
    return v;
}

double roundOutput(MathMode mode, double v)
{
    return mode == MathMode::FP16 ? roundToFormat(v, 10, -14)
        : mode == MathMode::BF16  ? roundToFormat(v, 7, -126)
                                  : double(float(v));
}

struct Reference {
    std::vector<double> y, absSum;
};

// conv2d in double, NCHW, on operands passed through `round`; `act` applied to each output.
Reference referenceConv(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2d& c, const LayerShape& s,
    const std::function<double(float)>& round, const std::function<double(double)>& act)
{
    const Shape& in = s.in;
    const Shape& out = s.out;
    const int64_t R = c.kernel_size[0], S = c.kernel_size[1];
    std::vector<double> xr(x.numel()), wr(w.numel());
    for (int64_t i = 0; i < x.numel(); ++i)
        xr[i] = round(x.data()[i]);
    for (int64_t i = 0; i < w.numel(); ++i)
        wr[i] = round(w.data()[i]);
    Reference ref { std::vector<double>(out.numel()), std::vector<double>(out.numel()) };
    for (int64_t n = 0; n < out.n; ++n)
        for (int64_t k = 0; k < out.c; ++k)
            for (int64_t p = 0; p < out.h; ++p)
                for (int64_t q = 0; q < out.w; ++q) {
                    double sum = b ? b->data()[k] : 0.0, abs = std::fabs(sum);
                    for (int64_t ci = 0; ci < in.c; ++ci)
                        for (int64_t r = 0; r < R; ++r) {
                            const int64_t ih = p * c.stride[0] - s.resolvedPadding.top + r * c.dilation[0];
                            if (ih < 0 || ih >= in.h)
                                continue;
                            for (int64_t sx = 0; sx < S; ++sx) {
                                const int64_t iw = q * c.stride[1] - s.resolvedPadding.left + sx * c.dilation[1];
                                if (iw < 0 || iw >= in.w)
                                    continue;
                                const double t = xr[((n * in.c + ci) * in.h + ih) * in.w + iw]
                                    * wr[((k * in.c + ci) * R + r) * S + sx];
                                sum += t;
                                abs += std::fabs(t);
                            }
                        }
                    const int64_t o = ((n * out.c + k) * out.h + p) * out.w + q;
                    ref.y[o] = act(sum);
                    ref.absSum[o] = abs;
                }
    return ref;
}

double relL2(const Tensor& out, const std::vector<double>& ref)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < out.numel(); ++i) {
        const double d = out.data()[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

struct Case {
    const char* what;
    Shape in;
    Conv2d conv;
};

Conv2d conv(int64_t k, Pair kernel, Padding2d pad, Pair stride = { 1, 1 }, Pair dilation = { 1, 1 }, bool bias = true)
{
    Conv2d c = test::conv2dSpec(k, kernel, pad, dilation, 1, bias);
    c.stride = stride;
    return c;
}

Padding2d pads(int64_t top, int64_t bottom, int64_t left, int64_t right)
{
    return { Padding2d::Mode::Explicit, top, bottom, left, right };
}

std::vector<Case> cases()
{
    std::vector<Case> v = {
        { "odd C = 3, K = 37, 3x3, batch 1", Shape::nchw(1, 3, 17, 19), conv(37, { 3, 3 }, pads(1, 1, 1, 1)) },
        { "batch 8, 16 -> 64, 3x3", Shape::nchw(8, 16, 12, 12), conv(64, { 3, 3 }, pads(1, 1, 1, 1)) },
        { "40 -> 130 (two channel tiles), stride 2, asymmetric padding", Shape::nchw(2, 40, 15, 13),
            conv(130, { 3, 3 }, pads(1, 0, 2, 1), { 2, 2 }) },
        { "24 -> 72, dilation 2", Shape::nchw(1, 24, 20, 20),
            conv(72, { 3, 3 }, pads(2, 2, 2, 2), { 1, 1 }, { 2, 2 }) },
        { "1x1 64 -> 96", Shape::nchw(4, 64, 9, 9), conv(96, { 1, 1 }, pads(0, 0, 0, 0)) },
        { "7x7 stride-2 stem 3 -> 64", Shape::nchw(2, 3, 32, 32), conv(64, { 7, 7 }, pads(3, 3, 3, 3), { 2, 2 }) },
        { "14x14 256 -> 256 (split K)", Shape::nchw(1, 256, 14, 14), conv(256, { 3, 3 }, pads(1, 1, 1, 1)) },
        { "5x5 20 -> 33, stride (1, 2), no bias, batch 8", Shape::nchw(8, 20, 7, 9),
            conv(33, { 5, 5 }, pads(2, 2, 2, 2), { 1, 2 }, { 1, 1 }, false) },
        // 160 output tiles of 128 pixels: more than the multiprocessors of an H100 (132), so each block of the
        // persistent ws… kernels runs several work items round its stage ring.
        { "32 -> 64 at 128x160, more tiles than multiprocessors", Shape::nchw(1, 32, 128, 160),
            conv(64, { 3, 3 }, pads(1, 1, 1, 1)) },
        // The TMA kernel's blocks are rectangles of output pixels: partial ones along P and Q, strided boxes,
        // dilated taps and a map filling exactly 3/4 of its blocks; C a multiple of its k-tile row.
        { "64 -> 130 at 29x57, stride 2, asymmetric padding, batch 3", Shape::nchw(3, 64, 29, 57),
            conv(130, { 3, 3 }, pads(1, 0, 2, 1), { 2, 2 }) },
        { "64 -> 64 at 20x24, dilation 2, batch 2", Shape::nchw(2, 64, 20, 24),
            conv(64, { 3, 3 }, pads(2, 2, 2, 2), { 1, 1 }, { 2, 2 }) },
        // 512 pixel blocks: each block of the persistent TMA kernel runs several, the ping-pong tiles' two
        // warpgroups taking turns round the stage ring.
        { "64 -> 8 at 64x128, batch 8, several work items a block", Shape::nchw(8, 64, 64, 128),
            conv(8, { 3, 3 }, pads(1, 1, 1, 1)) },
        // The window tiles (one box of an input row for every tap of a kernel row): rows of more than 64 pixels,
        // stride 1 along W, dilated and asymmetric taps, a 5-wide kernel, enough blocks to fill the device; the
        // 64 -> 8 case above takes them too.
        { "128 -> 96 at 30x100, dilation (1, 2), asymmetric padding, batch 5", Shape::nchw(5, 128, 30, 100),
            conv(96, { 3, 3 }, pads(1, 0, 3, 1), { 1, 1 }, { 1, 2 }) },
        { "64 -> 136 at 40x100, 5x5, stride (2, 1), batch 8", Shape::nchw(8, 64, 40, 100),
            conv(136, { 5, 5 }, pads(2, 2, 2, 2), { 2, 1 }) },
        // The transposed tile (256 pixels of one output row × ≤ 64 channels, the weights the m64 operand): blocks
        // enough to fill the device (≥ 140), channels short of the 64 (the 16-byte stores of K a multiple of 8, and
        // one value a store where it is not), dilated taps, a partial block along Q, two channel runs a tap.
        { "64 -> 40 at 140x256, dilation (1, 2)", Shape::nchw(1, 64, 140, 256),
            conv(40, { 3, 3 }, pads(1, 1, 2, 2), { 1, 1 }, { 1, 2 }) },
        { "128 -> 36 at 50x200, batch 3, a fused leaky ReLU", Shape::nchw(3, 128, 50, 200),
            conv(36, { 3, 3 }, pads(1, 1, 1, 1)) },
        { "128 -> 256 at 16x16, batch 2, a fused leaky ReLU", Shape::nchw(2, 128, 16, 16),
            conv(256, { 3, 3 }, pads(1, 1, 1, 1)) },
        // The fp16 / bf16 stem kernel (C < 16, not a multiple of 8; conv2d_tensor_core_stem.h): rows of several
        // 128-pixel blocks and a partial one, one channel, 8- and 16-half window pixels, dilation, stride 4 with
        // 11×11 taps and two channel slices (the second partial), 1×3 taps, four slices.
        { "stem 3 -> 64 at 40x300, 3x3, batch 2", Shape::nchw(2, 3, 40, 300), conv(64, { 3, 3 }, pads(1, 1, 1, 1)) },
        { "stem 1 -> 16, 5x5, dilation 2", Shape::nchw(3, 1, 30, 33),
            conv(16, { 5, 5 }, pads(4, 4, 4, 4), { 1, 1 }, { 2, 2 }) },
        { "stem 5 -> 24, stride 2, asymmetric padding", Shape::nchw(2, 5, 41, 37),
            conv(24, { 3, 3 }, pads(1, 0, 2, 1), { 2, 2 }) },
        { "stem 3 -> 96, 11x11 stride 4", Shape::nchw(2, 3, 99, 99), conv(96, { 11, 11 }, pads(2, 2, 2, 2), { 4, 4 }) },
        { "stem 7 -> 200, 1x3, stride (1, 2), no bias", Shape::nchw(1, 7, 20, 70),
            conv(200, { 1, 3 }, pads(0, 0, 1, 1), { 1, 2 }, { 1, 1 }, false) },
        { "12 -> 20 with a fused leaky ReLU", Shape::nchw(2, 12, 10, 10), conv(20, { 3, 3 }, pads(1, 1, 1, 1)) },
    };
    LeakyReLU leaky;
    leaky.negative_slope = 0.1;
    v.back().conv.fused_activation = fusedActivationOf(leaky);
    v[v.size() - 2].conv.fused_activation = fusedActivationOf(leaky); // the TMA kernel's 16-byte epilogue
    v[v.size() - 3].conv.fused_activation = fusedActivationOf(leaky); // the transposed tile's one-value stores
    return v;
}

void checkOutput(const Tensor& out, const Reference& same, const Reference& exact, MathMode mode, int64_t K);

// Whether the TMA kernel takes the layer with k-tile rows of `rowBytes` (conv2d_tensor_core_plan.h's tmaRefusal,
// restated): C a multiple of the row, blocks of 128 output pixels tileH × tileW (tileW the power of two ≥ Q up to
// 128) whose input box spans ≤ 256 pixels a side, at least 3/4 of the blocks' pixels on the output map.
bool tmaTakes(const Case& tc, const LayerShape& s, MathMode mode, int rowBytes)
{
    const int64_t bytes = mode == MathMode::TF32 ? 4 : 2, sh = tc.conv.stride[0], sw = tc.conv.stride[1];
    if (tc.in.c % (rowBytes / bytes) != 0)
        return false;
    // pointwiseAsRow (conv2d_tensor_core_plan.h), restated: a 1×1 layer of stride 1, no padding and C ≥ 16 is planned
    // as one row of its N·H·W pixels.
    const Padding2d& pad = tc.conv.padding;
    const bool pointwise = tc.conv.kernel_size[0] == 1 && tc.conv.kernel_size[1] == 1 && sh == 1 && sw == 1
        && pad.top == 0 && pad.bottom == 0 && pad.left == 0 && pad.right == 0 && tc.conv.groups == 1 && tc.in.c >= 16
        && (s.out.n > 1 || s.out.h > 1);
    const int64_t outH = pointwise ? 1 : s.out.h, outW = pointwise ? s.out.n * s.out.h * s.out.w : s.out.w;
    int64_t tileW = 1;
    while (tileW < outW && tileW < 128)
        tileW *= 2;
    const int64_t tileH = 128 / tileW;
    if (sh > 8 || sw > 8 || tileW * sw > 256 || tileH * sh > 256)
        return false;
    const int64_t rows = (outH + tileH - 1) / tileH * tileH, cols = (outW + tileW - 1) / tileW * tileW;
    return 4 * outH * outW >= 3 * rows * cols;
}

void checkCase(Backend& cuda, const Case& tc, MathMode mode, uint64_t seed)
{
    Network net = test::oneLayer(tc.in, tc.conv);
    const ShapeReport shapes = inferShapes(net);
    INFO(tc.what << " in " << mathModeName(mode) << ", seed " << seed << "  " << shapes.firstError());
    REQUIRE(shapes.ok());
    test::randomParameters(net, shapes, seed);
    const Tensor input = test::randomTensor(shapes.input, seed * 31 + 7);
    const Layer& layer = net.layers[0];
    const LayerShape& s = shapes.layers[0];
    const bool leaky = bool(tc.conv.fused_activation);
    const auto act = [&](double v) { return leaky && v < 0 ? v * 0.1 : v; };
    const Reference same = referenceConv(
        input, *layer.weight, layer.bias.get(), tc.conv, s, [&](float v) { return roundOperand(mode, v); }, act);
    const Reference exact = referenceConv(
        input, *layer.weight, layer.bias.get(), tc.conv, s, [](float v) { return double(v); }, act);

    // The launcher's choice, mma.sync forced, then every mma.sync block shape with either k-tile row, then the wgmma
    // kernel forced and each of its tiles. wgmma runs where the device is compute capability 9.0 and C is a multiple
    // of the 16-byte piece (elsewhere a wgmma request runs mma.sync and the note says why); the launcher picks it
    // there.
    const bool sm90 = cuda.info()["compute_capability"] == "9.0";
    const bool wgmmaTakes = sm90 && tc.in.c % (mode == MathMode::TF32 ? 4 : 8) == 0;
    std::vector<std::map<std::string, std::string>> variants = { {}, { { "tc_kernel", "mma" } } };
    for (const char* tile : { "128x64", "128x128", "128x128w8", "256x64" })
        for (const char* kBytes : { "64", "128" })
            variants.push_back({ { "tc_tile", tile }, { "tc_kbytes", kBytes } });
    variants.push_back({ { "tc_kernel", "wgmma" } });
    variants.push_back({ { "tc_kernel", "stem" } });
    for (const char* tile :
        { "wg128x64", "wg128x128", "wg128x256", "wg128x128r64", "wg128x256r64", "ws128x128", "ws128x256" })
        variants.push_back({ { "tc_tile", tile } });
    variants.push_back({ { "tc_kernel", "tma" } });
    for (const char* tile : { "tma128x64", "tma128x64r64", "tma128x128", "tma128x128r64", "tma128x128s6", "tma128x256",
             "tma128x128pp", "tma128x64pp", "tma128x64w", "tma128x128w", "tma256x64t" })
        variants.push_back({ { "tc_tile", tile } });
    // Both ways of giving a stage back, each on a tile whose default is the other (two blocks a multiprocessor: early;
    // one: late), and on the ping-pong tile.
    variants.push_back({ { "tc_kernel", "tma" }, { "tc_release", "late" } });
    variants.push_back({ { "tc_tile", "tma128x128" }, { "tc_release", "late" } });
    variants.push_back({ { "tc_tile", "tma128x256" }, { "tc_release", "early" } });
    variants.push_back({ { "tc_tile", "tma128x128pp" }, { "tc_release", "early" } });
    variants.push_back({ { "tc_tile", "tma128x128w" }, { "tc_release", "late" } });
    variants.push_back({ { "tc_tile", "tma128x64w" }, { "tc_release", "late" } });
    variants.push_back({ { "tc_tile", "tma256x64t" }, { "tc_release", "late" } });
    const bool tmaAny = tmaTakes(tc, s, mode, 128) || tmaTakes(tc, s, mode, 64);
    for (const auto& variant : variants) {
        SessionOptions options;
        options.math = mode;
        options.extra = variant;
        options.extra["poison_outputs"] = "1";
        auto session = cuda.createSession("tensor_core", options);
        session->prepare(net, shapes);
        session->runPass(input);
        const Tensor out = session->fetchOutput(0, nullptr);
        const std::string note = session->layerNote(0);
        std::string label;
        for (const auto& [key, value] : variant)
            label += key + "=" + value + " ";
        INFO("options " << (variant.empty() ? "(default)" : label) << ", layer note: " << note);
        const std::string kernel = variant.count("tc_kernel") ? variant.at("tc_kernel") : "";
        const std::string tile = variant.count("tc_tile") ? variant.at("tc_tile") : "";
        const bool asksTma = kernel == "tma" || tile.rfind("tma", 0) == 0;
        const bool asksCpAsync = kernel == "wgmma" || tile.rfind("w", 0) == 0;
        // The stem kernel (conv2d_tensor_core_stem.h's stemRefusal, restated; every case here fits its shared memory
        // and packed row): by default and when asked, in fp16 / bf16 on C < 16 not a multiple of 8. Asked for where
        // it does not run, the launcher's choice runs and the note says why.
        const bool stemTakes = mode != MathMode::TF32 && tc.in.c < 16 && tc.in.c % 8 != 0;
        const bool asksStem = kernel == "stem";
        const bool stemRuns = stemTakes && (variant.empty() || asksStem);
        CHECK((note.find("stem kernel:") != std::string::npos) == stemRuns);
        if (asksStem && !stemTakes)
            CHECK(note.find("(the stem kernel") != std::string::npos);
        const bool asDefault = variant.empty() || (asksStem && !stemTakes);
        const bool asksWgmma = asDefault || asksTma || asksCpAsync;
        // The launcher's policy (conv2d_tensor_core_plan.h, planOf): the TMA kernel wherever it takes the layer,
        // else the cp.async wgmma kernel wherever that does in fp16/bf16; in tf32 on K ≤ 64 and on reductions of
        // ≥ 72 k-tiles of 128 bytes.
        const int64_t pieces = tc.conv.kernel_size[0] * tc.conv.kernel_size[1] * ((tc.in.c + 3) / 4);
        const bool defaultWgmma
            = tmaAny || mode != MathMode::TF32 || tc.conv.out_channels <= 64 || (pieces + 7) / 8 >= 72;
        if (stemRuns)
            CHECK(note.find("mma.sync m16n8k16") != std::string::npos);
        else if (asksWgmma && wgmmaTakes && (!asDefault || defaultWgmma))
            CHECK(note.find("wgmma m64") != std::string::npos);
        else
            CHECK(note.find("mma.sync") != std::string::npos);
        // Which feeds it: TMA by default and when asked wherever it fits (the asked tile's row), else cp.async, and
        // a TMA request that does not fit says why.
        const bool tmaFits = tile.rfind("tma", 0) == 0
            ? tmaTakes(tc, s, mode, tile.find("r64") != std::string::npos ? 64 : 128)
            : tmaAny;
        const bool tmaRuns = wgmmaTakes && !asksCpAsync && (asDefault || asksTma) && tmaFits;
        CHECK((note.find("copied by TMA") != std::string::npos) == tmaRuns);
        if (asksTma && wgmmaTakes && !tmaFits)
            CHECK(note.find("TMA") != std::string::npos);
        // The window tiles (planOf's tmaWindowRefusal, restated): only where the shape allows them (stride 1 along W,
        // one row of 128 pixels a block, a reach of ≤ 8 pixels), by default where it does and the blocks are many
        // (≥ 200: more than the multiprocessors of the GPUs here, so the reduction is not split) but for the 16-bit
        // 128×64 tile, and a window tile asked for where the shape does not allow it says why.
        const int64_t S = tc.conv.kernel_size[1], dW = tc.conv.dilation[1], K = tc.conv.out_channels;
        const bool windowShape
            = tmaTakes(tc, s, mode, 128) && tc.conv.stride[1] == 1 && s.out.w > 64 && S >= 2 && (S - 1) * dW <= 8;
        const int64_t blocks
            = s.out.n * s.out.h * ((s.out.w + 127) / 128) * ((K + (K <= 64 ? 63 : 127)) / (K <= 64 ? 64 : 128));
        const bool windows = note.find("input windows") != std::string::npos;
        if (windows)
            CHECK(windowShape);
        if (asDefault && tmaRuns && windowShape && blocks >= 200 && (K > 64 || mode == MathMode::TF32))
            CHECK(windows);
        if (tmaRuns && tile.size() > 1 && tile.back() == 'w' && !windowShape)
            CHECK(note.find("window tiles need") != std::string::npos);
        // The transposed tile (tmaTransposedRefusal, restated): a window shape with K ≤ 64 and rows of more than 128
        // pixels; by default wherever it takes the layer, which the two cases of 256-pixel rows above do (140 and 150
        // blocks); asked for where it does not, the note says why.
        const bool transposed = note.find(" transposed (") != std::string::npos; // not a refusal's "transposed tile"
        const bool transposedShape = windowShape && K <= 64 && s.out.w > 128;
        if (transposed)
            CHECK(transposedShape);
        const int64_t rowBlocks = (s.out.w + 255) / 256;
        if (asDefault && tmaRuns && transposedShape && 4 * s.out.w >= 3 * 256 * rowBlocks
            && s.out.n * s.out.h * rowBlocks >= 140)
            CHECK(transposed);
        if (tmaRuns && tile == "tma256x64t" && !transposedShape)
            CHECK(
                (note.find("transposed tile") != std::string::npos || note.find("window tiles") != std::string::npos));
        if (asksWgmma && !wgmmaTakes && !asDefault)
            CHECK(note.find("wgmma needs") != std::string::npos); // a forced wgmma says why it did not run
        checkOutput(out, same, exact, mode, s.in.c * tc.conv.kernel_size[0] * tc.conv.kernel_size[1]);
    }
}

void checkOutput(const Tensor& out, const Reference& same, const Reference& exact, MathMode mode, int64_t K)
{
    const double so = mode == MathMode::TF32 ? std::ldexp(1.0, -24) : storageRoundoff(mode);
    const double gamma = double(K + 2) * std::ldexp(1.0, -23);
    int64_t outside = 0, exactlyRounded = 0, worst = -1;
    double worstRatio = 0;
    for (int64_t i = 0; i < out.numel(); ++i) {
        const double got = out.data()[i], want = same.y[i];
        const double allowed = so * std::fabs(want) + gamma * same.absSum[i] + std::ldexp(1.0, -24);
        const double ratio = std::isfinite(got) ? std::fabs(got - want) / allowed : 1e30;
        if (ratio > 1)
            ++outside;
        if (ratio > worstRatio)
            worstRatio = ratio, worst = i;
        exactlyRounded += got == roundOutput(mode, want);
    }
    INFO("elements outside the same-operand bound: "
        << outside << " of " << out.numel() << "; worst " << worstRatio << "x at " << worst << " (got "
        << (worst >= 0 ? out.data()[worst] : 0.0f) << ", want " << (worst >= 0 ? same.y[worst] : 0.0) << ")");
    CHECK(outside == 0);
    const double sameL2 = relL2(out, same.y);
    INFO("relL2 against the same rounded operands: " << sameL2);
    CHECK(sameL2 <= (mode == MathMode::TF32 ? 1e-5 : so));
    if (mode != MathMode::TF32) {
        INFO("elements equal to the rounded reference: " << exactlyRounded << " of " << out.numel());
        CHECK(double(exactlyRounded) >= 0.95 * double(out.numel()));
    }
    const double u = operandRoundoff(mode),
                 bound = (2 * u + double(K) * std::ldexp(1.0, -24)) * std::sqrt(double(K)) + so;
    const double exactL2 = relL2(out, exact.y);
    INFO("relL2 against FP32 operands: " << exactL2 << " (bound " << bound << ")");
    CHECK(exactL2 <= bound);
}

const MathMode kModes[] = { MathMode::TF32, MathMode::FP16, MathMode::BF16 };

} // namespace

TEST_CASE("cuda.tensor_core conv2d: tf32, fp16 and bf16 against references on the same and on FP32 operands",
    "[gpu][cuda][tensor_core]")
{
    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    uint64_t seed = 11;
    for (MathMode mode : kModes)
        for (const Case& c : cases())
            checkCase(*cuda, c, mode, seed++);
}

TEST_CASE("cuda.tensor_core: the split reduction of a grid that under-fills the device", "[gpu][cuda][tensor_core]")
{
    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    Network net = test::oneLayer(Shape::nchw(1, 256, 14, 14), conv(256, { 3, 3 }, pads(1, 1, 1, 1)));
    const ShapeReport shapes = inferShapes(net);
    test::randomParameters(net, shapes, 3);
    SessionOptions options;
    options.math = MathMode::FP16;
    auto session = cuda->createSession("tensor_core", options);
    session->prepare(net, shapes);
    INFO(session->layerNote(0));
    CHECK(session->layerNote(0).find("split-K") != std::string::npos);

    // --option tc_split: the parts asked for (3: 36 k-tiles in parts of 12; 1: none), on each kernel that splits,
    // against cpu.direct. Batch 4 with a bias and a ReLU: the reduction kernel's epilogue.
    Network wide = test::oneLayer(Shape::nchw(4, 256, 14, 14), conv(256, { 3, 3 }, pads(1, 1, 1, 1)));
    std::get<Conv2d>(wide.layers[0].spec).bias = true;
    wide.layers.push_back(Layer { "relu", ReLU {}, {} });
    const ShapeReport wideShapes = inferShapes(wide);
    REQUIRE(wideShapes.ok());
    test::randomParameters(wide, wideShapes, 4);
    const Tensor input = test::randomTensor(wideShapes.input, 5);
    const Tensor want = test::onePassOutput(wide, input);
    for (const char* kernel : { "tma", "wgmma", "mma" })
        for (const char* parts : { "3", "1" }) {
            SessionOptions forced = options;
            forced.extra = { { "tc_kernel", kernel }, { "tc_split", parts } };
            auto s = cuda->createSession("tensor_core", forced);
            s->prepare(wide, wideShapes);
            s->runPass(input);
            const Tensor got = s->fetchOutput(1, nullptr);
            const std::string note = s->layerNote(0);
            INFO("tc_kernel=" << kernel << " tc_split=" << parts << ": " << note);
            CHECK((note.find("split-K 3") != std::string::npos) == (std::string(parts) == "3"));
            CHECK((note.find("split-K") == std::string::npos || std::string(parts) == "3"));
            REQUIRE(got.numel() == want.numel());
            double num = 0, den = 0;
            for (int64_t i = 0; i < got.numel(); ++i) {
                const double d = double(got.data()[i]) - double(want.data()[i]);
                num += d * d;
                den += double(want.data()[i]) * double(want.data()[i]);
            }
            CHECK(std::sqrt(num / den) < 2e-3); // fp16 operands and output, FP32 sums of 2304 products
        }
}

TEST_CASE("cuda.tensor_core: FP32 math is refused, grouped layers run the direct kernel in the storage format",
    "[gpu][cuda][tensor_core]")
{
    auto cuda = test::backendOrSkip("cuda");
    if (!cuda)
        return;
    CHECK_THROWS_AS(cuda->createSession("tensor_core", {}), UnsupportedError);
    SessionOptions bad;
    bad.math = MathMode::FP16;
    bad.extra["tc_tile"] = "99x99";
    CHECK_THROWS_AS(cuda->createSession("tensor_core", bad), InputError);
    bad.extra = { { "tc_kernel", "hgmma" } };
    CHECK_THROWS_AS(cuda->createSession("tensor_core", bad), InputError);
    bad.extra = { { "tc_kernel", "mma" }, { "tc_tile", "wg128x256" } }; // a wgmma tile for the mma.sync kernel
    CHECK_THROWS_AS(cuda->createSession("tensor_core", bad), InputError);
    bad.extra = { { "tc_kernel", "wgmma" }, { "tc_tile", "tma128x128" } }; // a TMA tile for the cp.async kernel
    CHECK_THROWS_AS(cuda->createSession("tensor_core", bad), InputError);
    bad.extra = { { "tc_kernel", "tma" }, { "tc_tile", "wg128x64" } };
    CHECK_THROWS_AS(cuda->createSession("tensor_core", bad), InputError);
    bad.extra = { { "tc_release", "soon" } };
    CHECK_THROWS_AS(cuda->createSession("tensor_core", bad), InputError);
    for (const char* parts : { "0", "17", "two", "-1" }) { // 1 to 16
        bad.extra = { { "tc_split", parts } };
        CHECK_THROWS_AS(cuda->createSession("tensor_core", bad), InputError);
    }
    bad.extra = { { "tc_probe", "epilogue" } }; // loads, math, no_epilogue or math_no_epilogue
    CHECK_THROWS_AS(cuda->createSession("tensor_core", bad), InputError);

    Conv2d grouped = test::conv2dSpec(12, { 3, 3 }, pads(1, 1, 1, 1), { 1, 1 }, 2);
    Network net = test::oneLayer(Shape::nchw(2, 8, 9, 9), grouped);
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    test::randomParameters(net, shapes, 5);
    const Tensor input = test::randomTensor(shapes.input, 6);
    const Tensor want = test::onePassOutput(net, input);
    for (MathMode mode : kModes) {
        SessionOptions options;
        options.math = mode;
        auto session = cuda->createSession("tensor_core", options);
        session->prepare(net, shapes);
        session->runPass(input);
        const ErrorMetrics m = compare(session->fetchOutput(0, nullptr), want);
        INFO(mathModeName(mode) << ": " << session->layerNote(0) << ", relL2 " << m.relL2);
        CHECK(session->layerNote(0).find("mma.sync") == std::string::npos);
        CHECK(session->layerNote(0).find("wgmma") == std::string::npos);
        CHECK(session->layerNote(0).find("native") != std::string::npos);
        // FP32 arithmetic on operands stored in the format: the storage rounding of input and output only.
        CHECK(m.relL2 <= 3 * storageRoundoff(mode) + 1e-6);
    }
}
