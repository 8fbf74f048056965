// The rate of Hopper's wgmma by shape, operands in shared memory and nothing else running: the ceiling of a Tensor Core
// convolution whose products are m64nN (docs/PERFORMANCE.md, "Version 7"). Each block is W warpgroups that loop over
// batches of four m64nNk16 (fp16) or m64nNk8 (tf32) on fixed shared-memory tiles, in the 128-byte swizzle; A per
// warpgroup (64 rows), B one tile the warpgroups share, as the convolution kernels lay them out.
//
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a -I. tools/wgmma_rate.cu -o wgmma_rate && ./wgmma_rate
//
// Prints TFLOP/s for N = 64, 128, 256, one and two warpgroups a block, one and two blocks a multiprocessor, and with
// wait_group 1 (two batches in flight a warpgroup) or 0 (one).
#include "kernels/cuda/conv2d_tensor_core_kernel.cuh"
#include "kernels/cuda/conv2d_tensor_core_wgmma_ops.cuh"

#include <cuda_runtime.h>

#include <cstdio>

using namespace convscope::cuda::tc;

template <typename T, int N, int W, int WAIT> __global__ void __launch_bounds__(W * 128) rate(int batches, float* out)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    const uint32_t base = (sharedAddress(smem) + 1023u) & ~1023u;
    unsigned char* p = smem + (base - sharedAddress(smem));
    for (int i = threadIdx.x; i < (64 * W + N) * 128 / 4; i += blockDim.x)
        reinterpret_cast<float*>(p)[i] = 0.0f;
    fenceProxyAsync();
    __syncthreads();
    const int wg = threadIdx.x / 128;
    const uint64_t da = wgmmaDescriptor<8>(base + wg * 64 * 128), db = wgmmaDescriptor<8>(base + W * 64 * 128);
    float acc[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i)
        acc[i] = 0.0f;
    for (int b = 0; b < batches; ++b) {
        fenceAccumulators(acc);
        wgmmaFence();
#pragma unroll
        for (int k = 0; k < 4; ++k)
            Wgmma<T, N>::run(acc, da + 2 * k, db + 2 * k);
        wgmmaCommit();
        fenceAccumulators(acc);
        wgmmaWait<WAIT>();
        fenceAccumulators(acc);
    }
    wgmmaWait<0>();
    fenceAccumulators(acc);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < N / 2; ++i)
        s += acc[i];
    if (s != 0.0f)
        out[0] = s;
}

template <typename T, int N, int W, int WAIT = 1> void measure(const char* type, int blocksPerSm, int sms, float* out)
{
    auto* k = rate<T, N, W, WAIT>;
    const int smem = (64 * W + N) * 128 + 1024;
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    const int grid = sms * blocksPerSm, batches = 20000;
    k<<<grid, W * 128, smem>>>(100, out);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a);
    k<<<grid, W * 128, smem>>>(batches, out);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    const int kStep = sizeof(T) == 2 ? 16 : 8;
    const double flop = 2.0 * grid * W * double(batches) * 4 * 64 * N * kStep;
    const cudaError_t e = cudaGetLastError();
    std::printf("%-5s m64n%-3d  %d warpgroup(s) a block, %d block(s) an SM, wait_group %d: %7.1f TFLOP/s%s\n", type, N,
        W, blocksPerSm, WAIT, flop / (ms * 1e-3) / 1e12, e == cudaSuccess ? "" : cudaGetErrorString(e));
}

int main()
{
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    float* out = nullptr;
    cudaMalloc(&out, 4);
    for (int bps = 1; bps <= 2; ++bps) {
        measure<__half, 64, 1>("fp16", bps, sms, out);
        measure<__half, 64, 2>("fp16", bps, sms, out);
        measure<__half, 128, 1>("fp16", bps, sms, out);
        measure<__half, 128, 2>("fp16", bps, sms, out);
        measure<__half, 256, 1>("fp16", bps, sms, out);
        measure<__half, 256, 2>("fp16", bps, sms, out);
        measure<float, 64, 2>("tf32", bps, sms, out);
        measure<float, 128, 2>("tf32", bps, sms, out);
        measure<float, 256, 2>("tf32", bps, sms, out);
        // A batch's products retired before the next batch issues (the TMA kernel's early stage release)
        measure<__half, 64, 2, 0>("fp16", bps, sms, out);
        measure<__half, 128, 2, 0>("fp16", bps, sms, out);
        measure<__half, 256, 2, 0>("fp16", bps, sms, out);
    }
    cudaFree(out);
    return 0;
}
