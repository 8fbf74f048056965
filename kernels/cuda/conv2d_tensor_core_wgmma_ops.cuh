// Hopper's warpgroup MMA (wgmma, sm_90a only) as the Tensor Core convolution uses it: shared-memory matrix
// descriptors for K-major tiles in the 128-byte swizzle, the asynchronous m64nNk16 (fp16, bf16) / m64nNk8 (tf32)
// products with FP32 accumulators in registers, and the fences around them. Included only by
// conv2d_tensor_core_wgmma.cu, which is compiled for sm_90a alone (kernels/CMakeLists.txt).
//
// The descriptor (PTX ISA, "Matrix Descriptor Format"; the same bits as CUTLASS's GmmaDescriptor, written here):
//   bits  0–13  start address >> 4 (shared-memory window address)
//   bits 16–29  leading-dimension byte offset >> 4: unused by the swizzled K-major layouts (1 by convention)
//   bits 32–45  stride-dimension byte offset >> 4: from one 8-row group to the next, 8 rows × 128 B = 1024 B here
//   bits 49–51  base offset: 0, as every tile starts on a 1024-byte boundary
//   bits 62–63  layout: 1 = 128-byte swizzle
// A K-major tile in the 128-byte swizzle is rows of 128 bytes of reduction, the 16-byte chunk c of row r stored at
// chunk c ^ (r mod 8), 8-row atoms of 1024 bytes one after another: exactly the layout the cp.async copies write
// (tc::swizzled<8>), provided the tile starts 1024-aligned. One instruction reads 32 bytes of reduction (k16 of 16-bit
// types, k8 of tf32); the i-th 32 bytes of the row start 32·i bytes further, and the hardware applies the swizzle to
// the address it forms, so stepping through the row is adding 2·i to the start-address field.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace convscope::cuda::tc {

// RowPieces = 8: 128-byte rows in the 128-byte swizzle (layout 1, 8-row atoms of 1024 B). RowPieces = 4: 64-byte rows
// in the 64-byte swizzle (layout 2: chunk c of row r at c ^ ((r / 2) mod 4), tc::swizzled<4>; 8-row atoms of 512 B).
template <int RowPieces = 8> __device__ __forceinline__ uint64_t wgmmaDescriptor(uint32_t sharedAddress)
{
    constexpr uint64_t layout = RowPieces == 8 ? 1 : 2, atomBytes = 8 * 16 * RowPieces;
    return uint64_t((sharedAddress & 0x3ffff) >> 4) | (uint64_t(1) << 16) | ((atomBytes >> 4) << 32) | (layout << 62);
}

// Orders this warpgroup's register and shared-memory accesses before the wgmma that follow (the accumulators were
// zeroed by ordinary instructions; shared memory was written by cp.async and made visible below).
__device__ __forceinline__ void wgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmmaCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most PendingGroups committed groups of this warpgroup's wgmma are still running.
template <int PendingGroups> __device__ __forceinline__ void wgmmaWait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PendingGroups) : "memory");
}
// cp.async writes through the generic proxy; wgmma reads shared memory through the async proxy. This fence (each
// writer, after its copies landed, before the barrier) makes the one visible to the other.
__device__ __forceinline__ void fenceProxyAsync() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// mbarriers (shared memory, one CTA): the hand-over of pipeline stages between the warps that copy and those that
// multiply in the warp-specialized and TMA kernels.
__device__ __forceinline__ void barrierInit(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void barrierArrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the barrier's phase of parity `parity` has completed: by try_wait, which may suspend the thread, or
// (spin, --option tc_wait=spin) by test_wait in a loop.
__device__ __forceinline__ void barrierWait(uint32_t bar, uint32_t parity, bool spin = false)
{
    uint32_t done = 0;
    if (spin) {
        while (!done)
            asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, "
                         "1, 0, p;\n}\n"
                         : "=r"(done)
                         : "r"(bar), "r"(parity)
                         : "memory");
        return;
    }
    while (!done)
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
}

// Keeps the compiler from moving accumulator reads or writes across the asynchronous MMA (wgmma owns the registers
// from its issue to the wait that retires it).
template <int AccumulatorCount> __device__ __forceinline__ void fenceAccumulators(float (&d)[AccumulatorCount])
{
#pragma unroll
    for (int i = 0; i < AccumulatorCount; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

// The accumulators as asm operands: R "+f" operands, numbered %0 … %(R−1).
#define CS_ACC8(d, i)                                                                                                  \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]),        \
        "+f"(d[i + 7])
#define CS_ACC32(d) CS_ACC8(d, 0), CS_ACC8(d, 8), CS_ACC8(d, 16), CS_ACC8(d, 24)
#define CS_ACC64(d)                                                                                                    \
    CS_ACC8(d, 0), CS_ACC8(d, 8), CS_ACC8(d, 16), CS_ACC8(d, 24), CS_ACC8(d, 32), CS_ACC8(d, 40), CS_ACC8(d, 48),      \
        CS_ACC8(d, 56)
#define CS_ACC128(d)                                                                                                   \
    CS_ACC64(d), CS_ACC8(d, 64), CS_ACC8(d, 72), CS_ACC8(d, 80), CS_ACC8(d, 88), CS_ACC8(d, 96), CS_ACC8(d, 104),      \
        CS_ACC8(d, 112), CS_ACC8(d, 120)
#define CS_WGMMA_REGS32                                                                                                \
    "{"                                                                                                                \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                           \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"                                   \
    "}"
#define CS_WGMMA_REGS64                                                                                                \
    "{"                                                                                                                \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                           \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                 \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                 \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"                                   \
    "}"
#define CS_WGMMA_REGS128                                                                                               \
    "{"                                                                                                                \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                           \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                 \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                 \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                                 \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                                 \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                                 \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                     \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"                   \
    "}"

// D[64 × Width] += A[64 × 32 bytes] · B[Width × 32 bytes]ᵀ, both K-major in shared memory (descriptors), FP32 D. The
// scale-d predicate is true (accumulate: the accumulators start at zero); A and B are not negated (1, 1) nor transposed
// (0, 0: K-major; tf32 takes no transpose operands, K-major being its only layout).
template <typename Element, int Width> struct Wgmma;
#define CS_WGMMA(ELEMENT, WIDTH, SHAPE, TYPES, TAIL, REGS, ACC, DESC)                                                  \
    template <> struct Wgmma<ELEMENT, WIDTH> {                                                                         \
        static __device__ __forceinline__ void run(float (&d)[WIDTH / 2], uint64_t a, uint64_t b)                      \
        {                                                                                                              \
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                    \
                         "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPES " " REGS ", " DESC ", p, " TAIL ";\n}\n"  \
                         : ACC(d)                                                                                      \
                         : "l"(a), "l"(b));                                                                            \
        }                                                                                                              \
    };
CS_WGMMA(__half, 64, "m64n64k16", "f16.f16", "1, 1, 0, 0", CS_WGMMA_REGS32, CS_ACC32, "%32, %33")
CS_WGMMA(__half, 128, "m64n128k16", "f16.f16", "1, 1, 0, 0", CS_WGMMA_REGS64, CS_ACC64, "%64, %65")
CS_WGMMA(__half, 256, "m64n256k16", "f16.f16", "1, 1, 0, 0", CS_WGMMA_REGS128, CS_ACC128, "%128, %129")
CS_WGMMA(__nv_bfloat16, 64, "m64n64k16", "bf16.bf16", "1, 1, 0, 0", CS_WGMMA_REGS32, CS_ACC32, "%32, %33")
CS_WGMMA(__nv_bfloat16, 128, "m64n128k16", "bf16.bf16", "1, 1, 0, 0", CS_WGMMA_REGS64, CS_ACC64, "%64, %65")
CS_WGMMA(__nv_bfloat16, 256, "m64n256k16", "bf16.bf16", "1, 1, 0, 0", CS_WGMMA_REGS128, CS_ACC128, "%128, %129")
CS_WGMMA(float, 64, "m64n64k8", "tf32.tf32", "1, 1", CS_WGMMA_REGS32, CS_ACC32, "%32, %33")
CS_WGMMA(float, 128, "m64n128k8", "tf32.tf32", "1, 1", CS_WGMMA_REGS64, CS_ACC64, "%64, %65")
CS_WGMMA(float, 256, "m64n256k8", "tf32.tf32", "1, 1", CS_WGMMA_REGS128, CS_ACC128, "%128, %129")
#undef CS_WGMMA

} // namespace convscope::cuda::tc
