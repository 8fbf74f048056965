#include "kernels/common/calibration.h"

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/device_info.h"

#include <algorithm>
#include <cstdio>

namespace convscope::gpu {

namespace {
    constexpr int kChains = 8; // independent FMA chains per thread: enough to cover the FMA pipeline's latency
    constexpr int kIters = 4096;

    __global__ void fmaPeakKernel(float* out, float a, float b)
    {
        float x[kChains];
#pragma unroll
        for (int c = 0; c < kChains; ++c)
            x[c] = threadIdx.x * 1e-3f + c;
        for (int i = 0; i < kIters; ++i) {
#pragma unroll
            for (int c = 0; c < kChains; ++c)
                x[c] = fmaf(x[c], a, b);
        }
        float s = 0;
#pragma unroll
        for (int c = 0; c < kChains; ++c)
            s += x[c];
        if (s == 12345.678f) // never true for these inputs; keeps the chains alive
            out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    }

    std::string fmt(const char* f, double v)
    {
        char buf[160];
        std::snprintf(buf, sizeof buf, f, v);
        return buf;
    }
} // namespace

Measured measureCopyBandwidth()
{
    const size_t bytes = size_t(1) << 30;
    DeviceBuffer src(bytes, "bandwidth calibration"), dst(bytes, "bandwidth calibration");
    CudaStream stream;
    CudaEvent start, stop;
    CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(src.get(), 0, bytes, stream.get()));
    double best = 1e30;
    for (int r = 0; r < 6; ++r) {
        start.record(stream.get());
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream.get()));
        stop.record(stream.get());
        CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        if (r > 0) // the first copy warms up
            best = std::min(best, elapsedMs(start, stop));
    }
    return { 2.0 * double(bytes) / (best * 1e-3) / 1e9,
        fmt("device-to-device copy of 1 GiB (cudaMemcpyAsync), best of 5 after a warm-up, read + write counted "
            "(%.3f ms)",
            best) };
}

Measured measureFmaPeak()
{
    int device = 0, sms = 0;
    CONVSCOPE_CUDA_CHECK(cudaGetDevice(&device));
    CONVSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const int blocks = sms * 8, threads = 256;
    DeviceBuffer out(size_t(blocks) * threads * sizeof(float), "FMA calibration");
    CudaStream stream;
    CudaEvent start, stop;
    double best = 1e30;
    for (int r = 0; r < 6; ++r) {
        start.record(stream.get());
        fmaPeakKernel<<<blocks, threads, 0, stream.get()>>>(static_cast<float*>(out.get()), 0.999f, 1e-4f);
        CONVSCOPE_CUDA_CHECK_LAUNCH("FMA calibration");
        stop.record(stream.get());
        CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        if (r > 0)
            best = std::min(best, elapsedMs(start, stop));
    }
    const double flops = 2.0 * double(blocks) * threads * kIters * kChains;
    return { flops / (best * 1e-3) / 1e9,
        fmt("FP32 FMA throughput kernel: 8 independent chains per thread, 8 blocks of 256 threads per "
            "multiprocessor, best of 5 (%.3f ms)",
            best) };
}

} // namespace convscope::gpu
