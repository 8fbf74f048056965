// A transposed convolution as stride-1 convolutions, one per stride phase (host-only arithmetic, and the tap gather as
// a host-and-device function). It serves the cuda training session's conv2d backward-data (the transposed
// convolution of dy with conv2d's weight) and conv_transpose2d forward (transposed_phase_gemm.cu), cuda.implicit_gemm's
// conv_transpose2d in inference (the same launches) and conv_transpose3d (conv_transpose3d_phase.cu): per axis the
// classes below, a layer's classes their product.
//
// Why. y[oh] = Σ_{ih, r : ih·s − pad + r·d = oh} x[ih]·W[r] along one axis (s stride, d dilation, pad the top crop).
// Which taps reach output oh depends only on b = (oh + pad) mod s: those with r·d ≡ b (mod s), i.e. r_j = r0 + j·rstep
// (rstep = s / gcd(s, d)), at ih = a − m_j where oh + pad = s·a + b and m_j = (r_j·d − b)/s = m_0 + j·Δ, Δ = rstep·d/s.
// Along the outputs of one class, u = a − a_first (a_first the first a with oh ≥ 0), flipping the taps
// (j' = J − 1 − j) turns the sum into a correlation: y_b[u] = Σ_j' x[u − padBefore + j'·Δ]·W[r_{J−1−j'}] with
// padBefore = m_{J−1} − a_first. So each class is an ordinary stride-1 convolution of x (dilation Δ, that padding,
// the taps gathered and flipped, the weight's two channel roles exchanged) whose output is every s-th row of y
// starting at `first` — and the forward's pipelined implicit GEMM can run it. With stride 1 there is one class, the
// whole output, and the convolution is the familiar "dy with the flipped kernel, padding d·(R − 1) − pad".
// A class no tap reaches (a kernel smaller than the stride) gets only the bias. A class whose padBefore would be
// negative — its nearest tap behind its first output: a crop beyond the dilated kernel's reach, or a stride larger
// than the kernel with a crop — is not an ordinary convolution: transposedPhasePlanApplies then says no, and the
// caller keeps its other kernel. The strided layers of ResNet, DCGAN and U-Net all apply (the tests list them).
#pragma once

#include "kernels/common/host_device.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace convscope::cuda {

// A convolution's or transposed convolution's geometry as plain ints (ConvGeometry's fields, without CUDA's headers,
// so the CPU tests can include this): input [n, c, h, w], output [n, k, p, q].
struct PhaseShape {
    int n, c, h, w;
    int k, p, q;
    int r, s;
    int strideH, strideW, padTop, padLeft, dilH, dilW;
    int groups;
};

// One axis's class b: its outputs first, first + s, … (count of them) and its taps r0, r0 + step, … (taps of them).
struct PhaseAxis {
    int first = 0, count = 0;
    int tap0 = 0, tapStep = 1, taps = 0;
    int dil = 1; // Δ: the class convolution's dilation
    int padBefore = 0; // may be negative: then the plan does not apply
};

inline int floorDiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The classes of one axis of length `out` (s of them, the empty ones included).
inline std::vector<PhaseAxis> phaseAxes(int out, int stride, int pad, int dil, int kernel)
{
    std::vector<PhaseAxis> axes;
    const int step = stride / std::gcd(stride, dil);
    for (int b = 0; b < stride; ++b) {
        PhaseAxis a;
        const int aFirst = -floorDiv(b - pad, stride); // ceil((pad − b) / s)
        a.first = stride * aFirst + b - pad;
        a.count = a.first < out ? (out - 1 - a.first) / stride + 1 : 0;
        a.tap0 = kernel;
        for (int r = 0; r < std::min(kernel, step); ++r)
            if (((r * dil - b) % stride + stride) % stride == 0) {
                a.tap0 = r;
                break;
            }
        a.tapStep = step;
        a.taps = a.tap0 < kernel ? (kernel - 1 - a.tap0) / step + 1 : 0;
        a.dil = step * dil / stride;
        const int last = a.tap0 + (a.taps - 1) * step;
        a.padBefore = a.taps > 0 ? (last * dil - b) / stride - aFirst : 0;
        axes.push_back(a);
    }
    return axes;
}

// One class of outputs (rows of class i, columns of class j) and its convolution.
struct PhaseClass {
    PhaseAxis row, col;
    PhaseShape conv {}; // input = the transposed convolution's input, output [n, k, row.count, col.count], stride 1
    bool hasTaps() const { return row.taps > 0 && col.taps > 0; }
};

// Where element e of a class's gathered weight [k, c/groups, depth.taps, row.taps, col.taps] comes from in the
// transposed convolution's weight [c, k/groups, kd, r, s] (cg = c/groups, kg = k/groups): the class's taps in reverse
// order along each axis, the two channel roles exchanged. A 2-D layer is the 1-deep case (kd = 1, depth one tap 0).
CONVSCOPE_HD long long gatheredTapSource(long long e, int cg, int kg, int kd, int r, int s, const PhaseAxis& depth,
    const PhaseAxis& row, const PhaseAxis& col)
{
    const int plane = row.taps * col.taps, taps = depth.taps * plane;
    const int tap = int(e % taps);
    const long long rest = e / taps;
    const int c = int(rest % cg);
    const long long gk = rest / cg; // grp·kg + k'
    const int grp = int(gk / kg), k = int(gk % kg);
    const int i = tap / plane, j = (tap % plane) / col.taps, l = tap % col.taps;
    const int dd = depth.tap0 + (depth.taps - 1 - i) * depth.tapStep;
    const int rr = row.tap0 + (row.taps - 1 - j) * row.tapStep;
    const int ss = col.tap0 + (col.taps - 1 - l) * col.tapStep;
    return ((((long long)(grp * cg + c) * kg + k) * kd + dd) * r + rr) * s + ss;
}

// The one class of an axis of length 1 that is not there (a 2-D layer's depth).
CONVSCOPE_HD PhaseAxis flatAxis()
{
    PhaseAxis a;
    a.count = 1, a.taps = 1;
    return a;
}

// The non-empty classes of transposed convolution t (input [n, c, h, w], output [n, k, p, q], weight
// [c, k/groups, r, s]), each with its stride-1 convolution (weight [k, c/groups, row.taps, col.taps]).
inline std::vector<PhaseClass> transposedPhasePlan(const PhaseShape& t)
{
    std::vector<PhaseClass> plan;
    for (const PhaseAxis& row : phaseAxes(t.p, t.strideH, t.padTop, t.dilH, t.r))
        for (const PhaseAxis& col : phaseAxes(t.q, t.strideW, t.padLeft, t.dilW, t.s)) {
            if (row.count == 0 || col.count == 0)
                continue;
            PhaseClass pc { row, col, t };
            PhaseShape& g = pc.conv;
            g.p = row.count, g.q = col.count;
            g.r = row.taps, g.s = col.taps;
            g.strideH = g.strideW = 1;
            g.padTop = row.padBefore, g.padLeft = col.padBefore;
            g.dilH = row.dil, g.dilW = col.dil;
            plan.push_back(pc);
        }
    return plan;
}

// Whether every class with taps is an ordinary convolution (no negative padding).
inline bool transposedPhasePlanApplies(const PhaseShape& t)
{
    for (const PhaseClass& pc : transposedPhasePlan(t))
        if (pc.hasTaps() && (pc.row.padBefore < 0 || pc.col.padBefore < 0))
            return false;
    return true;
}

// Whether the plan is one class covering the whole output in order (stride 1): its convolution writes y directly.
inline bool transposedPhasePlanIsDirect(const PhaseShape& t) { return t.strideH == 1 && t.strideW == 1; }

} // namespace convscope::cuda
