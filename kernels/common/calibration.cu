#include "kernels/common/calibration.h"

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/device_info.h"

#include "compute/error.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <type_traits>

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

    // --- Tensor Core GEMMs ------------------------------------------------------------------------------------

    void checkCublas(cublasStatus_t status, const char* what)
    {
        if (status == CUBLAS_STATUS_SUCCESS)
            return;
        const std::string message = std::string("cuBLAS error in ") + what
            + " (Tensor Core calibration): " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")";
        if (status == CUBLAS_STATUS_ALLOC_FAILED)
            throw OutOfMemoryError(message + " (out of device memory)");
        const cudaError_t cuda = cudaPeekAtLastError();
        if (cuda != cudaSuccess && isStickyError(cuda))
            check(cuda, what, __FILE__, __LINE__);
        throw Error(message);
    }

    // Uniform in [-1, 1) from a hash of the index: the operands of a real product, not zeros (a GEMM of zeros
    // draws less power, so the clocks stay higher than on any layer's data).
    template <typename T> __global__ void fillUniform(T* p, size_t n, uint32_t seed)
    {
        for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
            uint32_t h = uint32_t(i) * 2654435761u ^ seed;
            h ^= h >> 16, h *= 0x7feb352du, h ^= h >> 15, h *= 0x846ca68bu, h ^= h >> 16;
            const float v = float(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
            if constexpr (std::is_same_v<T, float>)
                p[i] = v;
            else if constexpr (std::is_same_v<T, __half>)
                p[i] = __float2half_rn(v);
            else
                p[i] = __float2bfloat16_rn(v);
        }
    }

    template <typename T> void fill(void* p, size_t n, uint32_t seed, cudaStream_t stream)
    {
        fillUniform<T><<<1024, 256, 0, stream>>>(static_cast<T*>(p), n, seed);
        CONVSCOPE_CUDA_CHECK_LAUNCH("Tensor Core calibration fill");
    }

    struct GemmFormat {
        const char* mode; // "tf32"
        const char* label; // "TF32"
        cudaDataType_t type; // operands and output
        cublasComputeType_t compute;
        const char* how; // for the method
    };

    // Restores the handle's stream and math mode however the measurement ends.
    class HandleState {
    public:
        explicit HandleState(cublasHandle_t h)
            : m_h(h)
        {
            checkCublas(cublasGetMathMode(h, &m_math), "cublasGetMathMode");
            checkCublas(cublasGetStream(h, &m_stream), "cublasGetStream");
        }
        ~HandleState()
        {
            (void)cublasSetMathMode(m_h, m_math);
            (void)cublasSetStream(m_h, m_stream);
        }
        HandleState(const HandleState&) = delete;
        HandleState& operator=(const HandleState&) = delete;

    private:
        cublasHandle_t m_h;
        cublasMath_t m_math = CUBLAS_DEFAULT_MATH;
        cudaStream_t m_stream = nullptr;
    };

    // A handle of its own for the cuda module, destroyed when the calibration ends.
    class OwnHandle {
    public:
        OwnHandle() { checkCublas(cublasCreate(&m_h), "cublasCreate"); }
        ~OwnHandle() { (void)cublasDestroy(m_h); }
        OwnHandle(const OwnHandle&) = delete;
        OwnHandle& operator=(const OwnHandle&) = delete;
        cublasHandle_t get() const { return m_h; }

    private:
        cublasHandle_t m_h = nullptr;
    };
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

std::map<std::string, Measured> measureTensorCoreGemms(cublasHandle_t handle)
{
    // 8192³: enough tiles to fill every multiprocessor many times over, so the rate is the Tensor Cores' steady
    // state; 1–3 ms a call, about 25 ms for the three formats.
    constexpr int n = 8192;
    const size_t elements = size_t(n) * n;
    const GemmFormat formats[] = {
        { "tf32", "TF32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32,
            "FP32 operands and output rounded to TF32 on Tensor Cores (CUBLAS_COMPUTE_32F_FAST_TF32)" },
        { "fp16", "FP16", CUDA_R_16F, CUBLAS_COMPUTE_32F, "FP16 operands and output, FP32 accumulation" },
        { "bf16", "BF16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, "BF16 operands and output, FP32 accumulation" },
    };
    // One set of buffers sized for FP32, reused by the 2-byte formats.
    DeviceBuffer a(elements * sizeof(float), "Tensor Core calibration"),
        b(elements * sizeof(float), "Tensor Core calibration"), c(elements * sizeof(float), "Tensor Core calibration");
    CudaStream stream;
    HandleState restore(handle);
    checkCublas(cublasSetStream(handle, stream.get()), "cublasSetStream");
    checkCublas(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    const std::string version = cublasVersionString();
    std::map<std::string, Measured> out;
    for (const GemmFormat& f : formats) {
        if (f.type == CUDA_R_32F)
            fill<float>(a.get(), elements, 1, stream.get()), fill<float>(b.get(), elements, 2, stream.get());
        else if (f.type == CUDA_R_16F)
            fill<__half>(a.get(), elements, 1, stream.get()), fill<__half>(b.get(), elements, 2, stream.get());
        else
            fill<__nv_bfloat16>(a.get(), elements, 1, stream.get()),
                fill<__nv_bfloat16>(b.get(), elements, 2, stream.get());
        const float one = 1.0f, zero = 0.0f;
        CudaEvent start, stop;
        double best = 1e30;
        for (int r = 0; r < 4; ++r) {
            start.record(stream.get());
            checkCublas(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.get(), f.type, n, b.get(),
                            f.type, n, &zero, c.get(), f.type, n, f.compute, CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx");
            stop.record(stream.get());
            CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
            if (r > 0) // the first call warms up (and lets cuBLAS pick its kernel)
                best = std::min(best, elapsedMs(start, stop));
        }
        char method[320];
        std::snprintf(method, sizeof method,
            "cuBLAS %s GEMM 8192³, %s, uniform random operands, cuBLAS %s, best of 3 after a warm-up (%.2f ms)",
            f.label, f.how, version.c_str(), best);
        out[f.mode] = { 2.0 * double(n) * n * n / (best * 1e-3) / 1e9, method };
    }
    return out;
}

void addTensorCoreCeilings(DeviceCeilings& ceilings, cublasHandle_t handle)
{
    for (const auto& [mode, m] : measureTensorCoreGemms(handle)) {
        ceilings.mathGflops[mode] = m.value;
        ceilings.mathMethods[mode] = m.method;
    }
}

std::string cublasVersionString()
{
    int major = 0, minor = 0, patch = 0;
    if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS
        || cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS
        || cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS)
        return "unknown";
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

DeviceCeilings deviceCeilings(const Measured& compute, const Measured& copy)
{
    DeviceCeilings c;
    c.device = deviceInfo()["device"];
    c.peakGflops = compute.value;
    c.bandwidthGBs = copy.value;
    c.computeMethod = compute.method;
    c.bandwidthMethod = copy.method;
    return c;
}

void addTensorCoreCeilings(DeviceCeilings& ceilings)
{
    OwnHandle handle;
    addTensorCoreCeilings(ceilings, handle.get());
}

} // namespace convscope::gpu
