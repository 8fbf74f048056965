// global_avgpool2d: y[n, c] = mean of the plane x[n, c, :, :].
//
// A reduction, memory-bound. One block of 256 threads per plane: each thread sums a strided slice (16-byte
// float4 loads when the plane size is a multiple of 4, which keeps every plane 16-byte aligned), then the
// block combines the partial sums with warp shuffles and one shared-memory step. For tiny planes (LeNet's 5×5)
// a warp per plane would waste less, but the launch dominates there anyway.
#include "kernels/cuda/pooling.cuh"

namespace convscope::cuda {

namespace {
    __device__ __forceinline__ float warpSum(float v)
    {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
        return v;
    }

    __global__ void __launch_bounds__(256) globalAvgKernel(int planeSize, const float* __restrict__ x, float* __restrict__ y)
    {
        const float* xp = x + static_cast<long long>(blockIdx.x) * planeSize;
        float sum = 0.0f;
        if (planeSize % 4 == 0) {
            const float4* x4 = reinterpret_cast<const float4*>(xp);
            for (int i = threadIdx.x; i < planeSize / 4; i += blockDim.x) {
                const float4 v = __ldg(x4 + i);
                sum += (v.x + v.y) + (v.z + v.w);
            }
        } else {
            for (int i = threadIdx.x; i < planeSize; i += blockDim.x)
                sum += __ldg(xp + i);
        }
        __shared__ float partial[32];
        sum = warpSum(sum);
        if (threadIdx.x % 32 == 0)
            partial[threadIdx.x / 32] = sum;
        __syncthreads();
        if (threadIdx.x < 32) {
            float v = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
            v = warpSum(v);
            if (threadIdx.x == 0)
                y[blockIdx.x] = v / static_cast<float>(planeSize);
        }
    }
} // namespace

void globalAvgPool2d(int planes, int planeSize, const float* x, float* y, cudaStream_t st)
{
    globalAvgKernel<<<static_cast<unsigned>(planes), 256, 0, st>>>(planeSize, x, y);
}

} // namespace convscope::cuda
