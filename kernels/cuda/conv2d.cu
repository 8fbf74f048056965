// conv2d, the lecture's two kernels: cuda.direct and cuda.tiled. (cuda.implicit_gemm, the fast one, is in
// conv2d_implicit_gemm.cu.)
//
// Shapes: input x [N, C, H, W], weight [K, C/g, R, S], bias [K], output y [N, K, P, Q] with
//   y[n, k, p, q] = bias[k] + Σ_{c < C/g, r, s} x[n, g·C/g + c, p·sh − top + r·dh, q·sw − left + s·dw] · W[k, c, r, s]
// where g = k / (K/groups) and taps outside the input read zero (that is all padding is, whether symmetric or
// not: bottom/right padding only made P and Q larger).
//
// direct: one thread per output element, reading every input and weight it needs straight from global memory.
//   Simple and always correct — every stride, dilation, group count and padding — and the baseline the others
//   are measured against. It is slow because each input pixel is fetched R·S·K times (once per output that
//   uses it) and each weight N·P·Q times; the L1/L2 caches absorb part of that, the rest is memory traffic.
//
// tiled: a block owns a 16×16 tile of output pixels for 16 output channels of one group. It stages, channel
//   chunk by channel chunk, the input patch those pixels read — the tile plus its halo, (15·sh + (R−1)·dh + 1)
//   rows by the same in columns — into shared memory, together with the 16 channels' weights for that chunk.
//   Every staged input value is then reused by up to R·S neighbouring outputs and by all 16 output channels,
//   and every weight by 256 pixels, so global traffic drops by roughly those factors. Weights are stored
//   [c][r][s][16] so each thread reads its 16 weights as four float4 broadcasts. Stride and dilation only change
//   where a thread reads inside the patch. The halo tile must fit in 48 KB of shared memory: the chunk size
//   shrinks (8, 4, 2, 1 channels) for large kernels or strides, and supports() refuses when even one channel
//   does not fit (huge dilations), naming the size.
//
// small (tiny layers, every algorithm): one warp per output element; lane l takes taps l, l + 32, … of the
//   flattened (c, r, s) reduction and a five-step shuffle tree adds the 32 partial sums. Why: LeNet's c3 at
//   batch 1 has 1600 outputs and a 150-tap reduction. The direct kernel runs 1600 threads (13 warps per
//   multiprocessor at best on 7 of 132 multiprocessors), each walking 150 taps in a chain whose every step
//   waits on a cache load — ~20 µs of pure latency; the tiled and implicit-GEMM kernels launch even fewer
//   blocks and pay a shared-memory round trip and a barrier per step. Nothing there is bandwidth or arithmetic:
//   it is the length of the dependent chain. Splitting the reduction over a warp cuts the chain to ⌈150/32⌉ = 5
//   independent loads per lane (issued together, unrolled) plus five shuffles, and spreads 1600 warps over every
//   multiprocessor: a few µs including launch. The weight reads are coalesced (lane l reads W[k, l]); the input
//   reads are a gather, which the L1 serves at this size. Reductions of 16 to 63 taps (LeNet's c1: 25 taps,
//   4704 outputs, ~10 µs with the other kernels) take 8 lanes per output, four outputs per warp, so no lane idles
//   on a short reduction. Past ~16k outputs or 4M multiply-adds the register-tiled kernels win again (they reuse
//   every load many times), so conv2dSmallApplies keeps this to the latency-bound corner. The summation order
//   differs from the sequential one (a tree), which changes rounding only at the 1e-7 level.
//   3×3 and 5×5 kernels (LeNet's, and most tiny layers) take a version with the taps known at compile time: the
//   generic one spends most of its instructions turning a flat tap index into (c, r, s) with integer divisions.
//   Here L = 1–32 lanes per output split the (input channel, kernel row) pairs; each lane computes its column
//   bounds once, then issues a row's S loads of input and weights together (unrolled, two accumulators) before
//   its FMAs. docs/PERFORMANCE.md has what each lane count measured on LeNet.
#include "kernels/cuda/conv2d.cuh"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/activation_op.cuh"

#include <string>

namespace convscope::cuda {

namespace {
    __global__ void conv2dDirectKernel(ConvGeometry g, const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y)
    {
        const long long total = static_cast<long long>(g.n) * g.k * g.p * g.q;
        const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
        if (idx >= total)
            return;
        const int q = static_cast<int>(idx % g.q);
        const int p = static_cast<int>((idx / g.q) % g.p);
        const int k = static_cast<int>((idx / (static_cast<long long>(g.q) * g.p)) % g.k);
        const int n = static_cast<int>(idx / (static_cast<long long>(g.q) * g.p * g.k));
        const int cg = g.c / g.groups, kg = g.k / g.groups;
        const int c0 = (k / kg) * cg;
        float acc = bias ? bias[k] : 0.0f;
        const int ih0 = p * g.strideH - g.padTop, iw0 = q * g.strideW - g.padLeft;
        for (int c = 0; c < cg; ++c) {
            const float* xp = x + (static_cast<long long>(n) * g.c + c0 + c) * g.h * g.w;
            const float* wp = w + (static_cast<long long>(k) * cg + c) * g.r * g.s;
            for (int r = 0; r < g.r; ++r) {
                const int ih = ih0 + r * g.dilH;
                if (ih < 0 || ih >= g.h)
                    continue;
                for (int s = 0; s < g.s; ++s) {
                    const int iw = iw0 + s * g.dilW;
                    if (iw < 0 || iw >= g.w)
                        continue;
                    acc = fmaf(xp[ih * g.w + iw], wp[r * g.s + s], acc);
                }
            }
        }
        y[idx] = epilogue(g.act, g.actParam, acc + skipAt(g.residual, idx));
    }

    constexpr int kSmallThreads = 128; // small blocks spread a tiny layer over more multiprocessors
    constexpr long long kSmallMaxOutputs = 16384;
    constexpr int kSmallMinReduction = 16;
    constexpr int kSmallWarpReduction = 64; // from here on a whole warp per output, below it 8 lanes
    constexpr long long kSmallMaxMacs = 4ll << 20;

    // L lanes (8 or 32, a power of two dividing the warp) per output element.
    template <int L>
    __global__ void __launch_bounds__(kSmallThreads) conv2dSmallKernel(ConvGeometry g, const float* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y, unsigned total)
    {
        const unsigned out = (blockIdx.x * kSmallThreads + threadIdx.x) / L;
        const int lane = threadIdx.x % L;
        // No early return: with L < 32 one warp holds several outputs, and every lane must reach the shuffles.
        const bool active = out < total;
        const unsigned pq = static_cast<unsigned>(g.p) * g.q;
        const unsigned nk = active ? out / pq : 0, pix = active ? out - nk * pq : 0;
        const int n = static_cast<int>(nk / g.k), k = static_cast<int>(nk % g.k);
        const int p = static_cast<int>(pix / g.q), q = static_cast<int>(pix % g.q);
        const int cg = g.c / g.groups, kg = g.k / g.groups, rs = g.r * g.s;
        const int reduction = active ? cg * rs : 0;
        const float* xn = x + (static_cast<size_t>(n) * g.c + (k / kg) * cg) * g.h * g.w;
        const float* wk = w + static_cast<size_t>(k) * cg * rs;
        const int ih0 = p * g.strideH - g.padTop, iw0 = q * g.strideW - g.padLeft;
        float acc = 0.0f;
#pragma unroll 4
        for (int t = lane; t < reduction; t += L) {
            const int c = t / rs, tap = t - c * rs;
            const int r = tap / g.s, s = tap - r * g.s;
            const int ih = ih0 + r * g.dilH, iw = iw0 + s * g.dilW;
            const float wv = __ldg(wk + t);
            const float xv
                = (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w) ? __ldg(xn + (c * g.h + ih) * g.w + iw) : 0.0f;
            acc = fmaf(xv, wv, acc);
        }
        // xor offsets below L stay inside each group of L lanes.
#pragma unroll
        for (int offset = L / 2; offset > 0; offset /= 2)
            acc += __shfl_xor_sync(0xffffffffu, acc, offset);
        if (active && lane == 0)
            y[out] = epilogue(g.act, g.actParam, acc + (bias ? bias[k] : 0.0f) + skipAt(g.residual, out));
    }

    // The compile-time 3×3 / 5×5 version (see the file comment): L lanes per output share its (input channel,
    // kernel row) pairs, S taps each.
    // Grid: x over an output plane's pixels, y over the (image, output channel) planes, so n and k are uniform
    // per block and a thread divides only once (its pixel into p, q).
    // 128 threads: LeNet's c1 and c3 measured 0.1–0.2 µs faster than with 64 (more, smaller blocks) or 256.
    constexpr int kTinyThreads = 128;

    template <int R, int S, int L>
    __global__ void __launch_bounds__(kTinyThreads) conv2dTinyKernel(ConvGeometry g, const float* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y)
    {
        const int pq = g.p * g.q;
        const int pix = static_cast<int>((blockIdx.x * kTinyThreads + threadIdx.x) / L);
        const int lane = threadIdx.x % L;
        // No early return: lanes of one output meet at the shuffles.
        const bool active = pix < pq;
        const int n = static_cast<int>(blockIdx.y) / g.k, k = static_cast<int>(blockIdx.y) - n * g.k;
        const int p = pix / g.q, q = pix - p * g.q;
        const int cg = g.c / g.groups, kg = g.k / g.groups;
        const int plane = g.h * g.w;
        const float* xn = x + (static_cast<size_t>(n) * g.c + (k / kg) * cg) * plane;
        const float* wk = w + static_cast<size_t>(k) * cg * R * S;
        const int ih0 = p * g.strideH - g.padTop, iw0 = q * g.strideW - g.padLeft;
        int colOff[S];
        bool colOk[S];
#pragma unroll
        for (int s = 0; s < S; ++s) {
            const int iw = iw0 + s * g.dilW;
            colOk[s] = iw >= 0 && iw < g.w;
            colOff[s] = iw;
        }
        float acc[2] = { 0.0f, 0.0f };
        const int items = active ? cg * R : 0; // (channel, row) pairs
        // Unrolled by R: with one lane per output a channel's R rows are issued together.
#pragma unroll(R)
        for (int item = lane; item < items; item += L) {
            const int c = item / R, r = item - c * R; // R is a constant: a multiply and a shift
            const int ih = ih0 + r * g.dilH;
            const bool rowOk = ih >= 0 && ih < g.h;
            const float* xr = xn + static_cast<size_t>(c) * plane + ih * g.w;
            const float* wr = wk + item * S; // weights are [k][c][r][s]: item·S is (c, r)'s row
            float xv[S];
#pragma unroll
            for (int s = 0; s < S; ++s)
                xv[s] = rowOk && colOk[s] ? __ldg(xr + colOff[s]) : 0.0f;
#pragma unroll
            for (int s = 0; s < S; ++s)
                acc[s & 1] = fmaf(xv[s], __ldg(wr + s), acc[s & 1]);
        }
        float sum = acc[0] + acc[1];
#pragma unroll
        for (int offset = L / 2; offset > 0; offset /= 2)
            sum += __shfl_xor_sync(0xffffffffu, sum, offset);
        if (active && lane == 0) {
            const size_t at = static_cast<size_t>(blockIdx.y) * pq + pix;
            y[at] = epilogue(g.act, g.actParam, sum + (bias ? bias[k] : 0.0f) + skipAt(g.residual, at));
        }
    }

    // Lanes per output for the compile-time kernel: the (channel, row) pairs rounded up to a power of two, at most
    // 32, unless --option tiny_lanes forces a count.
    int tinyLanes(const ConvGeometry& g)
    {
        if (g.tinyLanes > 0)
            return g.tinyLanes;
        const int items = (g.c / g.groups) * g.r;
        int lanes = 1;
        while (lanes < items && lanes < 32)
            lanes *= 2;
        return lanes;
    }

    bool tinyKernelSize(const ConvGeometry& g) { return g.r == g.s && (g.r == 3 || g.r == 5); }

    template <int R, int L>
    void launchTiny(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
    {
        constexpr unsigned perBlock = kTinyThreads / L;
        const unsigned pq = static_cast<unsigned>(g.p) * g.q, planes = static_cast<unsigned>(g.n) * g.k;
        conv2dTinyKernel<R, R, L>
            <<<dim3((pq + perBlock - 1) / perBlock, planes), kTinyThreads, 0, st>>>(g, x, w, bias, y);
    }

    template <int R>
    void launchTiny(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
    {
        switch (tinyLanes(g)) {
        case 1:
            return launchTiny<R, 1>(g, x, w, bias, y, st);
        case 2:
            return launchTiny<R, 2>(g, x, w, bias, y, st);
        case 4:
            return launchTiny<R, 4>(g, x, w, bias, y, st);
        case 8:
            return launchTiny<R, 8>(g, x, w, bias, y, st);
        case 16:
            return launchTiny<R, 16>(g, x, w, bias, y, st);
        default:
            return launchTiny<R, 32>(g, x, w, bias, y, st);
        }
    }

    constexpr int kTile = 16; // output pixels per block side
    constexpr int kKpb = 16; // output channels per block

    struct TiledLayout {
        int patchH, patchW, cps;
        __host__ __device__ int patchFloats() const { return cps * patchH * patchW; }
    };

    TiledLayout tiledLayout(const ConvGeometry& g, int cps)
    {
        return { (kTile - 1) * g.strideH + (g.r - 1) * g.dilH + 1, (kTile - 1) * g.strideW + (g.s - 1) * g.dilW + 1,
            cps };
    }

    __global__ void __launch_bounds__(kTile* kTile) conv2dTiledKernel(ConvGeometry g, TiledLayout L, int tilesW,
        int tilesH, int kBlocks, const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y)
    {
        extern __shared__ float4 smem4[];
        float* smem = reinterpret_cast<float*>(smem4);
        const int rs = g.r * g.s;
        float* ws = smem; // [cps][r][s][kKpb], first so float4 reads stay 16-byte aligned
        float* patch = smem + L.cps * rs * kKpb; // [cps][patchH][patchW]

        const int cg = g.c / g.groups, kg = g.k / g.groups;
        // One flat grid index (grid.y/z are limited to 65535, too few for depthwise layers at large batch).
        const int tiles = tilesW * tilesH;
        const int tile = blockIdx.x % tiles, rest = blockIdx.x / tiles;
        const int tileY = tile / tilesW, tileX = tile % tilesW;
        const int kBlock = rest % kBlocks;
        const int grp = (rest / kBlocks) % g.groups;
        const int n = rest / (kBlocks * g.groups);
        const int kFirst = kBlock * kKpb; // within the group
        const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
        const int p = tileY * kTile + ty, q = tileX * kTile + tx;
        const int ih0 = tileY * kTile * g.strideH - g.padTop, iw0 = tileX * kTile * g.strideW - g.padLeft;
        const int patchPlane = L.patchH * L.patchW;

        float acc[kKpb];
#pragma unroll
        for (int i = 0; i < kKpb; ++i)
            acc[i] = 0.0f;

        for (int cBase = 0; cBase < cg; cBase += L.cps) {
            // Stage the halo tile of cps channels (zeros for padding and for channels past the group's end).
            for (int i = threadIdx.x; i < L.patchFloats(); i += blockDim.x) {
                const int cc = i / patchPlane, rem = i % patchPlane;
                const int ph = rem / L.patchW, pw = rem % L.patchW;
                const int ih = ih0 + ph, iw = iw0 + pw, c = cBase + cc;
                float v = 0.0f;
                if (c < cg && ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
                    v = x[((static_cast<long long>(n) * g.c + grp * cg + c) * g.h + ih) * g.w + iw];
                patch[i] = v;
            }
            for (int i = threadIdx.x; i < L.cps * rs * kKpb; i += blockDim.x) {
                const int kk = i % kKpb, crs = i / kKpb;
                const int cc = crs / rs, t = crs % rs;
                const int k = kFirst + kk, c = cBase + cc;
                ws[i] = (k < kg && c < cg) ? w[(static_cast<long long>(grp * kg + k) * cg + c) * rs + t] : 0.0f;
            }
            __syncthreads();
            for (int cc = 0; cc < L.cps; ++cc) {
                const float* pp = patch + cc * patchPlane + ty * g.strideH * L.patchW + tx * g.strideW;
                for (int r = 0; r < g.r; ++r) {
                    for (int s = 0; s < g.s; ++s) {
                        const float v = pp[r * g.dilH * L.patchW + s * g.dilW];
                        const float4* wv = reinterpret_cast<const float4*>(ws + ((cc * g.r + r) * g.s + s) * kKpb);
#pragma unroll
                        for (int j = 0; j < kKpb / 4; ++j) {
                            const float4 w4 = wv[j];
                            acc[4 * j + 0] = fmaf(v, w4.x, acc[4 * j + 0]);
                            acc[4 * j + 1] = fmaf(v, w4.y, acc[4 * j + 1]);
                            acc[4 * j + 2] = fmaf(v, w4.z, acc[4 * j + 2]);
                            acc[4 * j + 3] = fmaf(v, w4.w, acc[4 * j + 3]);
                        }
                    }
                }
            }
            __syncthreads();
        }
        if (p >= g.p || q >= g.q)
            return;
#pragma unroll
        for (int kk = 0; kk < kKpb; ++kk) {
            const int k = kFirst + kk;
            if (k < kg) {
                const int kAbs = grp * kg + k;
                const long long at = ((static_cast<long long>(n) * g.k + kAbs) * g.p + p) * g.q + q;
                y[at] = epilogue(g.act, g.actParam, acc[kk] + (bias ? bias[kAbs] : 0.0f) + skipAt(g.residual, at));
            }
        }
    }
} // namespace

bool conv2dSmallApplies(const ConvGeometry& g)
{
    const long long outputs = static_cast<long long>(g.n) * g.k * g.p * g.q;
    const long long reduction = static_cast<long long>(g.c / g.groups) * g.r * g.s;
    return outputs > 0 && outputs <= kSmallMaxOutputs && reduction >= kSmallMinReduction
        && outputs * reduction <= kSmallMaxMacs;
}

std::string conv2dSmallNote(const ConvGeometry& g)
{
    if (tinyKernelSize(g)) {
        const int lanes = tinyLanes(g);
        return "tiny layer: " + std::to_string(g.r) + "x" + std::to_string(g.s) + " taps unrolled, "
            + (lanes == 1 ? std::string("one thread per output")
                          : std::to_string(lanes) + " lanes per output splitting (channel, row) pairs")
            + " (every cuda algorithm)";
    }
    return "tiny layer: split reduction, a warp (8 lanes below 64 taps) per output (every cuda algorithm)";
}

void conv2dSmall(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    const unsigned total = static_cast<unsigned>(static_cast<long long>(g.n) * g.k * g.p * g.q);
    if (tinyKernelSize(g))
        return g.r == 3 ? launchTiny<3>(g, x, w, bias, y, st) : launchTiny<5>(g, x, w, bias, y, st);
    if (static_cast<long long>(g.c / g.groups) * g.r * g.s >= kSmallWarpReduction) {
        constexpr unsigned perBlock = kSmallThreads / 32;
        conv2dSmallKernel<32><<<(total + perBlock - 1) / perBlock, kSmallThreads, 0, st>>>(g, x, w, bias, y, total);
    } else {
        constexpr unsigned perBlock = kSmallThreads / 8;
        conv2dSmallKernel<8><<<(total + perBlock - 1) / perBlock, kSmallThreads, 0, st>>>(g, x, w, bias, y, total);
    }
}

void conv2dDirect(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    const long long total = static_cast<long long>(g.n) * g.k * g.p * g.q;
    const int threads = 256;
    conv2dDirectKernel<<<static_cast<unsigned>((total + threads - 1) / threads), threads, 0, st>>>(g, x, w, bias, y);
}

size_t conv2dTiledSharedBytes(const ConvGeometry& g, int cps)
{
    const TiledLayout L = tiledLayout(g, cps);
    return (static_cast<size_t>(L.patchFloats()) + static_cast<size_t>(cps) * g.r * g.s * kKpb) * sizeof(float);
}

int conv2dTiledChannelsPerStage(const ConvGeometry& g)
{
    const int cg = g.c / g.groups;
    for (int cps : { 8, 4, 2, 1 }) {
        if (cps > cg && cps > 1)
            continue; // no point staging channels the group does not have
        if (conv2dTiledSharedBytes(g, cps) <= kTiledSharedLimit)
            return cps;
    }
    return 0;
}

void conv2dTiled(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    const int cps = conv2dTiledChannelsPerStage(g);
    if (cps == 0)
        throw UnsupportedError("cuda.tiled: the input tile with its halo needs "
            + std::to_string(conv2dTiledSharedBytes(g, 1) / 1024) + " KB of shared memory (limit 48 KB)");
    const TiledLayout L = tiledLayout(g, cps);
    const int tilesW = (g.q + kTile - 1) / kTile, tilesH = (g.p + kTile - 1) / kTile;
    const int kBlocks = (g.k / g.groups + kKpb - 1) / kKpb;
    const long long blocks = static_cast<long long>(tilesW) * tilesH * kBlocks * g.groups * g.n;
    conv2dTiledKernel<<<static_cast<unsigned>(blocks), kTile * kTile, conv2dTiledSharedBytes(g, cps), st>>>(
        g, L, tilesW, tilesH, kBlocks, x, w, bias, y);
}

} // namespace convscope::cuda
