// global_avgpool2d: y[n, c] = mean of the plane x[n, c, :, :].
//
// A reduction, memory-bound. One block of 256 threads per plane: each thread sums a strided slice (16-byte
// float4 loads when the plane size is a multiple of 4, which keeps every plane 16-byte aligned), then the
// block combines the partial sums with warp shuffles and one shared-memory step. For tiny planes (LeNet's 5×5)
// a warp per plane would waste less, but the launch dominates there anyway.
//
// Channels-last in a session's storage format (stored_layers.cuh): x is [n, positions, c], so a plane's values are
// C apart and consecutive channels are adjacent. A block of 32 × 8 threads takes 32 channels of one image: each
// lane one channel (a warp reads 32 adjacent channels of a position, coalesced), the 8 rows of the block stride
// over the positions, and shared memory adds the 8 partial sums (FP32) before the one rounding on the store.
#include "kernels/cuda/pooling.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

namespace convscope::cuda {

namespace {
    __device__ __forceinline__ float warpSum(float v)
    {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
        return v;
    }

    __global__ void __launch_bounds__(256)
        globalAvgKernel(int planeSize, const float* __restrict__ x, float* __restrict__ y)
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
    template <typename T>
    __global__ void __launch_bounds__(256)
        globalAvgLastKernel(int channels, int positions, const T* __restrict__ x, T* __restrict__ y)
    {
        const int c = blockIdx.x * 32 + threadIdx.x;
        const T* xp = x + static_cast<long long>(blockIdx.y) * positions * channels + c;
        float sum = 0.0f;
        if (c < channels)
            for (int s = threadIdx.y; s < positions; s += 8)
                sum += gpu::toFloat(xp[static_cast<long long>(s) * channels]);
        __shared__ float partial[8][33];
        partial[threadIdx.y][threadIdx.x] = sum;
        __syncthreads();
        if (threadIdx.y == 0 && c < channels) {
            float v = partial[0][threadIdx.x];
#pragma unroll
            for (int r = 1; r < 8; ++r)
                v += partial[r][threadIdx.x];
            y[static_cast<long long>(blockIdx.y) * channels + c] = gpu::fromFloat<T>(v / static_cast<float>(positions));
        }
    }
} // namespace

void globalAvgPool2dChannelsLast(
    int n, int channels, int positions, DType type, const void* x, void* y, cudaStream_t st)
{
    if (n <= 0 || channels <= 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        const dim3 grid(unsigned((channels + 31) / 32), unsigned(n));
        globalAvgLastKernel<<<grid, dim3(32, 8), 0, st>>>(
            channels, positions, static_cast<const T*>(x), static_cast<T*>(y));
    });
}

void globalAvgPool2d(int planes, int planeSize, const float* x, float* y, cudaStream_t st)
{
    globalAvgKernel<<<static_cast<unsigned>(planes), 256, 0, st>>>(planeSize, x, y);
}

} // namespace convscope::cuda
