// The binary kind's kernel: a grid-stride loop over the output, each element's two offsets from the plan (one
// division per axis, by per-launch constants), FP32 math (double is not needed: one operation per element), the
// result rounded once to the storage type. Memory-bound; a broadcast operand is re-read through the read-only cache.
#include "kernels/cuda/binary.cuh"

#include "kernels/common/storage_types.cuh"
#include "kernels/cuda/elementwise.cuh"

#include <cuda_runtime.h>

namespace convscope::cuda {

namespace {
    template <typename T> __device__ __forceinline__ float operand(const void* p, bool fp32, int64_t k)
    {
        return fp32 ? __ldg(static_cast<const float*>(p) + k) : gpu::toFloat(static_cast<const T*>(p)[k]);
    }

    template <typename T>
    __global__ void binaryKernel(BinaryPlan p, const void* a, bool aFp32, const void* b, bool bFp32, T* y)
    {
        const int64_t stride = int64_t(gridDim.x) * blockDim.x;
        for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += stride) {
            int64_t oa = 0, ob = 0;
            binaryOffsets(p, i, oa, ob);
            y[i] = gpu::fromFloat<T>(applyBinary<float>(p.fn, operand<T>(a, aFp32, oa), operand<T>(b, bFp32, ob)));
        }
    }

    template <typename T>
    void launch(const BinaryPlan& p, const void* a, bool aFp32, const void* b, bool bFp32, T* y, cudaStream_t st)
    {
        if (p.count <= 0)
            return;
        binaryKernel<T><<<elementwiseBlocks(p.count, 256), 256, 0, st>>>(p, a, aFp32, b, bFp32, y);
    }
} // namespace

void binaryBroadcast(const BinaryPlan& plan, const float* a, const float* b, float* y, cudaStream_t st)
{
    launch<float>(plan, a, true, b, true, y, st);
}

void binaryBroadcastStored(
    const BinaryPlan& plan, DType type, const void* a, bool aFp32, const void* b, bool bFp32, void* y, cudaStream_t st)
{
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        launch<T>(plan, a, aFp32, b, bFp32, static_cast<T*>(y), st);
    });
}

} // namespace convscope::cuda
