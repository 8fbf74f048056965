// The index math of the cuda training session's backward kernels, as plain inline functions that compile both in
// the kernels (nvcc: __host__ __device__) and in a host test (tests/training/cuda_backward_index_test.cpp), which
// emulates the kernels' loops with them on the CPU and compares against the reference loops — the GPU is not needed
// to find an off-by-one in a tile, a split or a window.
//
//   Weight gradient as an implicit GEMM (conv2d_backward_weights.cu). Per group g of a convolution with input
//   x [N, C, H, W], output gradient dy [N, K, P, Q], weight [K, C/G, R, S]:
//       dW[g·Kg + m, n] = Σ_k A[m, k] · B[k, n],   m < Kg = K/G,  n = (c, r, s) < Cg·R·S,  k = (img, p, q) < N·P·Q
//       A[m, k] = dy[img, g·Kg + m, p, q]
//       B[k, n] = x[img, g·Cg + c, p·sh − padTop + r·dh, q·sw − padLeft + s·dw]   (0 outside the input)
//   The reduction over k is long (N·P·Q: 25 088 for a 56² layer at batch 8), so it is cut into `splits` equal runs
//   of whole BK-deep steps; split z writes its partial dW into workspace slice z and a second kernel sums the
//   slices in order z = 0, 1, … (deterministic: no atomics).
//
//   The pools' backward (pool2d_backward.cu) gathers over the windows that read an element (poolWindowOf).
//   Pad's backward (pad_backward.cu) gathers: an input element receives the gradient of every output element whose
//   source it is; along each axis those outputs form at most three runs (padPreimage).
#pragma once

#if defined(__CUDACC__)
#define CONVSCOPE_HD __host__ __device__ __forceinline__
#else
#define CONVSCOPE_HD inline
#endif

namespace convscope::cuda::train {

// The weight gradient's GEMM over one convolution (the fields of ConvGeometry it needs, as ints).
struct WgradShape {
    int n, c, h, w; // input
    int k, p, q; // output
    int r, s;
    int strideH, strideW, padTop, padLeft, dilH, dilW;
    int groups;
};

CONVSCOPE_HD long long wgradReduction(const WgradShape& g) { return (long long)g.n * g.p * g.q; } // the GEMM's K
CONVSCOPE_HD int wgradColumns(const WgradShape& g) { return (g.c / g.groups) * g.r * g.s; } // the GEMM's N
CONVSCOPE_HD int wgradRows(const WgradShape& g) { return g.k / g.groups; } // the GEMM's M (per group)

// A[m, k] of group `grp`: the output gradient at reduction index kk (img, p, q); 0 past the end.
CONVSCOPE_HD float wgradA(const WgradShape& g, const float* dy, int grp, int m, long long kk)
{
    if (m >= wgradRows(g) || kk >= wgradReduction(g))
        return 0.0f;
    const int pq = g.p * g.q;
    const long long img = kk / pq;
    const int rest = int(kk - img * pq);
    return dy[((img * g.k + (long long)grp * wgradRows(g) + m) * pq) + rest];
}

// B[k, n] of group `grp`: the input tap that output position kk reads with weight column n (c, r, s); 0 in padding
// and past the end.
CONVSCOPE_HD float wgradB(const WgradShape& g, const float* x, int grp, long long kk, int col)
{
    if (col >= wgradColumns(g) || kk >= wgradReduction(g))
        return 0.0f;
    const int pq = g.p * g.q;
    const long long img = kk / pq;
    const int rest = int(kk - img * pq);
    const int op = rest / g.q, oq = rest - op * g.q;
    const int rs = g.r * g.s;
    const int c = col / rs, tap = col - c * rs;
    const int r = tap / g.s, s = tap - r * g.s;
    const int ih = op * g.strideH - g.padTop + r * g.dilH;
    const int iw = oq * g.strideW - g.padLeft + s * g.dilW;
    if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w)
        return 0.0f;
    const int cg = g.c / g.groups;
    return x[((img * g.c + (long long)grp * cg + c) * g.h + ih) * g.w + iw];
}

// Split z's run of the reduction: [begin, end), whole steps of `depth` (the last split may be short or empty).
struct KRange {
    long long begin, end;
};
CONVSCOPE_HD long long wgradSplitLength(const WgradShape& g, int splits, int depth)
{
    const long long steps = (wgradReduction(g) + depth - 1) / depth;
    return ((steps + splits - 1) / splits) * depth;
}
CONVSCOPE_HD KRange wgradSplitRange(const WgradShape& g, int splits, int depth, int z)
{
    const long long len = wgradSplitLength(g, splits, depth), total = wgradReduction(g);
    long long b = len * z, e = b + len;
    b = b < total ? b : total;
    e = e < total ? e : total;
    return { b, e };
}
// Where dW[g·Kg + m, n] lives: in the weight gradient [K, Cg·R·S] and, split z's partial, in the workspace.
CONVSCOPE_HD long long wgradIndex(const WgradShape& g, int grp, int m, int col)
{
    return ((long long)grp * wgradRows(g) + m) * wgradColumns(g) + col;
}
CONVSCOPE_HD long long wgradWeightCount(const WgradShape& g) { return (long long)g.k * wgradColumns(g); }

// Along one axis of a window pool (or any window of `taps` taps `dil` apart, `stride` apart, `pad` before): the
// output index whose window reads input index i at tap `tap`; −1 when none.
CONVSCOPE_HD int poolWindowOf(int i, int tap, int pad, int dil, int stride, int outSize)
{
    const int t = i + pad - tap * dil;
    if (t < 0 || t % stride != 0 || t / stride >= outSize)
        return -1;
    return t / stride;
}

// Along one axis of pad: the output indices o in [0, outSize) whose source (merge.cu's sourceIndex: o − before,
// clamped for replicate, mirrored for reflect, none for constant outside) is input index i. At most three runs
// [lo[t], hi[t]); returns how many.
enum class PadAxisMode { Constant = 0, Reflect = 1, Replicate = 2 };
CONVSCOPE_HD int padPreimage(int i, int before, int size, int outSize, PadAxisMode mode, int* lo, int* hi)
{
    int count = 0;
    const auto add = [&](int a, int b) {
        a = a < 0 ? 0 : a;
        b = b > outSize ? outSize : b;
        if (a < b) {
            lo[count] = a;
            hi[count] = b;
            ++count;
        }
    };
    if (mode == PadAxisMode::Replicate) {
        // o − before clamped to [0, size): i = 0 takes every o ≤ before, i = size − 1 every o ≥ before + size − 1.
        const int a = i == 0 ? 0 : i + before;
        const int b = i == size - 1 ? outSize : i + before + 1;
        add(a, b);
        return count;
    }
    add(i + before, i + before + 1);
    if (mode == PadAxisMode::Reflect) {
        if (i > 0)
            add(before - i, before - i + 1); // o − before = −i mirrors to i
        if (i < size - 1)
            add(before + 2 * (size - 1) - i, before + 2 * (size - 1) - i + 1); // 2(size − 1) − (o − before) = i
    }
    return count;
}

} // namespace convscope::cuda::train
