// TF32 Tensor Core products for our FP32-storage implicit GEMMs (issue 33: cuda.tensor_core's training step under
// --math tf32): the forward's and the backward-data's pipelined tiles (conv2d_implicit_gemm_pipe.cu) and the weight
// gradient's (training/conv2d_backward_weights.cu) keep their loads, pipelines and shared panels, and multiply each
// 8-deep slice of a stage with mma.sync m16n8k8 (sm_80 and later; the build targets 80 and 90) instead of FFMA.
//
// The panels are k-major (row k of a stage holds the tile's BM rows of A, or BN columns of B), as the FFMA tiles read
// them, and swizzled so that mma's column-wise fragment reads hit 32 banks; the forward's weights are instead packed
// in fragment order. Both layouts are tf32_layout.h's.
//
// Rounding: the operands go to TF32 by cvt.rna (to nearest, ties away from zero: cuBLAS's and CUTLASS's conversion;
// the Tensor Cores alone would drop the low 13 bits), the products and sums stay FP32 — PyTorch's allow_tf32. A
// panel whose values were rounded when written (the forward's transposed weights) skips the conversion.
#pragma once

#include "kernels/cuda/tf32_layout.h"

#include <cstdint>

namespace convscope::cuda::tf32 {

// FP32 → TF32, to nearest (cvt.rna); the result is an FP32 bit pattern with the low 13 bits zero.
__device__ __forceinline__ uint32_t rounded(float v)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
    return r;
}
__device__ __forceinline__ float roundedFloat(float v) { return __uint_as_float(rounded(v)); }

// d += a · b: a 16×8 row-major tile, b 8×8 column-major, d 16×8 in FP32 (lane (g, t) holds d[g][2t], d[g][2t + 1],
// d[g + 8][2t], d[g + 8][2t + 1]).
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// B's fragments of a warp's NT column tiles (its columns from n0) in an 8-deep slice of a swizzled k-major panel (8
// rows of bStride floats from `b`), rounded to TF32.
template <int NT>
__device__ __forceinline__ void swizzledB(const float* b, int bStride, int n0, int lane, uint32_t (&bf)[NT][2])
{
    const int g = lane >> 2, t = lane & 3;
    const float* lo = b + t * bStride; // k = t
    const float* hi = b + (t + 4) * bStride; // k = t + 4 (the same swizzle: (t + 4) & 3 == t)
#pragma unroll
    for (int ni = 0; ni < NT; ++ni) {
        const int n = swizzle(t, n0 + ni * 8 + g);
        bf[ni][0] = rounded(lo[n]);
        bf[ni][1] = rounded(hi[n]);
    }
}

// A's fragment of the 16-row tile whose rows start at column m of a swizzled k-major panel's slice (8 rows of aStride
// floats from `a`), rounded to TF32.
__device__ __forceinline__ void swizzledA(const float* a, int aStride, int m, int lane, uint32_t (&af)[4])
{
    const int g = lane >> 2, t = lane & 3;
    const float* lo = a + t * aStride;
    const float* hi = a + (t + 4) * aStride;
    const int r = swizzle(t, m + g), r8 = swizzle(t, m + g + 8);
    af[0] = rounded(lo[r]), af[1] = rounded(lo[r8]), af[2] = rounded(hi[r]), af[3] = rounded(hi[r8]);
}

// A's fragment of 16-row tile `tile` of a packed slice (tf32_layout.h's packedRow / packedCol; rounded when packed):
// one 16-byte load.
__device__ __forceinline__ void packedA(const float* a, int tile, int lane, uint32_t (&af)[4])
{
    const float4 v = *reinterpret_cast<const float4*>(a + tile * 128 + lane * 4);
    af[0] = __float_as_uint(v.x), af[1] = __float_as_uint(v.y), af[2] = __float_as_uint(v.z),
    af[3] = __float_as_uint(v.w);
}

// One 8-deep slice of a warp's MT × NT tiles of 16 × 8: B's fragments from the swizzled panel as above, A's for row
// tile mi from loadA(mi, af) (swizzledA or packedA), then the MT · NT products.
template <int MT, int NT, class LoadA>
__device__ __forceinline__ void warpSlice(
    const LoadA& loadA, const float* b, int bStride, int n0, int lane, float (&acc)[MT][NT][4])
{
    uint32_t bf[NT][2];
    swizzledB(b, bStride, n0, lane, bf);
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
        uint32_t af[4];
        loadA(mi, af);
#pragma unroll
        for (int ni = 0; ni < NT; ++ni)
            mma(acc[mi][ni], af, bf[ni]);
    }
}

// The tile element accumulator acc[mi][ni][e] holds: its row within the warp's rows and its column within the warp's
// columns.
__device__ __forceinline__ int fragmentRow(int lane, int mi, int e) { return mi * 16 + (lane >> 2) + (e >> 1) * 8; }
__device__ __forceinline__ int fragmentCol(int lane, int ni, int e) { return ni * 8 + (lane & 3) * 2 + (e & 1); }

// A block's warps over its BM × BN tile: two warp rows, the rest across the columns (8 warps: 2 × 4; 4 warps: 2 × 2),
// each warp MT × NT tiles of 16 × 8.
template <int BM, int BN, int Threads> struct WarpGrid {
    static constexpr int warps = Threads / 32, rows = 2, cols = warps / rows;
    static constexpr int warpM = BM / rows, warpN = BN / cols;
    static constexpr int mt = warpM / 16, nt = warpN / 8;
    static_assert(warpM % 16 == 0 && warpN % 8 == 0, "a warp's share of the tile is whole 16 x 8 tiles");
    __device__ static int m0(int warp) { return (warp / cols) * warpM; }
    __device__ static int n0(int warp) { return (warp % cols) * warpN; }
};

} // namespace convscope::cuda::tf32
