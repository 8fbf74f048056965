// conv_transpose3d's phase-tiled kernel (transposed_phase_tiled.h says why and how): every stride phase in one launch,
// a phase's taps of KT output channels staged in shared memory, U outputs down a column × KT channels a thread.
#include "kernels/cuda/conv_transpose3d_phase.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/transposed_phase_tiled.h"

#include <algorithm>

namespace convscope::cuda {

namespace {
    template <int KT, int U>
    __global__ void __launch_bounds__(kTiledThreads) tiledKernel(TiledPhases p, const float* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y)
    {
        __shared__ float ws[kTiledSharedFloats];
        const int phase = int(blockIdx.y);
        const TiledAxis pd = p.ad[phase / (p.sh * p.sw)], ph = p.ah[phase / p.sw % p.sh], pw = p.aw[phase % p.sw];
        if (pd.count == 0 || ph.count == 0 || pw.count == 0) // the same for the whole block
            return;
        const int kg = p.k / p.groups, ktiles = (kg + KT - 1) / KT;
        const int grp = int(blockIdx.z) / ktiles, k0 = int(blockIdx.z) % ktiles * KT;
        int img = 0, a = 0, u0 = 0, v = 0;
        const bool active
            = tiledPosition<U>(p, pd, ph, pw, (long long)blockIdx.x * blockDim.x + threadIdx.x, img, a, u0, v);
        float acc[U][KT];
#pragma unroll
        for (int kt = 0; kt < KT; ++kt) {
            const float b = bias && k0 + kt < kg ? bias[grp * kg + k0 + kt] : 0.0f;
#pragma unroll
            for (int t = 0; t < U; ++t)
                acc[t][kt] = b;
        }
        if (pd.taps > 0 && ph.taps > 0 && pw.taps > 0) { // else the bias alone, as the phase must get
            const int cg = p.c / p.groups;
            for (int c0 = 0; c0 < cg; c0 += p.chunk) {
                __syncthreads(); // the previous chunk's taps are read
                tiledStageTaps<KT>(p, pd, ph, pw, grp, k0, c0, w, ws, int(threadIdx.x), int(blockDim.x));
                __syncthreads();
                if (!active)
                    continue;
                tiledAccumulateAny<KT, U>(p, pd, ph, pw, grp, c0, img, a, u0, v, x, ws, acc);
            }
        }
        if (!active)
            return;
#pragma unroll
        for (int t = 0; t < U; ++t)
#pragma unroll
            for (int kt = 0; kt < KT; ++kt)
                if (u0 + t < ph.count && k0 + kt < kg)
                    y[tiledOutputIndex(p, pd, ph, pw, img, grp * kg + k0 + kt, a, u0 + t, v)] = acc[t][kt];
    }

    // KT output channels a block and U rows a thread: 16 × 2 on wide layers, 4 × 4 where 16 would leave
    // multiprocessors idle or the group has fewer channels, 1 × 8 for one channel a group (or taps too many to stage
    // for more).
    struct Tiling {
        int kt = 0, u = 0;
    };

    long long blocksOf(const Conv3dGeometry& t, Tiling tl)
    {
        const long long blocks = (tiledPositions(tiledPhasesOf(t, tl.kt, tl.u)) + kTiledThreads - 1) / kTiledThreads;
        return blocks * t.sd * t.sh * t.sw * t.groups * ((t.k / t.groups + tl.kt - 1) / tl.kt);
    }

    Tiling tilingOf(const Conv3dGeometry& t, int sms, int pinned)
    {
        const int kg = t.k / t.groups, taps = tiledMaxTaps(t);
        if (pinned > 0 && taps * pinned <= kTiledSharedFloats) // --option transposed_tile, where the taps fit
            return { pinned, pinned == 16 ? 2 : pinned == 4 ? 4 : 8 };
        if (kg >= 16 && taps * 16 <= kTiledSharedFloats && blocksOf(t, { 16, 2 }) >= 2LL * sms)
            return { 16, 2 };
        if (kg >= 2 && taps * 4 <= kTiledSharedFloats)
            return { 4, 4 };
        return { 1, 8 };
    }

    template <int KT, int U>
    void launch(
        const TiledPhases& p, int zBlocks, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
    {
        const long long xBlocks = (tiledPositions(p) + kTiledThreads - 1) / kTiledThreads;
        const dim3 grid(unsigned(xBlocks), unsigned(p.sd * p.sh * p.sw), unsigned(zBlocks));
        tiledKernel<KT, U><<<grid, kTiledThreads, 0, st>>>(p, x, w, bias, y);
        CONVSCOPE_CUDA_CHECK_LAUNCH("convTranspose3dTiled");
    }
} // namespace

bool convTranspose3dTiledApplies(const Conv3dGeometry& t)
{
    const long long zBlocks = (long long)t.groups * (t.k / t.groups); // at most, with one channel a block
    const long long positions = (long long)t.n * t.od * t.oh * t.ow; // more than any phase's
    return t.sd <= kTiledMaxStride && t.sh <= kTiledMaxStride && t.sw <= kTiledMaxStride
        && tiledMaxTaps(t) <= kTiledSharedFloats && zBlocks <= 65535 && positions / kTiledThreads < (1LL << 31) - 1;
}

std::string convTranspose3dTiledNote(const Conv3dGeometry& t, int smCount, int tileKt)
{
    const Tiling tl = tilingOf(t, smCount, tileKt);
    const TiledPhases p = tiledPhasesOf(t, tl.kt, tl.u);
    return std::to_string(t.sd * t.sh * t.sw) + " stride phases in one launch, " + std::to_string(tiledMaxTaps(t))
        + " taps each at most, staged " + std::to_string(p.chunk) + " input channels at a time; " + std::to_string(tl.u)
        + " rows x " + std::to_string(tl.kt) + " channels a thread";
}

void convTranspose3dTiled(const Conv3dGeometry& t, const float* x, const float* w, const float* bias, float* y,
    int smCount, cudaStream_t st, int tileKt)
{
    const Tiling tl = tilingOf(t, smCount, tileKt);
    const TiledPhases p = tiledPhasesOf(t, tl.kt, tl.u);
    const int zBlocks = t.groups * ((t.k / t.groups + tl.kt - 1) / tl.kt);
    if (tl.kt == 16)
        launch<16, 2>(p, zBlocks, x, w, bias, y, st);
    else if (tl.kt == 4)
        launch<4, 4>(p, zBlocks, x, w, bias, y, st);
    else
        launch<1, 8>(p, zBlocks, x, w, bias, y, st);
}

} // namespace convscope::cuda
