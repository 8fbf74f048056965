// conv2d, one GEMM per kernel tap on the zero-padded input (cpu.tap_gemm), for stride-1 convolutions.
//
// im2col copies every input pixel kh·kw times to build the column matrix; on one core that copy (and the
// second copy sgemm makes when it packs the columns) cost ~25% of a 64→64 3×3 layer (docs/PERFORMANCE.md).
// With stride 1 the copy is not needed. Pad the input with zeros to Hp × Wp and compute the output on the
// padded grid: output pixel (oh, x), x < Wp, as a flat index p = oh·Wp + x. Then for tap (ki, kj)
//
//   in_padded[ic, oh + ki·d_h, x + kj·d_w] = band[ic·S + p + ki·d_h·Wp + kj·d_w]
//
// is the matrix B_tap[C_in/g, P] = band + (ki·d_h·Wp + kj·d_w) with leading dimension S (the padded plane's
// stride): the image itself, shifted. So
//
//   out[C_out/g, P] = Σ_taps W_tap[C_out/g, C_in/g] · B_tap[C_in/g, P]        kh·kw sgemms, beta = 1 after the first
//
// where W_tap[oc, ic] = W[oc, ic, ki, kj] (the weights regrouped by tap once per call, 1/N of the work). The
// columns x ≥ W_out of the padded grid wrap into the next row: they are computed and thrown away (Wp/W_out − 1
// extra work: 0.4% at 512², 6% at 32²). The reads run (kw−1)·d_w floats past a plane, so each plane carries that
// much zero slack.
//
// Work is split like cpu.im2col_gemm v2: (image, group, band of output rows) tasks on OpenMP threads, each with
// its own padded band (the rows its taps read) and accumulator tile. With few input channels per group (< 16) each
// product would have a tiny inner dimension; those layers, and every layer with stride > 1, run cpu.im2col_gemm's
// path instead.
//
// Two implementations of the same sum:
//   v3 conv2dTapGemmBlas  the formula above as written: kh·kw single-threaded OpenBLAS sgemms per band (a band is
//                         R·Wp ≥ 512 pixels, at least C_out/g up to 1024, so sgemm's packing of W_tap is amortised).
//                         Runs where the CPU has no AVX-512.
//   v4 conv2dTapAvx512    the same band stored channels-minor and our own 12-pixel × 32-channel AVX-512 register
//                         tile (conv2d_tap_avx512.cpp), which keeps the accumulators in registers across all taps
//                         instead of reading and writing the tile kh·kw times; 16 × 16 register transposes bring
//                         the band in and the result back to NCHW.
//   v5 (same function)    for many cores: v4 split work only by (image, group, band of ~1024 pixels), so at batch 1
//                         a 28² or smaller layer was one task and one thread of 16 did it all; bands now shrink and
//                         the output channels split until every thread has two tasks. And any equal strides: a
//                         tile of 12 pixels of one output row reads every stride-th input pixel, so the stride-2
//                         layers, the 1×1s and the 3-channel stem no longer fall back to im2col + OpenBLAS (whose
//                         Debian build picks a generic SSE3 core on CPUs newer than it knows).
#include "compute/cpu/conv2d_tap_avx512.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"
#include "compute/cpu_threads.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace convscope::cpu::fast {

bool conv2dTapGemmApplies(const Conv2d& spec, int64_t inChannels)
{
    // A 1×1 convolution without padding is already one sgemm on the input (cpu.im2col_gemm's pointwise path).
    const Padding2d& p = spec.padding;
    const bool pointwise = spec.kernel_size == Pair { 1, 1 }
        && (p.mode != Padding2d::Mode::Explicit || (p.top == 0 && p.bottom == 0 && p.left == 0 && p.right == 0));
    return !pointwise && spec.stride[0] == 1 && spec.stride[1] == 1 && spec.groups >= 1
        && inChannels / spec.groups >= 16;
}

namespace {

    // The zero-padded rows [row0, row0 + needRows) of `channels` input planes, channels-minor: padded-grid pixel q's
    // values are band[q·channels + ic]; then `tail` zero pixels (reads past the last row).
    void fillBandChannelsMinor(const float* planes, int64_t channels, int64_t inH, int64_t inW, const Padding2d& pad,
        int64_t Wp, int64_t row0, int64_t needRows, int64_t tail, float* band)
    {
        for (int64_t r = 0; r < needRows; ++r) {
            float* row = band + r * Wp * channels;
            const int64_t ih = row0 + r - pad.top;
            if (ih < 0 || ih >= inH) {
                std::fill(row, row + Wp * channels, 0.0f);
                continue;
            }
            std::fill(row, row + pad.left * channels, 0.0f);
            std::fill(row + (pad.left + inW) * channels, row + Wp * channels, 0.0f);
            // A transpose of [channels, inW] into [inW, channels]: 16 × 16 blocks in registers where both
            // sides have 16, then 16 columns at a time so the 16 floats read from each channel's row share a line.
            const int64_t fullX = inW / 16 * 16, fullC = channels / 16 * 16;
            const int64_t planeStride = inH * inW;
            for (int64_t x0 = 0; x0 < fullX; x0 += 16)
                for (int64_t ic0 = 0; ic0 < fullC; ic0 += 16)
                    avx512::transpose16x16(planes + ic0 * planeStride + ih * inW + x0, planeStride,
                        row + (pad.left + x0) * channels + ic0, channels, nullptr);
            for (int64_t x0 = 0; x0 < inW; x0 += 16) {
                const int64_t x1 = std::min(inW, x0 + 16);
                for (int64_t ic = x0 < fullX ? fullC : 0; ic < channels; ++ic) {
                    const float* src = planes + (ic * inH + ih) * inW;
                    for (int64_t x = x0; x < x1; ++x)
                        row[(pad.left + x) * channels + ic] = src[x];
                }
            }
        }
        std::fill(band + needRows * Wp * channels, band + (needRows * Wp + tail) * channels, 0.0f);
    }

    // v4/v5: the register tile (conv2d_tap_avx512.cpp) over (32 output channels) × (12 output pixels).
    void conv2dTapAvx512(const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec,
        const Padding2d& pad, Tensor& out, const float* prepacked)
    {
        using avx512::kTileChannels;
        using avx512::kTilePixels;
        const int64_t batch = in.shape().n, inC = in.shape().c, inH = in.shape().h, inW = in.shape().w;
        const int64_t outC = out.shape().c, outH = out.shape().h, outW = out.shape().w;
        const int64_t kh = spec.kernel_size[0], kw = spec.kernel_size[1], groups = spec.groups;
        const int64_t inPerGroup = inC / groups, outPerGroup = outC / groups;
        const int64_t dh = spec.dilation[0], dw = spec.dilation[1];
        const int64_t stride = spec.stride[0]; // == stride[1] (conv2dTapAvx512Applies)
        const int64_t Wp = inW + pad.left + pad.right;
        const int64_t taps = kh * kw;
        const int64_t ocBlocks = (outPerGroup + kTileChannels - 1) / kTileChannels;
        // Stride 1 computes on the padded grid (gridW = Wp, tiles run on across rows); a larger stride computes each
        // output row in whole tiles of 12 (gridW = W_out rounded up to 12), pixel i of a tile reading input pixel
        // stride·i, so a tile never crosses a row.
        const int64_t gridW = stride == 1 ? Wp : (outW + kTilePixels - 1) / kTilePixels * kTilePixels;

        // Work: (image, group, band of output rows, chunk of 32-channel blocks) tasks. At batch 1 a 14×14 layer is
        // a single band, so bands shrink (to no fewer than ~4 tiles of pixels) and then the output channels split
        // until every thread has two tasks: otherwise 15 of 16 cores watch one thread compute the layer.
        const int threads = omp_get_max_threads();
        const int64_t wanted = 2 * int64_t(threads);
        int64_t rows = std::clamp<int64_t>((1024 + gridW - 1) / gridW, 1, outH);
        const auto bandTasks = [&](int64_t r) { return batch * groups * ((outH + r - 1) / r); };
        while (rows > 1 && bandTasks(rows) < wanted && (rows / 2) * gridW >= 4 * kTilePixels)
            rows = (rows + 1) / 2;
        const int64_t rowTiles = (outH + rows - 1) / rows;
        const int64_t ocChunks = std::clamp<int64_t>((wanted + bandTasks(rows) - 1) / bandTasks(rows), 1, ocBlocks);
        const int64_t blocksPerChunk = (ocBlocks + ocChunks - 1) / ocChunks;

        const int64_t bandRows = (rows - 1) * stride + dh * (kh - 1) + 1;
        const int64_t tail = dw * (kw - 1) + (gridW + kTilePixels) * stride; // pixels read past the last band row
        const int64_t bandSize = (bandRows * Wp + tail) * inPerGroup;
        const int64_t maxPixels = (rows * gridW + kTilePixels - 1) / kTilePixels * kTilePixels;
        const int64_t tileSize = ocBlocks * kTileChannels * maxPixels;

        // packed[g][ob][tap][ic][32] = W[g·C_out/g + ob·32 + j][ic][tap], zero past C_out/g (packTapWeights): made
        // here unless the session made it once in prepare.
        const int64_t blockSize = taps * inPerGroup * kTileChannels;
        std::vector<float> packedHere;
        if (!prepacked) {
            packedHere = packTapWeights(weight, spec);
            prepacked = packedHere.data();
        }
        std::vector<int64_t> tapOffsets; // in band pixels
        for (int64_t ki = 0; ki < kh; ++ki)
            for (int64_t kj = 0; kj < kw; ++kj)
                tapOffsets.push_back(ki * dh * Wp + kj * dw);

        const int64_t tasks = batch * groups * rowTiles * ocChunks;
        const int teams = int(std::min<int64_t>(threads, tasks));
        auto workspace = cpu::detail::allocateWorkspace(int64_t(teams) * (bandSize + tileSize), "conv2d");
#pragma omp parallel for schedule(dynamic) num_threads(teams)
        for (int64_t task = 0; task < tasks; ++task) {
            const int64_t chunk = task % ocChunks;
            const int64_t t = (task / ocChunks) % rowTiles;
            const int64_t gr = (task / (ocChunks * rowTiles)) % groups;
            const int64_t n = task / (ocChunks * rowTiles * groups);
            const int64_t ob0 = chunk * blocksPerChunk, ob1 = std::min(ocBlocks, ob0 + blocksPerChunk);
            if (ob0 >= ob1)
                continue;
            const int64_t oh0 = t * rows;
            const int64_t count = std::min(rows, outH - oh0);
            float* band = workspace.get() + int64_t(omp_get_thread_num()) * (bandSize + tileSize);
            float* tile = band + bandSize; // [ob][pixel][32]
            fillBandChannelsMinor(in.data() + (n * inC + gr * inPerGroup) * inH * inW, inPerGroup, inH, inW, pad, Wp,
                oh0 * stride, (count - 1) * stride + dh * (kh - 1) + 1, tail, band);
            const int64_t pixels = (count * gridW + kTilePixels - 1) / kTilePixels * kTilePixels;
            for (int64_t ob = ob0; ob < ob1; ++ob) {
                const float* w = prepacked + (gr * ocBlocks + ob) * blockSize;
                float* dst = tile + ob * pixels * kTileChannels;
                if (stride == 1) {
                    for (int64_t q0 = 0; q0 < pixels; q0 += kTilePixels)
                        avx512::tapTile12x32(w, band + q0 * inPerGroup, tapOffsets.data(), taps, inPerGroup, inPerGroup,
                            dst + q0 * kTileChannels);
                } else {
                    for (int64_t r = 0; r < count; ++r)
                        for (int64_t x0 = 0; x0 < gridW; x0 += kTilePixels)
                            avx512::tapTile12x32(w, band + (r * stride * Wp + x0 * stride) * inPerGroup,
                                tapOffsets.data(), taps, inPerGroup, stride * inPerGroup,
                                dst + (r * gridW + x0) * kTileChannels);
                }
            }
            static const float zeros[16] = {};
            // Back to NCHW, 16 pixels × one channel block at a time so the 16 tile rows read stay in L1 for all
            // 32 channels.
            for (int64_t ob = ob0; ob < ob1; ++ob) {
                const float* block = tile + ob * pixels * kTileChannels;
                const int64_t channels = std::min(kTileChannels, outPerGroup - ob * kTileChannels);
                const int64_t fullX = outW / 16 * 16, fullJ = channels / 16 * 16;
                for (int64_t r = 0; r < count; ++r)
                    for (int64_t x0 = 0; x0 < outW; x0 += 16) {
                        const int64_t x1 = std::min(outW, x0 + 16);
                        if (x0 < fullX)
                            for (int64_t j0 = 0; j0 < fullJ; j0 += 16) {
                                const int64_t oc0 = gr * outPerGroup + ob * kTileChannels + j0;
                                avx512::transpose16x16(block + (r * gridW + x0) * kTileChannels + j0, kTileChannels,
                                    out.data() + ((n * outC + oc0) * outH + oh0 + r) * outW + x0, outH * outW,
                                    bias ? bias->data() + oc0 : zeros);
                            }
                        for (int64_t j = x0 < fullX ? fullJ : 0; j < channels; ++j) {
                            const int64_t oc = gr * outPerGroup + ob * kTileChannels + j;
                            const float b = bias ? bias->data()[oc] : 0.0f;
                            float* dst = out.data() + ((n * outC + oc) * outH + oh0 + r) * outW;
                            const float* src = block + (r * gridW) * kTileChannels + j;
                            for (int64_t x = x0; x < x1; ++x)
                                dst[x] = src[x * kTileChannels] + b;
                        }
                    }
            }
        }
    }

} // namespace

std::vector<float> packTapWeights(const Tensor& weight, const Conv2d& spec)
{
    using avx512::kTileChannels;
    const Shape& ws = weight.shape(); // [C_out, C_in/g, kh, kw]
    const int64_t groups = spec.groups, outPerGroup = ws.n / groups, inPerGroup = ws.c, taps = ws.h * ws.w;
    const int64_t ocBlocks = (outPerGroup + kTileChannels - 1) / kTileChannels;
    const int64_t blockSize = taps * inPerGroup * kTileChannels;
    std::vector<float> packed(size_t(groups * ocBlocks * blockSize));
    // One output channel's weights are contiguous ([ic][tap]); each is read once in order and written strided into
    // its lane j of every (tap, ic) row of its block.
#pragma omp parallel for schedule(static) if (int64_t(packed.size()) >= detail::kMinParallelElements)
    for (int64_t goc = 0; goc < groups * ocBlocks * kTileChannels; ++goc) {
        const int64_t gr = goc / (ocBlocks * kTileChannels), oc = goc % (ocBlocks * kTileChannels);
        float* block = packed.data() + (gr * ocBlocks + oc / kTileChannels) * blockSize + oc % kTileChannels;
        const float* src = weight.data() + (gr * outPerGroup + oc) * inPerGroup * taps;
        for (int64_t ic = 0; ic < inPerGroup; ++ic)
            for (int64_t t = 0; t < taps; ++t)
                block[(t * inPerGroup + ic) * kTileChannels] = oc < outPerGroup ? src[ic * taps + t] : 0.0f;
    }
    return packed;
}

bool conv2dTapAvx512Applies(const Conv2d& spec, int64_t inChannels, int64_t outChannels)
{
    // Equal strides (each tile steps one stride along a row), and enough channels that a 32-wide output block and the
    // reduction are not mostly padding: a depthwise layer stays with im2col.
    const int64_t groups = std::max<int64_t>(1, spec.groups);
    return spec.stride[0] == spec.stride[1] && spec.stride[0] >= 1 && spec.groups >= 1 && outChannels / groups >= 8
        && inChannels / groups * spec.kernel_size[0] * spec.kernel_size[1] >= 8;
}

void conv2dTapGemm(const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec, const Padding2d& pad,
    Tensor& out, const float* prepacked)
{
    const detail::ConvSizes g = detail::checkConvolution(in, weight, bias, spec, out, "conv2d", false);
    const int64_t Hp = g.inH + pad.top + pad.bottom, Wp = g.inW + pad.left + pad.right;
    const int64_t sh = spec.stride[0], sw = spec.stride[1];
    const bool geometryAsExpected = Hp >= spec.dilation[0] * (g.kh - 1) + 1 && Wp >= spec.dilation[1] * (g.kw - 1) + 1
        && g.outH == (Hp - spec.dilation[0] * (g.kh - 1) - 1) / sh + 1
        && g.outW == (Wp - spec.dilation[1] * (g.kw - 1) - 1) / sw + 1;
    if (geometryAsExpected && avx512::haveAvx512() && conv2dTapAvx512Applies(spec, g.inC, g.outC)) {
        conv2dTapAvx512(in, weight, bias, spec, pad, out, prepacked);
        return;
    }
    if (!conv2dTapGemmApplies(spec, g.inC) || g.outH != Hp - spec.dilation[0] * (g.kh - 1)
        || g.outW != Wp - spec.dilation[1] * (g.kw - 1)) {
        conv2d(in, weight, bias, spec, pad, out);
        return;
    }
    conv2dTapGemmBlas(in, weight, bias, spec, pad, out);
}

void conv2dTapGemmBlas(
    const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec, const Padding2d& pad, Tensor& out)
{
    const std::string op = "conv2d";
    const detail::ConvSizes g = detail::checkConvolution(in, weight, bias, spec, out, op, false);
    const int64_t batch = g.batch, inC = g.inC, inH = g.inH, inW = g.inW;
    const int64_t outC = g.outC, outH = g.outH, outW = g.outW, kh = g.kh, kw = g.kw;
    const int64_t inPerGroup = g.inPerGroup, outPerGroup = g.outPerGroup, groups = spec.groups;
    const int64_t dh = spec.dilation[0], dw = spec.dilation[1];
    const int64_t Hp = inH + pad.top + pad.bottom, Wp = inW + pad.left + pad.right;
    if (!conv2dTapGemmApplies(spec, inC) || outH != Hp - dh * (kh - 1) || outW != Wp - dw * (kw - 1)) {
        conv2d(in, weight, bias, spec, pad, out);
        return;
    }
    const int64_t taps = kh * kw;
    const int64_t target = std::max<int64_t>(512, std::min<int64_t>(outPerGroup, 1024));
    const int64_t rows = std::clamp<int64_t>((target + Wp - 1) / Wp, 1, outH);
    const int64_t rowTiles = (outH + rows - 1) / rows;
    const int64_t bandRows = rows + dh * (kh - 1);
    const int64_t slack = dw * (kw - 1);
    const int64_t bandStride = bandRows * Wp + slack; // one input channel of the band
    const int64_t bandSize = inPerGroup * bandStride;
    const int64_t tileSize = outPerGroup * rows * Wp;
    detail::requireBlasDimensions({ bandStride, rows * Wp, inPerGroup, outPerGroup }, op);

    // W_tap[g][tap][oc][ic] = W[g·C_out/g + oc][ic][tap]
    auto regrouped = detail::allocateWorkspace(groups * taps * outPerGroup * inPerGroup, op);
    float* wt = regrouped.get();
#pragma omp parallel for schedule(static) if (groups * outPerGroup * inPerGroup * taps >= detail::kMinParallelElements)
    for (int64_t goc = 0; goc < groups * outPerGroup; ++goc) {
        const int64_t gr = goc / outPerGroup, oc = goc % outPerGroup;
        const float* src = weight.data() + goc * inPerGroup * taps;
        for (int64_t ic = 0; ic < inPerGroup; ++ic)
            for (int64_t t = 0; t < taps; ++t)
                wt[((gr * taps + t) * outPerGroup + oc) * inPerGroup + ic] = src[ic * taps + t];
    }

    const int64_t tasks = batch * groups * rowTiles;
    const int threads = int(std::min<int64_t>(omp_get_max_threads(), tasks));
    auto workspace = detail::allocateWorkspace(int64_t(threads) * (bandSize + tileSize), op);

    keepBlasOnCallingThread();
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (int64_t task = 0; task < tasks; ++task) {
        const int64_t t = task % rowTiles;
        const int64_t gr = (task / rowTiles) % groups;
        const int64_t n = task / (rowTiles * groups);
        const int64_t oh0 = t * rows;
        const int64_t count = std::min(rows, outH - oh0);
        const int64_t needRows = count + dh * (kh - 1); // padded rows [oh0, oh0 + needRows) are read
        float* band = workspace.get() + int64_t(omp_get_thread_num()) * (bandSize + tileSize);
        float* tile = band + bandSize;

        // The zero-padded band of this group's input channels.
        const float* planes = in.data() + (n * inC + gr * inPerGroup) * inH * inW;
        for (int64_t ic = 0; ic < inPerGroup; ++ic) {
            float* dst = band + ic * bandStride;
            for (int64_t r = 0; r < needRows; ++r) {
                float* row = dst + r * Wp;
                const int64_t ih = oh0 + r - pad.top;
                if (ih < 0 || ih >= inH) {
                    std::fill(row, row + Wp, 0.0f);
                    continue;
                }
                std::fill(row, row + pad.left, 0.0f);
                std::memcpy(row + pad.left, planes + (ic * inH + ih) * inW, size_t(inW) * sizeof(float));
                std::fill(row + pad.left + inW, row + Wp, 0.0f);
            }
            std::fill(dst + needRows * Wp, dst + needRows * Wp + slack, 0.0f);
        }

        const int64_t N = count * Wp;
        for (int64_t ki = 0; ki < kh; ++ki)
            for (int64_t kj = 0; kj < kw; ++kj) {
                const int64_t tap = ki * kw + kj;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(outPerGroup), blasint(N),
                    blasint(inPerGroup), 1.0f, wt + (gr * taps + tap) * outPerGroup * inPerGroup, blasint(inPerGroup),
                    band + ki * dh * Wp + kj * dw, blasint(bandStride), tap == 0 ? 0.0f : 1.0f, tile, blasint(N));
            }

        // Keep the W_out real columns of each padded row, plus the bias.
        for (int64_t oc = 0; oc < outPerGroup; ++oc) {
            const float b = bias ? bias->data()[gr * outPerGroup + oc] : 0.0f;
            float* dst = out.data() + ((n * outC + gr * outPerGroup + oc) * outH + oh0) * outW;
            const float* src = tile + oc * N;
            for (int64_t r = 0; r < count; ++r)
                for (int64_t x = 0; x < outW; ++x)
                    dst[r * outW + x] = src[r * Wp + x] + b;
        }
    }
}

} // namespace convscope::cpu::fast
