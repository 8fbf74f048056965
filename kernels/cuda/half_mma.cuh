// FP16 / BF16 Tensor Core products for the FP32-storage pipelined implicit GEMM (conv2d_implicit_gemm_pipe.cu) when
// its operands are exact in the half type: the cuda training session's fp16 / bf16 (ConvGeometry::tf32 = 2 or 3), whose
// convolutions read inputs, weights and output gradients rounded to that type (cuda_training_session.h). Converting
// such an FP32 value to the half type changes nothing, so mma.sync m16n8k16 in that type gives the same exact products
// and FP32 sums as TF32's m16n8k8, with half as many mma and conversion instructions and twice the Tensor Cores' rate.
//
// A stage's 16 taps are read as the two 8-deep slices TF32 reads (tf32_mma.cuh's fragments, without the rounding) and
// paired: m16n8k16's k positions 2t, 2t + 1, 2t + 8 and 2t + 9 of lane (g, t) take slice 0's taps t and t + 4 and slice
// 1's t and t + 4 — one permutation of the 16 taps, the same for A and B, so each product pairs the same operands and
// only the order of the FP32 sum inside the instruction differs. The accumulator layout is m16n8k8's, so the epilogue
// is TF32's. The instruction is tensor_core_mma.cuh's (tc::mma), whose fragment table this file's pairing follows.
#pragma once

#include "kernels/cuda/tensor_core_mma.cuh"
#include "kernels/cuda/tf32_mma.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace convscope::cuda::halfmma {

// Two FP32 values (exact in H) as one register of H pairs: `lo` in the low 16 bits (the smaller k position).
template <typename H> __device__ __forceinline__ uint32_t pack(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack<__half>(float lo, float hi)
{
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}
template <> __device__ __forceinline__ uint32_t pack<__nv_bfloat16>(float lo, float hi)
{
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}

// One 16-deep stage of a warp's MT × NT tiles of 16 × 8: B's values from the two swizzled k-major slices at b0 and b1
// (tf32::swizzledB's elements), A's for row tile mi from loadA(mi, slice, af) as TF32 would read them (af[0..3] the
// rows g, g + 8 at tap t, then at tap t + 4), paired into H and multiplied once per tile.
template <typename H, int MT, int NT, class LoadA>
__device__ __forceinline__ void warpStage(
    const LoadA& loadA, const float* b0, const float* b1, int bStride, int n0, int lane, float (&acc)[MT][NT][4])
{
    const int g = lane >> 2, t = lane & 3;
    uint32_t bf[NT][2];
#pragma unroll
    for (int ni = 0; ni < NT; ++ni) {
        const int n = tf32::swizzle(t, n0 + ni * 8 + g); // rows t and t + 4 share the swizzle
        bf[ni][0] = pack<H>(b0[t * bStride + n], b0[(t + 4) * bStride + n]);
        bf[ni][1] = pack<H>(b1[t * bStride + n], b1[(t + 4) * bStride + n]);
    }
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
        uint32_t s0[4], s1[4];
        loadA(mi, 0, s0);
        loadA(mi, 1, s1);
        const uint32_t af[4] = { pack<H>(__uint_as_float(s0[0]), __uint_as_float(s0[2])),
            pack<H>(__uint_as_float(s0[1]), __uint_as_float(s0[3])),
            pack<H>(__uint_as_float(s1[0]), __uint_as_float(s1[2])),
            pack<H>(__uint_as_float(s1[1]), __uint_as_float(s1[3])) };
#pragma unroll
        for (int ni = 0; ni < NT; ++ni)
            tc::mma<H>(acc[mi][ni], af, bf[ni]); // m16n8k16 in H, FP32 sums
    }
}

} // namespace convscope::cuda::halfmma
