// The thread tile of cuda.implicit_gemm's two kernels (the register-staged one in conv2d_implicit_gemm.cu, the
// cp.async-pipelined one in conv2d_implicit_gemm_pipe.cu): the output pixel a thread gathers, the TM×TN outer
// product of one k step, and the epilogue that stores the tile. conv2d_implicit_gemm.cu's opening essay says why the
// thread tile is laid out this way.
#pragma once

#include "kernels/cuda/activation_op.cuh"
#include "kernels/cuda/conv2d.cuh"

namespace convscope::cuda::igemm {

template <int N> __device__ __forceinline__ void loadFrag(float (&dst)[N], const float* src)
{
    if constexpr (N == 4) {
        const float4 v = *reinterpret_cast<const float4*>(src);
        dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
    } else if constexpr (N == 2) {
        const float2 v = *reinterpret_cast<const float2*>(src);
        dst[0] = v.x, dst[1] = v.y;
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i)
            dst[i] = src[i];
    }
}

// The output pixel a thread gathers the B (im2col) column of, in both kernels: whether it exists, the input row
// and column of its window's top-left tap (negative in the padding), and that tap's offset in x from the
// group's first channel (0 for a column past the end).
struct GatherColumn {
    bool valid;
    int ihBase, iwBase, offset;
};
__device__ __forceinline__ GatherColumn gatherColumn(const ConvGeometry& g, int col, int pq, int npqTotal)
{
    GatherColumn c { col < npqTotal, 0, 0, 0 };
    if (c.valid) {
        const int nn = col / pq, rem = col % pq;
        c.ihBase = (rem / g.q) * g.strideH - g.padTop;
        c.iwBase = (rem % g.q) * g.strideW - g.padLeft;
        c.offset = nn * g.c * g.h * g.w + c.ihBase * g.w + c.iwBase;
    }
    return c;
}

// One k of the block's product, the inner loop of both kernels: a thread's TM×TN outer product of its A and B
// fragments, read from row k of the tiles in shared memory (aRow: BM floats, bRow: BN floats). The thread's
// rows are two groups of TM/2 at ty·TM/2 and BM/2 + ty·TM/2 (columns likewise), read as float4.
template <int BM, int BN, int TM, int TN>
__device__ __forceinline__ void outerProductStep(
    const float* aRow, const float* bRow, int tx, int ty, float (&acc)[TM][TN])
{
    constexpr int HM = TM / 2, HN = TN / 2;
    float a[TM], b[TN];
    float a0[HM], a1[HM], b0[HN], b1[HN];
    loadFrag(a0, aRow + ty * HM);
    loadFrag(a1, aRow + BM / 2 + ty * HM);
    loadFrag(b0, bRow + tx * HN);
    loadFrag(b1, bRow + BN / 2 + tx * HN);
#pragma unroll
    for (int i = 0; i < HM; ++i)
        a[i] = a0[i], a[HM + i] = a1[i];
#pragma unroll
    for (int j = 0; j < HN; ++j)
        b[j] = b0[j], b[HN + j] = b1[j];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

// Epilogue of both kernels: a thread's TM×TN accumulators are rows ty·TM/2 … and BM/2 + ty·TM/2 … of the
// block's tile, columns tx·TN/2 … and BN/2 + tx·TN/2 …. Raw (a split-K part): the sums as they are, into the
// part's slice of the workspace, which is shaped like y; bias and activation come in the reduction.
template <int BM, int BN, int TM, int TN, bool Raw = false>
__device__ __forceinline__ void storeTile(const ConvGeometry& g, const float (&acc)[TM][TN],
    const float* __restrict__ bias, float* __restrict__ y, int mBase, int colBase, int grp, int tx, int ty)
{
    constexpr int HM = TM / 2, HN = TN / 2;
    const int kg = g.k / g.groups;
    const int pq = g.p * g.q;
    const int npqTotal = g.n * pq;
    // Epilogue: bias, the fused activation, store. A thread's columns are two runs of HN consecutive output
    // pixels. When a run of 4 lies in one image and the plane size is a multiple of 4, it is 4 consecutive,
    // 16-byte-aligned floats of each output plane: one float4 store instead of four scalar ones, so a warp
    // writes whole 256-byte segments (the 3→64 stem at 512² is bound by exactly these stores).
    const bool vecStore = HN == 4 && pq % 4 == 0;
    // Row i of the thread's tile is output channel rowOf(i) of the group; column col is output pixel
    // (col / pq, col % pq), whose channel-0 element lives at planeOf(col).
    auto rowOf = [&](int i) { return mBase + (i < HM ? ty * HM + i : BM / 2 + ty * HM + (i - HM)); };
    auto planeOf = [&](int col) { return y + ((col / pq) * g.k + grp * kg) * pq + col % pq; };
    // `at`: the output's element, for a fused skip (ConvGeometry::residual), read at the same place.
    auto value = [&](int i, int j, int m, const float* at) {
        if constexpr (Raw)
            return acc[i][j];
        else
            return epilogue(g.act, g.actParam,
                acc[i][j] + (bias ? __ldg(&bias[grp * kg + m]) : 0.0f) + skipAt(g.residual, size_t(at - y)));
    };
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        const int c0 = colBase + half * (BN / 2) + tx * HN;
        if (vecStore && c0 + 3 < npqTotal) {
            float* yRun = planeOf(c0);
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const int m = rowOf(i), j = half * HN;
                float* const at = yRun + m * pq;
                if (m < kg)
                    *reinterpret_cast<float4*>(at) = make_float4(value(i, j, m, at), value(i, (j + 1) % TN, m, at + 1),
                        value(i, (j + 2) % TN, m, at + 2), value(i, (j + 3) % TN, m, at + 3));
            }
            continue;
        }
#pragma unroll
        for (int jj = 0; jj < HN; ++jj) {
            const int col = c0 + jj;
            if (col >= npqTotal)
                continue;
            float* yCol = planeOf(col);
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const int m = rowOf(i);
                if (m < kg)
                    yCol[m * pq] = value(i, half * HN + jj, m, yCol + m * pq);
            }
        }
    }
}

} // namespace convscope::cuda::igemm
