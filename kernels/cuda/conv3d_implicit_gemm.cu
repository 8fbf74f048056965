// conv3d as an implicit GEMM (cuda.implicit_gemm on volumes).
//
// The GEMM. Per group, C[m][n] = Σ_r A[m][r] · B[r][n] with
//   m = (image, z, y, x) over the output positions, M = N·OD·OH·OW,
//   n = the group's output channel, Kg = K / groups,
//   r = (c, a, b, e) over the group's input channels and the kd·kh·kw taps, R = C/groups · kd·kh·kw,
//   A[m][r] = x[image, c, z·sd − front + a·dd, y·sh − top + b·dh, x·sw − left + e·dw] (zero outside the input),
//   B[r][n] = w[n, r] (the weights are already [K, R] in memory).
// A is never written out (the "implicit" part): each block gathers the BK×BM slice of A it needs straight from the
// input. What would cost a division chain per element — splitting r into (c, a, b, e) — is a table built once at
// prepare: for every r, the input offset of the tap relative to the window's corner and the tap's (dz, dy, dx) for
// the bounds test. Each thread splits its own output position m once, before the reduction loop.
//
// Tiles. A block of 128 threads computes a BM×BN tile of C, each thread TM×TN of it in registers, over BK = 16
// reduction steps per stage. Stages are double-buffered: the next stage's A and B elements are loaded into registers
// while this stage's are multiplied out of shared memory, then stored to the other buffer, one barrier per stage.
// The tile shape follows the layer's output channels, which in volume networks are few (the lecture's autoencoder
// has 32, 16 and 8): BN is the smallest of 8, 16, 32 and 64 that holds Kg (64 beyond), and BM grows as BN shrinks
// so every thread still does TM·TN ≥ 8 multiply-adds per shared-memory load pair:
//   BN 8:  128×8,  4×2 per thread      BN 16: 256×16, 8×4      BN 32: 256×32, 8×8      BN 64: 128×64, 8×8
// A fixed 128×128 tile (the 2-D kernel's) would leave 3/4 to 15/16 of every block idle on those layers.
//
// Split reduction. A layer with few output positions and a long reduction (the encoder's last layer: M = 512 at
// batch 64, R = 2000) makes too few blocks to fill the device. The launcher then splits the reduction over up to 32
// blocks per tile, each writing its partial tile to scratch, and a second kernel adds the partials and the bias in
// a fixed order (deterministic, unlike atomics).
#include "kernels/cuda/conv3d.cuh"

#include "kernels/common/cuda_check.h"

#include <algorithm>

namespace convscope::cuda {

namespace {
    constexpr int kThreads = 128;
    constexpr int kBK = 16;
    constexpr int kMaxSplits = 32;
    constexpr size_t kMaxPartialBytes = size_t(256) << 20;

    // The tap table: for reduction index r, the input offset of the tap from the window corner (channel, depth, row
    // and column together) and its (dz, dy, dx).
    __global__ void conv3dTapTableKernel(Conv3dGeometry g, int4* table, int taps)
    {
        const int r = blockIdx.x * blockDim.x + threadIdx.x;
        if (r >= taps)
            return;
        const int per = g.kd * g.kh * g.kw;
        const int c = r / per, t = r - c * per;
        const int a = t / (g.kh * g.kw), b = (t / g.kw) % g.kh, e = t % g.kw;
        const int dz = a * g.dd, dy = b * g.dh, dx = e * g.dw;
        table[r] = make_int4((c * g.d + dz) * g.h * g.w + dy * g.w + dx, dz, dy, dx);
    }

    struct Shape3 {
        int reduction; // R
        int kTiles; // ⌈R / BK⌉
        int m; // M
        int kg; // output channels per group
    };

    Shape3 gemmShape(const Conv3dGeometry& g)
    {
        const int reduction = g.c / g.groups * g.kd * g.kh * g.kw;
        return { reduction, (reduction + kBK - 1) / kBK, g.n * g.od * g.oh * g.ow, g.k / g.groups };
    }

    struct Tile {
        int bm, bn, tm, tn;
    };

    Tile tileFor(const Conv3dGeometry& g)
    {
        const int kg = g.k / g.groups;
        if (kg <= 8)
            return { 128, 8, 4, 2 };
        if (kg <= 16)
            return { 256, 16, 8, 4 };
        if (kg <= 32)
            return { 256, 32, 8, 8 };
        return { 128, 64, 8, 8 };
    }

    // How many ways the reduction is split: enough blocks for about six per multiprocessor, at least four stages
    // per split, and partial sums that fit the scratch cap.
    int splitsFor(const Conv3dGeometry& g, int smCount)
    {
        const Shape3 s = gemmShape(g);
        const Tile t = tileFor(g);
        const long long blocks
            = static_cast<long long>((s.m + t.bm - 1) / t.bm) * ((s.kg + t.bn - 1) / t.bn) * g.groups;
        const long long want = 6LL * std::max(1, smCount);
        if (blocks >= want)
            return 1;
        const long long out = static_cast<long long>(g.n) * g.k * g.od * g.oh * g.ow;
        long long splits = (want + blocks - 1) / blocks;
        splits = std::min<long long>({ splits, s.kTiles / 4, kMaxSplits,
            static_cast<long long>(kMaxPartialBytes / (sizeof(float) * std::max(1LL, out))) });
        return static_cast<int>(std::max(1LL, splits));
    }

    size_t tableBytes(const Conv3dGeometry& g)
    {
        return (sizeof(int4) * size_t(gemmShape(g).reduction) + 255) / 256 * 256;
    }

    template <int BM, int BN, int TM, int TN>
    __global__ void __launch_bounds__(kThreads) conv3dIgemmKernel(Conv3dGeometry g, const float* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y, float* __restrict__ partial,
        const int4* __restrict__ table, int tilesPerSplit, int splits)
    {
        static_assert((BM / TM) * (BN / TN) == kThreads, "one thread per TM×TN sub-tile");
        static_assert(BM % kThreads == 0 && (kBK * BN) % kThreads == 0, "whole loads per thread");
        constexpr int RM = BM / kThreads; // output positions whose A column each thread gathers
        constexpr int RB = kBK * BN / kThreads; // B elements each thread loads per stage
        __shared__ __align__(16) float As[2][kBK][BM];
        __shared__ __align__(16) float Bs[2][kBK][BN];

        const int tid = threadIdx.x;
        const int cg = g.c / g.groups, kg = g.k / g.groups;
        const int reduction = cg * g.kd * g.kh * g.kw;
        const int odhw = g.od * g.oh * g.ow, ohw = g.oh * g.ow;
        const int mTotal = g.n * odhw;
        const int group = blockIdx.z / splits, split = blockIdx.z - group * splits;
        const int mBase = blockIdx.x * BM, nBase = blockIdx.y * BN;
        const int kTiles = (reduction + kBK - 1) / kBK;
        const int t0 = split * tilesPerSplit, t1 = min(kTiles, t0 + tilesPerSplit);

        // This thread's output positions for the A gather: the window corner and its input offset.
        int base[RM], z0[RM], y0[RM], x0[RM];
        bool valid[RM];
        const int dhw = g.d * g.h * g.w;
#pragma unroll
        for (int i = 0; i < RM; ++i) {
            const int m = mBase + tid + i * kThreads;
            valid[i] = m < mTotal;
            const int mm = valid[i] ? m : 0;
            const int image = mm / odhw, s = mm - image * odhw;
            const int oz = s / ohw, oy = (s / g.ow) % g.oh, ox = s % g.ow;
            z0[i] = oz * g.sd - g.pd;
            y0[i] = oy * g.sh - g.ph;
            x0[i] = ox * g.sw - g.pw;
            base[i] = (image * g.c + group * cg) * dhw + z0[i] * g.h * g.w + y0[i] * g.w + x0[i];
        }
        const float* wg = w + size_t(group) * kg * reduction;

        float aReg[RM][kBK];
        float bReg[RB];
        auto load = [&](int tile) {
            const int r0 = tile * kBK;
#pragma unroll
            for (int k = 0; k < kBK; ++k) {
                const int r = r0 + k;
                const int4 tap = r < reduction ? __ldg(table + r) : make_int4(0, -1 << 30, 0, 0);
#pragma unroll
                for (int i = 0; i < RM; ++i) {
                    const int iz = z0[i] + tap.y, iy = y0[i] + tap.z, ix = x0[i] + tap.w;
                    const bool in = valid[i] && unsigned(iz) < unsigned(g.d) && unsigned(iy) < unsigned(g.h)
                        && unsigned(ix) < unsigned(g.w);
                    aReg[i][k] = in ? __ldg(x + base[i] + tap.x) : 0.0f;
                }
            }
#pragma unroll
            for (int j = 0; j < RB; ++j) {
                const int e = tid + j * kThreads;
                const int k = e % kBK, n = e / kBK;
                const int r = r0 + k;
                bReg[j] = (r < reduction && nBase + n < kg) ? __ldg(wg + size_t(nBase + n) * reduction + r) : 0.0f;
            }
        };
        auto store = [&](int buf) {
#pragma unroll
            for (int k = 0; k < kBK; ++k)
#pragma unroll
                for (int i = 0; i < RM; ++i)
                    As[buf][k][tid + i * kThreads] = aReg[i][k];
#pragma unroll
            for (int j = 0; j < RB; ++j) {
                const int e = tid + j * kThreads;
                Bs[buf][e % kBK][e / kBK] = bReg[j];
            }
        };

        const int tn = tid % (BN / TN), tm = tid / (BN / TN);
        float acc[TM][TN] = {};
        if (t0 < t1) {
            load(t0);
            store(0);
        }
        __syncthreads();
        int buf = 0;
        for (int tile = t0; tile < t1; ++tile) {
            const bool more = tile + 1 < t1;
            if (more)
                load(tile + 1); // in flight while this stage is multiplied out
#pragma unroll
            for (int k = 0; k < kBK; ++k) {
                float a[TM], b[TN];
#pragma unroll
                for (int i = 0; i < TM; i += 4) {
                    const float4 v = *reinterpret_cast<const float4*>(&As[buf][k][tm * TM + i]);
                    a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
                }
                if constexpr (TN % 4 == 0) {
#pragma unroll
                    for (int j = 0; j < TN; j += 4) {
                        const float4 v = *reinterpret_cast<const float4*>(&Bs[buf][k][tn * TN + j]);
                        b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < TN; ++j)
                        b[j] = Bs[buf][k][tn * TN + j];
                }
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j)
                        acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
            if (more)
                store(buf ^ 1);
            __syncthreads();
            buf ^= 1;
        }

        // Epilogue: C[m][n] is y[image, group·Kg + n, s]; consecutive threads of a warp hold consecutive runs of m.
        const size_t outTotal = size_t(g.n) * g.k * odhw;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int m = mBase + tm * TM + i;
            if (m >= mTotal)
                continue;
            const int image = m / odhw, s = m - image * odhw;
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                const int n = nBase + tn * TN + j;
                if (n >= kg)
                    continue;
                const int co = group * kg + n;
                const size_t at = (size_t(image) * g.k + co) * odhw + s;
                if (splits == 1)
                    y[at] = acc[i][j] + (bias ? __ldg(bias + co) : 0.0f);
                else
                    partial[size_t(split) * outTotal + at] = acc[i][j];
            }
        }
    }

    // The split reduction's second pass: the partials in split order, then the bias.
    __global__ void conv3dSplitSumKernel(const float* __restrict__ partial, const float* __restrict__ bias,
        float* __restrict__ y, unsigned total, int splits, int channels, unsigned odhw)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            float sum = 0.0f;
            for (int s = 0; s < splits; ++s)
                sum += partial[size_t(s) * total + idx];
            y[idx] = sum + (bias ? __ldg(bias + (idx / odhw) % channels) : 0.0f);
        }
    }

    template <int BM, int BN, int TM, int TN>
    void launch(const Conv3dGeometry& g, const float* x, const float* w, const float* bias, float* y, float* partial,
        const int4* table, int splits, cudaStream_t st)
    {
        const Shape3 s = gemmShape(g);
        const int per = (s.kTiles + splits - 1) / splits;
        const dim3 grid((s.m + BM - 1) / BM, (s.kg + BN - 1) / BN, g.groups * splits);
        conv3dIgemmKernel<BM, BN, TM, TN><<<grid, kThreads, 0, st>>>(g, x, w, bias, y, partial, table, per, splits);
    }
} // namespace

size_t conv3dImplicitGemmScratchBytes(const Conv3dGeometry& g, int smCount)
{
    const int splits = splitsFor(g, smCount);
    const size_t out = size_t(g.n) * g.k * g.od * g.oh * g.ow;
    return tableBytes(g) + (splits > 1 ? sizeof(float) * out * size_t(splits) : 0);
}

void conv3dImplicitGemmPrepare(const Conv3dGeometry& g, void* scratch, cudaStream_t st)
{
    const int taps = gemmShape(g).reduction;
    conv3dTapTableKernel<<<(taps + 255) / 256, 256, 0, st>>>(g, static_cast<int4*>(scratch), taps);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv3dTapTableKernel");
}

std::string conv3dImplicitGemmVariant(const Conv3dGeometry& g, int smCount)
{
    const Tile t = tileFor(g);
    const int splits = splitsFor(g, smCount);
    std::string note = std::to_string(t.bm) + "x" + std::to_string(t.bn) + " tiles, " + std::to_string(t.tm) + "x"
        + std::to_string(t.tn) + " per thread, tap table";
    if (splits > 1)
        note += ", reduction split " + std::to_string(splits) + " ways";
    return note;
}

void conv3dImplicitGemm(const Conv3dGeometry& g, const float* x, const float* w, const float* bias, float* y,
    void* scratch, int smCount, cudaStream_t st)
{
    const Shape3 s = gemmShape(g);
    if (s.m == 0 || g.k == 0)
        return;
    const int splits = splitsFor(g, smCount);
    const auto* table = static_cast<const int4*>(scratch);
    float* partial = splits > 1 ? reinterpret_cast<float*>(static_cast<char*>(scratch) + tableBytes(g)) : nullptr;
    const Tile t = tileFor(g);
    if (t.bn == 8)
        launch<128, 8, 4, 2>(g, x, w, bias, y, partial, table, splits, st);
    else if (t.bn == 16)
        launch<256, 16, 8, 4>(g, x, w, bias, y, partial, table, splits, st);
    else if (t.bn == 32)
        launch<256, 32, 8, 8>(g, x, w, bias, y, partial, table, splits, st);
    else
        launch<128, 64, 8, 8>(g, x, w, bias, y, partial, table, splits, st);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv3dIgemmKernel");
    if (splits > 1) {
        const unsigned total = unsigned(size_t(g.n) * g.k * g.od * g.oh * g.ow);
        const unsigned blocks = std::min<unsigned>((total + 255) / 256, 1u << 30);
        conv3dSplitSumKernel<<<blocks, 256, 0, st>>>(
            partial, bias, y, total, splits, g.k, unsigned(g.od * g.oh * g.ow));
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv3dSplitSumKernel");
    }
}

} // namespace convscope::cuda
