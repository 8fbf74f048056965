// mma.sync's m16n8 products with FP32 accumulators, one per storage type: m16n8k16 on FP16 and BF16 operands, m16n8k8
// on TF32 (an FP32 bit pattern) — 32 bytes of reduction a row either way. The Tensor Core convolution's mma.sync
// kernels (conv2d_tensor_core_kernel.cuh, the stem) and the linear layer's 16-bit path (linear.cu) use them.
//
// The 16-bit types' fragments (PTX ISA, "Matrix fragments for mma.m16n8k16"), lane = 4·g + t: a[0] holds
// A[g][2t, 2t + 1], a[1] A[g + 8][2t, 2t + 1], a[2] A[g][2t + 8, 2t + 9], a[3] A[g + 8][2t + 8, 2t + 9]; b[0]
// B[2t, 2t + 1][g], b[1] B[2t + 8, 2t + 9][g]; d[0..1] D[g][2t, 2t + 1], d[2..3] D[g + 8][2t, 2t + 1]. (TF32's m16n8k8
// holds A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4] and B[t][g], B[t + 4][g].)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace convscope::cuda::tc {

// One m16n8 Tensor Core product of 32 bytes of reduction, FP32 accumulators.
template <typename Element>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
template <> __device__ __forceinline__ void mma<__half>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void mma<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void mma<float>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

} // namespace convscope::cuda::tc
