// conv2d by FFT on the GPU (cuda.fft): the same algorithm as cpu.fft (compute/cpu/conv2d_fft.cpp, which derives
// it), with cuFFT's batched transforms and three kernels of ours.
//
// Shapes, for a chunk of B tiles (B = all tiles of all images when they fit the workspace bound, else fewer,
// processed one chunk after another), N = tileH · tileW and F = tileH · (tileW/2 + 1):
//   spectra  S[K][C/g][F]   complex, conj(FFT(dilated kernel)) / N; made once in prepare()
//   real     [B][max(C, K)][tileH][tileW]   the padded input tiles, later the inverse transforms' output
//   X        [B][C][F]      complex, one batched r2c plan of B·C planes
//   Y        [B][K][F]      complex, Y[b][k][f] = Σ_c X[b][g·C/g + c][f] · S[k][c][f]
//   then one batched c2r plan of B·K planes into `real`, and the crop.
//
// The kernels:
//   padTiles     one thread per real-tile element: the input pixel its window covers, or 0 outside the image
//                (this is the layer's padding) or past the last tile of the chunk.
//   channelSums  the complex GEMM per frequency. The frequencies are the independent dimension and the spectra
//                are contiguous along it, so each thread takes one frequency and a register tile of MB tiles ×
//                MK output channels, and walks the input channels: per step it loads MB + MK complex numbers
//                (coalesced across the warp, consecutive frequencies) and does MB·MK complex multiply-adds. The
//                blocks of one frequency range are launched next to each other (frequency in gridDim.y, tile
//                and channel blocks in gridDim.x), so the X and S they share come from L2, not DRAM.
//   cropTiles    one thread per output pixel of the chunk: the exact part of each tile, plus bias, through the
//                fused activation (compute/fusion.h).
// cuFFT's plans are created without work areas (cufftSetAutoAllocation(0)); their work area is part of the layer's
// scratch in the session's arena, so a layer that does not fit fails at prepare with the arena's message.
#include "kernels/cuda/conv2d_fft.cuh"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/cuda/activation_op.cuh"

#include <cufft.h>

#include <algorithm>

namespace convscope::cuda {

namespace {

    const char* const kSelection = "cuda.fft";

    std::string cufftError(cufftResult r)
    {
        switch (r) {
        case CUFFT_INVALID_PLAN:
            return "CUFFT_INVALID_PLAN";
        case CUFFT_ALLOC_FAILED:
            return "CUFFT_ALLOC_FAILED";
        case CUFFT_INVALID_VALUE:
            return "CUFFT_INVALID_VALUE";
        case CUFFT_INTERNAL_ERROR:
            return "CUFFT_INTERNAL_ERROR";
        case CUFFT_EXEC_FAILED:
            return "CUFFT_EXEC_FAILED";
        case CUFFT_SETUP_FAILED:
            return "CUFFT_SETUP_FAILED";
        case CUFFT_INVALID_SIZE:
            return "CUFFT_INVALID_SIZE";
        case CUFFT_NOT_SUPPORTED:
            return "CUFFT_NOT_SUPPORTED";
        default:
            return "cufftResult " + std::to_string(int(r));
        }
    }

    void checkCufft(cufftResult r, const std::string& what)
    {
        if (r == CUFFT_SUCCESS)
            return;
        const std::string message = std::string(kSelection) + ": " + what + " failed: " + cufftError(r);
        if (r == CUFFT_ALLOC_FAILED)
            throw OutOfMemoryError(message);
        throw Error(message);
    }

    size_t alignUp(size_t v) { return (v + 255) / 256 * 256; }

    unsigned blocksFor(long long count, int threads) { return unsigned((count + threads - 1) / threads); }

    struct TileGeometry {
        int c, h, w, k, p, q; // channels and sizes of input and output
        int padTop, padLeft;
        int tileH, tileW, validH, validW, tilesX, tilesPerImage, totalTiles;
    };

    // real[b][ch][r][s] of tile (first + b): in[n][ch][oh0 − padTop + r][ow0 − padLeft + s], 0 outside. One plane
    // (b, ch) per blockIdx.y, its pixels along x: the tile's origin is worked out once per plane, and each pixel
    // costs one 32-bit division (the first version did five 64-bit divisions per element, each a long software
    // sequence on the GPU).
    __global__ void padTiles(
        TileGeometry t, int first, int batch, const float* __restrict__ x, float* __restrict__ real)
    {
        const int plane = t.tileH * t.tileW;
        for (int bc = blockIdx.y; bc < batch * t.c; bc += gridDim.y) {
            const int ch = bc % t.c, tile = first + bc / t.c;
            float* dst = real + (long long)bc * plane;
            const bool live = tile < t.totalTiles;
            const int n = live ? tile / t.tilesPerImage : 0, ti = live ? tile % t.tilesPerImage : 0;
            const int ih0 = (ti / t.tilesX) * t.validH - t.padTop, iw0 = (ti % t.tilesX) * t.validW - t.padLeft;
            const float* src = x + ((long long)n * t.c + ch) * t.h * t.w;
            for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < plane; i += gridDim.x * blockDim.x) {
                const int r = i / t.tileW, s = i - r * t.tileW;
                const int ih = ih0 + r, iw = iw0 + s;
                dst[i] = live && ih >= 0 && ih < t.h && iw >= 0 && iw < t.w ? src[(long long)ih * t.w + iw] : 0.0f;
            }
        }
    }

    // The kernels, dilated, at the origin of zeroed tileH × tileW planes: planes[pair][i·dh][j·dw] = w[pair][i][j].
    __global__ void placeKernels(long long pairs, int r, int s, int dilH, int dilW, int tileH, int tileW,
        const float* __restrict__ w, float* __restrict__ planes)
    {
        const long long total = pairs * r * s;
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
             i += (long long)gridDim.x * blockDim.x) {
            const int j = int(i % s), ki = int((i / s) % r);
            const long long pair = i / ((long long)r * s);
            planes[pair * tileH * tileW + (long long)ki * dilH * tileW + (long long)j * dilW] = w[i];
        }
    }

    // Correlation, not convolution: the conjugate; and the inverse transform's 1/N folded in.
    __global__ void conjugateScale(long long count, float scale, float2* __restrict__ s)
    {
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
             i += (long long)gridDim.x * blockDim.x) {
            const float2 v = s[i];
            s[i] = make_float2(v.x * scale, -v.y * scale);
        }
    }

    struct SumGeometry {
        int freqs, batch, c, k, cg, kg, kBlocksPerGroup, bBlocks;
    };

    // Y[b][k][f] = Σ_c X[b][g·cg + c][f] · S[k][c][f] (see the opening comment).
    template <int MB, int MK>
    __global__ void __launch_bounds__(128) channelSums(
        SumGeometry g, const float2* __restrict__ xs, const float2* __restrict__ spectra, float2* __restrict__ ys)
    {
        const int f = blockIdx.y * blockDim.x + threadIdx.x;
        if (f >= g.freqs)
            return;
        const int bBlock = blockIdx.x % g.bBlocks, kBlock = blockIdx.x / g.bBlocks;
        const int group = kBlock / g.kBlocksPerGroup;
        const int b0 = bBlock * MB, k0 = group * g.kg + (kBlock % g.kBlocksPerGroup) * MK;
        const int kEnd = (group + 1) * g.kg;
        float2 acc[MB][MK];
#pragma unroll
        for (int i = 0; i < MB; ++i)
#pragma unroll
            for (int j = 0; j < MK; ++j)
                acc[i][j] = make_float2(0.0f, 0.0f);
        const long long fl = f;
#pragma unroll 4 // several channels' loads in flight at once: the loop is bound by their latency, not by the FMAs
        for (int c = 0; c < g.cg; ++c) {
            float2 xv[MB], sv[MK];
#pragma unroll
            for (int i = 0; i < MB; ++i)
                xv[i] = b0 + i < g.batch ? xs[((long long)(b0 + i) * g.c + group * g.cg + c) * g.freqs + fl]
                                         : make_float2(0.0f, 0.0f);
#pragma unroll
            for (int j = 0; j < MK; ++j)
                sv[j] = k0 + j < kEnd ? spectra[((long long)(k0 + j) * g.cg + c) * g.freqs + fl]
                                      : make_float2(0.0f, 0.0f);
#pragma unroll
            for (int i = 0; i < MB; ++i)
#pragma unroll
                for (int j = 0; j < MK; ++j) {
                    acc[i][j].x = fmaf(xv[i].x, sv[j].x, fmaf(-xv[i].y, sv[j].y, acc[i][j].x));
                    acc[i][j].y = fmaf(xv[i].x, sv[j].y, fmaf(xv[i].y, sv[j].x, acc[i][j].y));
                }
        }
#pragma unroll
        for (int i = 0; i < MB; ++i)
#pragma unroll
            for (int j = 0; j < MK; ++j)
                if (b0 + i < g.batch && k0 + j < kEnd)
                    ys[((long long)(b0 + i) * g.k + k0 + j) * g.freqs + fl] = acc[i][j];
    }

    // out[n][k][oh][ow] = act(real[b][k][oh − oh0][ow − ow0] + bias[k] + skip[n][k][oh][ow]) for the exact part of
    // each tile (skip: a fused residual add's, or null); one plane (b, k) per blockIdx.y, as padTiles.
    __global__ void cropTiles(TileGeometry t, int first, int batch, const float* __restrict__ real,
        const float* __restrict__ bias, int act, float actParam, const float* __restrict__ skip, float* __restrict__ y)
    {
        const int valid = t.validH * t.validW;
        for (int bk = blockIdx.y; bk < batch * t.k; bk += gridDim.y) {
            const int k = bk % t.k, tile = first + bk / t.k;
            if (tile >= t.totalTiles)
                break; // bk only grows: every later plane is past the last tile too
            const int n = tile / t.tilesPerImage, ti = tile % t.tilesPerImage;
            const int oh0 = (ti / t.tilesX) * t.validH, ow0 = (ti % t.tilesX) * t.validW;
            const float* src = real + (long long)bk * t.tileH * t.tileW;
            float* dst = y + ((long long)n * t.k + k) * t.p * t.q;
            const float b = bias ? bias[k] : 0.0f;
            for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < valid; i += gridDim.x * blockDim.x) {
                const int r = i / t.validW, s = i - r * t.validW;
                if (oh0 + r < t.p && ow0 + s < t.q) {
                    const long long at = (long long)(oh0 + r) * t.q + ow0 + s;
                    dst[at] = epilogue(act, actParam, src[r * t.tileW + s] + b + skipAt(skip, dst - y + at));
                }
            }
        }
    }

    template <int MB, int MK>
    void launchSums(const SumGeometry& g, int groups, const float2* x, const float2* s, float2* y, cudaStream_t st)
    {
        SumGeometry gg = g;
        gg.kBlocksPerGroup = (g.kg + MK - 1) / MK;
        gg.bBlocks = (g.batch + MB - 1) / MB;
        const dim3 grid(unsigned(gg.bBlocks * gg.kBlocksPerGroup * groups), unsigned((g.freqs + 127) / 128));
        channelSums<MB, MK><<<grid, 128, 0, st>>>(gg, x, s, y);
        CONVSCOPE_CUDA_CHECK_LAUNCH("cuda.fft channel sums");
    }

    // A batched 2-D real transform of `planes` planes, dense layout, no work area of its own.
    cufftHandle makePlan(int tileH, int tileW, int planes, bool forward, bool autoAllocate, size_t* workBytes)
    {
        cufftHandle plan = 0;
        checkCufft(cufftCreate(&plan), "cufftCreate");
        try {
            checkCufft(cufftSetAutoAllocation(plan, autoAllocate ? 1 : 0), "cufftSetAutoAllocation");
            int n[2] = { tileH, tileW };
            checkCufft(cufftMakePlanMany(plan, 2, n, nullptr, 1, 0, nullptr, 1, 0, forward ? CUFFT_R2C : CUFFT_C2R,
                           planes, workBytes),
                std::string("planning a batch of ") + std::to_string(planes) + " " + std::to_string(tileH) + "×"
                    + std::to_string(tileW) + (forward ? " r2c" : " c2r") + " transforms");
        } catch (...) {
            cufftDestroy(plan);
            throw;
        }
        return plan;
    }

} // namespace

FftTilingTarget cudaFftTarget(int64_t forcedTile)
{
    FftTilingTarget t;
    t.maxTile = 2048;
    t.kernelSpectraBudgetBytes = int64_t(2) << 30;
    t.parallelTiles = 1;
    t.forcedTile = forcedTile;
    t.cost = FftTilingTarget::Cost::Bytes;
    return t;
}

struct Conv2dFft::Impl {
    ConvGeometry g {};
    FftTiling tiling;
    TileGeometry t {};
    int chunk = 0; // tiles per batch of transforms
    long long freqs = 0, plane = 0;
    size_t spectraBytes = 0, realBytes = 0, xBytes = 0, yBytes = 0, workBytes = 0;
    cufftHandle forward = 0, inverse = 0;
    float2* spectra = nullptr;
    float* real = nullptr;
    float2* xs = nullptr;
    float2* ys = nullptr;
};

Conv2dFft::Conv2dFft(const ConvGeometry& g, const FftTiling& tiling, int maxBatch)
    : m(std::make_unique<Impl>())
{
    m->g = g;
    m->tiling = tiling;
    m->freqs = tiling.freqs;
    m->plane = tiling.tileH * tiling.tileW;
    const long long tiles = (long long)g.n * tiling.tiles();
    m->t = { g.c, g.h, g.w, g.k, g.p, g.q, g.padTop, g.padLeft, int(tiling.tileH), int(tiling.tileW),
        int(tiling.validH), int(tiling.validW), int(tiling.tilesX), int(tiling.tiles()), int(tiles) };
    // Tiles per batch: as many as max(256 MiB, the layer's input + output) holds, and cuFFT's int batch allows.
    const long long bound
        = std::max<long long>(256LL << 20, ((long long)g.n * g.c * g.h * g.w + (long long)g.n * g.k * g.p * g.q) * 4);
    const long long perTile = (long long)std::max(g.c, g.k) * m->plane * 4 + (long long)(g.c + g.k) * m->freqs * 8;
    const long long byPlanes = (1LL << 30) / std::max(g.c, g.k);
    m->chunk = int(std::clamp<long long>(std::min(bound / perTile, byPlanes), 1, tiles));
    if (maxBatch > 0)
        m->chunk = std::min(m->chunk, maxBatch);
    m->spectraBytes = alignUp(size_t(g.k) * (g.c / g.groups) * m->freqs * 8);
    m->realBytes = alignUp(size_t(m->chunk) * std::max(g.c, g.k) * m->plane * 4);
    m->xBytes = alignUp(size_t(m->chunk) * g.c * m->freqs * 8);
    m->yBytes = alignUp(size_t(m->chunk) * g.k * m->freqs * 8);
    size_t workForward = 0, workInverse = 0;
    m->forward = makePlan(m->t.tileH, m->t.tileW, m->chunk * g.c, true, false, &workForward);
    try {
        m->inverse = makePlan(m->t.tileH, m->t.tileW, m->chunk * g.k, false, false, &workInverse);
    } catch (...) {
        cufftDestroy(m->forward);
        throw;
    }
    m->workBytes = alignUp(std::max(workForward, workInverse));
}

Conv2dFft::~Conv2dFft()
{
    cufftDestroy(m->forward);
    cufftDestroy(m->inverse);
}

size_t Conv2dFft::scratchBytes() const { return m->spectraBytes + m->realBytes + m->xBytes + m->yBytes + m->workBytes; }

void Conv2dFft::prepare(const float* w, void* scratch, cudaStream_t st)
{
    auto* base = static_cast<char*>(scratch);
    m->spectra = reinterpret_cast<float2*>(base);
    m->real = reinterpret_cast<float*>(base + m->spectraBytes);
    m->xs = reinterpret_cast<float2*>(base + m->spectraBytes + m->realBytes);
    m->ys = reinterpret_cast<float2*>(base + m->spectraBytes + m->realBytes + m->xBytes);
    void* work = base + m->spectraBytes + m->realBytes + m->xBytes + m->yBytes;
    checkCufft(cufftSetWorkArea(m->forward, work), "cufftSetWorkArea");
    checkCufft(cufftSetWorkArea(m->inverse, work), "cufftSetWorkArea");

    // The kernels' spectra: place the kernels in zeroed planes, one batched r2c, conjugate and scale.
    const ConvGeometry& g = m->g;
    const long long pairs = (long long)g.k * (g.c / g.groups);
    gpu::DeviceBuffer planes(size_t(pairs * m->plane) * 4, "cuda.fft: the padded kernels");
    CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(planes.get(), 0, planes.bytes(), st));
    placeKernels<<<std::min(blocksFor(pairs * g.r * g.s, 256), 65535u), 256, 0, st>>>(
        pairs, g.r, g.s, g.dilH, g.dilW, m->t.tileH, m->t.tileW, w, planes.floats());
    CONVSCOPE_CUDA_CHECK_LAUNCH("cuda.fft place kernels");
    size_t unused = 0;
    const cufftHandle plan = makePlan(m->t.tileH, m->t.tileW, int(pairs), true, true, &unused);
    cufftResult r = cufftSetStream(plan, st);
    if (r == CUFFT_SUCCESS)
        r = cufftExecR2C(plan, planes.floats(), reinterpret_cast<cufftComplex*>(m->spectra));
    if (r == CUFFT_SUCCESS) // the plan's own work area must outlive the transform
        CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
    cufftDestroy(plan);
    checkCufft(r, "transforming the kernels");
    conjugateScale<<<std::min(blocksFor(pairs * m->freqs, 256), 65535u), 256, 0, st>>>(
        pairs * m->freqs, 1.0f / float(m->plane), m->spectra);
    CONVSCOPE_CUDA_CHECK_LAUNCH("cuda.fft conjugate kernel spectra");
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st)); // `planes` is freed on return
}

void Conv2dFft::run(const float* x, const float* bias, float* y, cudaStream_t st, const float* residual)
{
    const ConvGeometry& g = m->g;
    checkCufft(cufftSetStream(m->forward, st), "cufftSetStream");
    checkCufft(cufftSetStream(m->inverse, st), "cufftSetStream");
    SumGeometry sums { int(m->freqs), m->chunk, g.c, g.k, g.c / g.groups, g.k / g.groups, 0, 0 };
    for (int first = 0; first < m->t.totalTiles; first += m->chunk) {
        const dim3 padGrid(blocksFor(m->plane, 256), unsigned(std::min(m->chunk * g.c, 65535)));
        padTiles<<<padGrid, 256, 0, st>>>(m->t, first, m->chunk, x, m->real);
        CONVSCOPE_CUDA_CHECK_LAUNCH("cuda.fft pad tiles");
        checkCufft(cufftExecR2C(m->forward, m->real, reinterpret_cast<cufftComplex*>(m->xs)), "the forward transform");
        // Register tiles: 4 tiles × 8 channels where the layer has them (4 × 8 complex accumulators per thread).
        const bool manyTiles = m->chunk >= 4;
        if (sums.kg >= 8)
            manyTiles ? launchSums<4, 8>(sums, g.groups, m->xs, m->spectra, m->ys, st)
                      : launchSums<1, 8>(sums, g.groups, m->xs, m->spectra, m->ys, st);
        else if (sums.kg >= 4)
            manyTiles ? launchSums<4, 4>(sums, g.groups, m->xs, m->spectra, m->ys, st)
                      : launchSums<1, 4>(sums, g.groups, m->xs, m->spectra, m->ys, st);
        else
            manyTiles ? launchSums<4, 1>(sums, g.groups, m->xs, m->spectra, m->ys, st)
                      : launchSums<1, 1>(sums, g.groups, m->xs, m->spectra, m->ys, st);
        checkCufft(cufftExecC2R(m->inverse, reinterpret_cast<cufftComplex*>(m->ys), m->real), "the inverse transform");
        const dim3 cropGrid(
            blocksFor((long long)m->t.validH * m->t.validW, 256), unsigned(std::min(m->chunk * g.k, 65535)));
        cropTiles<<<cropGrid, 256, 0, st>>>(m->t, first, m->chunk, m->real, bias, g.act, g.actParam, residual, y);
        CONVSCOPE_CUDA_CHECK_LAUNCH("cuda.fft crop tiles");
    }
}

std::string Conv2dFft::note() const
{
    const int chunks = (m->t.totalTiles + m->chunk - 1) / m->chunk;
    return "cuFFT r2c/c2r, " + m->tiling.describe() + ", " + std::to_string(m->chunk) + " tiles per batch"
        + (chunks > 1 ? " (" + std::to_string(chunks) + " batches)" : "") + ", workspace "
        + gpu::mib(scratchBytes() - m->spectraBytes);
}

} // namespace convscope::cuda
