// conv_transpose3d's phase-tiled kernel (conv_transpose3d_tiled.cu), its index arithmetic and per-thread work as
// host-and-device functions, so that the CPU tests emulate the kernel block by block
// (tests/training/transposed_phase_tiled_test.cpp).
//
// Why. The layers whose stride phases do not pay as GEMMs (conv_transpose3d_phase.cuh: many phases of few outputs,
// or few output channels a group — the autoencoder's 8→16 5³ stride-4 layer has 64 phases, its 32→1 output layer one
// channel) ran the gather kernel, whose threads test all kd·kh·kw taps of every input channel and keep one in
// sd·sh·sw, reading input and weight from global memory for each multiply-add. Here a block owns one stride phase
// (blockIdx.y: every phase in one launch), KT output channels of one group (blockIdx.z) and 128 positions of the
// phase's outputs (blockIdx.x). It stages the phase's taps of those channels — a chunk of input channels at a time —
// in shared memory as [c][jd][jh][jw][KT], so no thread visits a tap that does not reach its outputs and the warp never
// diverges on the stride tests; each thread computes U outputs down a column of the phase (consecutive phase rows)
// times KT channels. Along h, output row u + t reads input row u + t + base − jh·Δ (transposed_phase_plan.h's
// classes: taps r_j = tap0 + j·tapStep, Δ the class's dilation), so with Δ = 1 the U rows share a window of
// U + TH − 1 input rows, loaded once into registers and each used for up to TH·KT multiply-adds; lanes hold
// consecutive phase columns, i.e. consecutive input columns: coalesced loads.
#pragma once

#include "kernels/common/host_device.h"
#include "kernels/cuda/transposed_phase_plan.h"

#include <algorithm>
#include <numeric>
#include <vector>

// Unrolled in the device pass only (the host compiler, the CPU tests included, warns of an unknown pragma).
#if defined(__CUDA_ARCH__)
#define CONVSCOPE_TILED_UNROLL _Pragma("unroll")
#else
#define CONVSCOPE_TILED_UNROLL
#endif

namespace convscope::cuda {

constexpr int kTiledMaxStride = 8; // per axis: a larger stride keeps the gather kernel
constexpr int kTiledSharedFloats = 4096; // 16 KB of staged taps a block
constexpr int kTiledThreads = 128;

// One axis's class as the kernel reads it: the plan's PhaseAxis plus `base`, the input index that phase output 0
// reads through tap 0: output u reads u + base − j·dil through tap j (an exact division: tap0·d ≡ first + pad mod s).
struct TiledAxis {
    int first, count;
    int tap0, tapStep, taps, dil;
    int base;
};

// The layer and its phases, passed by value to the kernel.
struct TiledPhases {
    int n, c, d, h, w; // input
    int k, od, oh, ow; // output
    int kd, kh, kw; // kernel
    int sd, sh, sw; // strides: the number of classes per axis
    int groups;
    int chunk; // input channels staged at a time
    int maxD, maxRowGroups, maxW; // the largest class's outputs along d, its groups of U rows along h, along w
    TiledAxis ad[kTiledMaxStride], ah[kTiledMaxStride], aw[kTiledMaxStride];
};

CONVSCOPE_HD TiledAxis tiledAxis(const PhaseAxis& a, int stride, int pad, int dil)
{
    return { a.first, a.count, a.tap0, a.tapStep, a.taps, a.dil,
        a.taps > 0 ? (a.first + pad - a.tap0 * dil) / stride : 0 };
}

// The most taps a phase has: the product over the axes of ⌈kernel / tapStep⌉.
template <class G> int tiledMaxTaps(const G& t)
{
    const auto axisMax = [](int stride, int dil, int kernel) {
        const int step = stride / std::gcd(stride, dil);
        return (kernel + step - 1) / step;
    };
    return axisMax(t.sd, t.dd, t.kd) * axisMax(t.sh, t.dh, t.kh) * axisMax(t.sw, t.dw, t.kw);
}

// The kernel's parameters for layer t (Conv3dGeometry's fields: n, c, d, h, w, k, od, oh, ow, kd, kh, kw, sd, sh, sw,
// pd, ph, pw, dd, dh, dw, groups) at KT channels a block and U rows a thread. Strides at most kTiledMaxStride.
template <class G> TiledPhases tiledPhasesOf(const G& t, int kt, int u)
{
    TiledPhases p {};
    p.n = t.n, p.c = t.c, p.d = t.d, p.h = t.h, p.w = t.w;
    p.k = t.k, p.od = t.od, p.oh = t.oh, p.ow = t.ow;
    p.kd = t.kd, p.kh = t.kh, p.kw = t.kw;
    p.sd = t.sd, p.sh = t.sh, p.sw = t.sw;
    p.groups = t.groups;
    p.chunk = std::max(1, std::min(t.c / t.groups, kTiledSharedFloats / (tiledMaxTaps(t) * kt)));
    p.maxD = p.maxRowGroups = p.maxW = 1;
    const auto fill = [](int out, int stride, int pad, int dil, int kernel, TiledAxis* axes, int& most, int per) {
        int i = 0;
        for (const PhaseAxis& a : phaseAxes(out, stride, pad, dil, kernel)) {
            axes[i++] = tiledAxis(a, stride, pad, dil);
            most = std::max(most, (a.count + per - 1) / per);
        }
    };
    fill(t.od, t.sd, t.pd, t.dd, t.kd, p.ad, p.maxD, 1);
    fill(t.oh, t.sh, t.ph, t.dh, t.kh, p.ah, p.maxRowGroups, u);
    fill(t.ow, t.sw, t.pw, t.dw, t.kw, p.aw, p.maxW, 1);
    return p;
}

// Threads over n × maxD × maxRowGroups × maxW (the grid's x), for every phase.
inline long long tiledPositions(const TiledPhases& p) { return (long long)p.n * p.maxD * p.maxRowGroups * p.maxW; }

// Stages taps [c0, c0 + chunk) of channels [k0, k0 + KT) (within group grp) of phase (pd, ph, pw) into ws as
// [c][jd][jh][jw][KT]; element e of the stage is written by the thread with e % threads == tid. Channels past the
// group's (k0 + kt ≥ k/groups) and input channels past it get zeros.
template <int KT>
CONVSCOPE_HD void tiledStageTaps(const TiledPhases& p, const TiledAxis& pd, const TiledAxis& ph, const TiledAxis& pw,
    int grp, int k0, int c0, const float* w, float* ws, int tid, int threads)
{
    const int cg = p.c / p.groups, kg = p.k / p.groups;
    const int taps = pd.taps * ph.taps * pw.taps, total = p.chunk * taps * KT;
    for (int e = tid; e < total; e += threads) {
        const int kt = e % KT, tap = (e / KT) % taps, cc = e / (KT * taps);
        const int jd = tap / (ph.taps * pw.taps), jh = (tap / pw.taps) % ph.taps, jw = tap % pw.taps;
        const int c = c0 + cc, k = k0 + kt;
        float v = 0.0f;
        if (c < cg && k < kg) {
            const int rd = pd.tap0 + jd * pd.tapStep, rh = ph.tap0 + jh * ph.tapStep, rw = pw.tap0 + jw * pw.tapStep;
            v = w[((((long long)(grp * cg + c) * kg + k) * p.kd + rd) * p.kh + rh) * p.kw + rw];
        }
        ws[e] = v;
    }
}

// One thread's U × KT outputs, accumulated in acc[t][kt] over the staged chunk: image img, phase outputs a (depth),
// rows u0 … u0 + U − 1, column v. TH > 0: the phase has TH row taps at dilation 1 (the register window); TH = 0: any.
template <int KT, int U, int TH>
CONVSCOPE_HD void tiledAccumulate(const TiledPhases& p, const TiledAxis& pd, const TiledAxis& ph, const TiledAxis& pw,
    int grp, int c0, int img, int a, int u0, int v, const float* x, const float* ws, float (&acc)[U][KT])
{
    const int cg = p.c / p.groups;
    const int chunk = cg - c0 < p.chunk ? cg - c0 : p.chunk;
    const int th = TH > 0 ? TH : ph.taps;
    for (int cc = 0; cc < chunk; ++cc) {
        const float* xc = x + ((long long)img * p.c + grp * cg + c0 + cc) * p.d * p.h * p.w;
        for (int jd = 0; jd < pd.taps; ++jd) {
            const int id = a + pd.base - jd * pd.dil;
            if (id < 0 || id >= p.d)
                continue;
            const float* plane = xc + (long long)id * p.h * p.w;
            for (int jw = 0; jw < pw.taps; ++jw) {
                const int iw = v + pw.base - jw * pw.dil;
                if (iw < 0 || iw >= p.w)
                    continue;
                const float* wt = ws + ((cc * pd.taps + jd) * th * pw.taps + jw) * KT; // + jh·taps_w·KT
                if constexpr (TH > 0) {
                    // Rows u0 + base − (TH − 1) + e, e < U + TH − 1: output row u0 + t meets window row e through
                    // tap jh = t + TH − 1 − e.
                    float win[U + TH - 1];
                    CONVSCOPE_TILED_UNROLL
                    for (int e = 0; e < U + TH - 1; ++e) {
                        const int ih = u0 + ph.base - (TH - 1) + e;
                        win[e] = ih >= 0 && ih < p.h ? plane[(long long)ih * p.w + iw] : 0.0f;
                    }
                    CONVSCOPE_TILED_UNROLL
                    for (int jh = 0; jh < TH; ++jh) {
                        float wk[KT];
                        CONVSCOPE_TILED_UNROLL
                        for (int kt = 0; kt < KT; ++kt)
                            wk[kt] = wt[jh * pw.taps * KT + kt];
                        CONVSCOPE_TILED_UNROLL
                        for (int t = 0; t < U; ++t) {
                            CONVSCOPE_TILED_UNROLL
                            for (int kt = 0; kt < KT; ++kt)
                                acc[t][kt] += win[t + TH - 1 - jh] * wk[kt];
                        }
                    }
                } else {
                    for (int jh = 0; jh < th; ++jh) {
                        const float* wk = wt + jh * pw.taps * KT;
                        CONVSCOPE_TILED_UNROLL
                        for (int t = 0; t < U; ++t) {
                            const int ih = u0 + t + ph.base - jh * ph.dil;
                            if (ih < 0 || ih >= p.h)
                                continue;
                            const float xv = plane[(long long)ih * p.w + iw];
                            CONVSCOPE_TILED_UNROLL
                            for (int kt = 0; kt < KT; ++kt)
                                acc[t][kt] += xv * wk[kt];
                        }
                    }
                }
            }
        }
    }
}

// tiledAccumulate with the row taps' register window where the phase has 1–3 row taps at dilation 1.
template <int KT, int U>
CONVSCOPE_HD void tiledAccumulateAny(const TiledPhases& p, const TiledAxis& pd, const TiledAxis& ph,
    const TiledAxis& pw, int grp, int c0, int img, int a, int u0, int v, const float* x, const float* ws,
    float (&acc)[U][KT])
{
    switch (ph.dil == 1 ? ph.taps : 0) {
    case 1:
        tiledAccumulate<KT, U, 1>(p, pd, ph, pw, grp, c0, img, a, u0, v, x, ws, acc);
        break;
    case 2:
        tiledAccumulate<KT, U, 2>(p, pd, ph, pw, grp, c0, img, a, u0, v, x, ws, acc);
        break;
    case 3:
        tiledAccumulate<KT, U, 3>(p, pd, ph, pw, grp, c0, img, a, u0, v, x, ws, acc);
        break;
    default:
        tiledAccumulate<KT, U, 0>(p, pd, ph, pw, grp, c0, img, a, u0, v, x, ws, acc);
        break;
    }
}

// Thread `pos` of phase (pd, ph, pw): its image, depth output, first row and column (positions run over
// n × maxD × maxRowGroups × maxW, the column fastest); false when the phase has no such output.
template <int U>
CONVSCOPE_HD bool tiledPosition(const TiledPhases& p, const TiledAxis& pd, const TiledAxis& ph, const TiledAxis& pw,
    long long pos, int& img, int& a, int& u0, int& v)
{
    v = int(pos % p.maxW);
    const long long rest = pos / p.maxW;
    u0 = int(rest % p.maxRowGroups) * U;
    a = int(rest / p.maxRowGroups % p.maxD);
    img = int(rest / p.maxRowGroups / p.maxD);
    return img < p.n && a < pd.count && u0 < ph.count && v < pw.count;
}

// y's index of the thread's output t, channel k (of the whole layer).
CONVSCOPE_HD long long tiledOutputIndex(const TiledPhases& p, const TiledAxis& pd, const TiledAxis& ph,
    const TiledAxis& pw, int img, int k, int a, int u, int v)
{
    return ((((long long)img * p.k + k) * p.od + pd.first + (long long)p.sd * a) * p.oh + ph.first
               + (long long)p.sh * u)
        * p.ow
        + pw.first + (long long)p.sw * v;
}

} // namespace convscope::cuda
