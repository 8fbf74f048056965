#include "kernels/cudnn/cudnn_support.h"

#include "compute/error.h"
#include "kernels/common/calibration.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/device_info.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <vector>

namespace convscope::cudnn {

namespace {
    std::string where(const char* file, int line)
    {
        return std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
    }

    // Handles of threads that have ended, ready for the next thread (see the header for why never destroyed).
    std::mutex g_poolMutex;
    std::vector<Handles>& handlePool()
    {
        static auto* pool = new std::vector<Handles>; // never destroyed, like the handles in it
        return *pool;
    }

    struct ThreadHandles {
        Handles handles;
        bool valid = false;
        ~ThreadHandles()
        {
            if (!valid)
                return;
            std::lock_guard lock(g_poolMutex);
            handlePool().push_back(handles);
        }
    };
} // namespace

std::string reason(cudnnStatus_t status)
{
    std::string text = cudnnGetErrorString(status);
    char last[1024] = {};
    // The message cuDNN kept for this thread explains *why* (e.g. which constraint an algorithm violates); it
    // is empty for errors that carry no detail.
    cudnnGetLastErrorString(last, sizeof last);
    if (last[0])
        text += std::string(": ") + last;
    return text;
}

std::string reason(cublasStatus_t status)
{
    return std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")";
}

void check(cudnnStatus_t status, const char* what, const char* file, int line)
{
    if (status == CUDNN_STATUS_SUCCESS)
        return;
    const std::string message
        = "cuDNN error in " + std::string(what) + " at " + where(file, line) + ": " + reason(status);
    if (status == CUDNN_STATUS_ALLOC_FAILED)
        throw OutOfMemoryError(message + " (out of device memory)");
    if (status == CUDNN_STATUS_NOT_SUPPORTED)
        throw UnsupportedError(message + " (unsupported by cuDNN)");
    // A kernel fault inside cuDNN leaves a sticky CUDA error; let the shared check poison the device so the
    // backend reports itself unavailable rather than failing every later call with a confusing message.
    const cudaError_t cuda = cudaPeekAtLastError();
    if (cuda != cudaSuccess && gpu::isStickyError(cuda))
        gpu::check(cuda, what, file, line);
    throw Error(message);
}

void check(cublasStatus_t status, const char* what, const char* file, int line)
{
    if (status == CUBLAS_STATUS_SUCCESS)
        return;
    const std::string message
        = "cuBLAS error in " + std::string(what) + " at " + where(file, line) + ": " + reason(status);
    if (status == CUBLAS_STATUS_ALLOC_FAILED)
        throw OutOfMemoryError(message + " (out of device memory)");
    const cudaError_t cuda = cudaPeekAtLastError();
    if (cuda != cudaSuccess && gpu::isStickyError(cuda))
        gpu::check(cuda, what, file, line);
    throw Error(message);
}

Handles& threadHandles()
{
    thread_local ThreadHandles mine;
    if (mine.valid)
        return mine.handles;
    {
        std::lock_guard lock(g_poolMutex);
        if (!handlePool().empty()) {
            mine.handles = handlePool().back();
            handlePool().pop_back();
            mine.valid = true;
            return mine.handles;
        }
    }
    gpu::selectDevice(); // handles belong to the device current at creation
    Handles h;
    CONVSCOPE_CUDNN_CHECK(cudnnCreate(&h.cudnn));
    const cublasStatus_t st = cublasCreate(&h.cublas);
    if (st != CUBLAS_STATUS_SUCCESS) {
        (void)cudnnDestroy(h.cudnn);
        CONVSCOPE_CUBLAS_CHECK(st);
    }
    mine.handles = h;
    mine.valid = true;
    return mine.handles;
}

gpu::Measured measureSgemm()
{
    constexpr int n = 8192;
    const size_t bytes = size_t(n) * n * sizeof(float);
    gpu::DeviceBuffer a(bytes, "SGEMM calibration"), b(bytes, "SGEMM calibration"), c(bytes, "SGEMM calibration");
    gpu::CudaStream stream;
    CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(a.get(), 0, bytes, stream.get()));
    CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(b.get(), 0, bytes, stream.get()));
    cublasHandle_t h = threadHandles().cublas;
    cublasMath_t previous = CUBLAS_DEFAULT_MATH;
    CONVSCOPE_CUBLAS_CHECK(cublasGetMathMode(h, &previous));
    CONVSCOPE_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
    CONVSCOPE_CUBLAS_CHECK(cublasSetStream(h, stream.get()));
    const float one = 1.0f, zero = 0.0f;
    gpu::CudaEvent start, stop;
    double best = 1e30;
    for (int r = 0; r < 4; ++r) {
        start.record(stream.get());
        CONVSCOPE_CUBLAS_CHECK(cublasSgemm(
            h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.floats(), n, b.floats(), n, &zero, c.floats(), n));
        stop.record(stream.get());
        CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        if (r > 0) // the first call warms up
            best = std::min(best, gpu::elapsedMs(start, stop));
    }
    CONVSCOPE_CUBLAS_CHECK(cublasSetMathMode(h, previous));
    CONVSCOPE_CUBLAS_CHECK(cublasSetStream(h, nullptr));
    char method[160];
    std::snprintf(method, sizeof method,
        "cuBLAS %s SGEMM 8192x8192x8192, pedantic FP32 (no TF32), best of 3 after a warm-up (%.2f ms)",
        cublasVersionString().c_str(), best);
    return { 2.0 * double(n) * n * n / (best * 1e-3) / 1e9, method };
}

std::string formatMs(double ms)
{
    char b[32];
    std::snprintf(b, sizeof b, "%.4f ms", ms);
    return b;
}

std::string cudnnVersionString()
{
    // cuDNN 9 encodes major*10000 + minor*100 + patch.
    const size_t v = cudnnGetVersion();
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::string cublasVersionString() { return gpu::cublasVersionString(); }

// --- descriptors ------------------------------------------------------------------------------------------------

TensorDesc::TensorDesc() { CONVSCOPE_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m_desc)); }
TensorDesc::~TensorDesc() { (void)cudnnDestroyTensorDescriptor(m_desc); }
void TensorDesc::set(cudnnTensorFormat_t format, int n, int c, int h, int w, cudnnDataType_t type)
{
    CONVSCOPE_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m_desc, format, type, n, c, h, w));
}
void TensorDesc::setStrided(int n, int c, int h, int w, int sn, int sc, int sh, int sw, cudnnDataType_t type)
{
    CONVSCOPE_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(m_desc, type, n, c, h, w, sn, sc, sh, sw));
}
void TensorDesc::set5d(int n, int c, int d, int h, int w, bool channelsLast, cudnnDataType_t type)
{
    // The Ex form takes the format and packs the strides itself (NDHWC: C innermost, then W, H, D).
    const int dims[5] = { n, c, d, h, w };
    CONVSCOPE_CUDNN_CHECK(
        cudnnSetTensorNdDescriptorEx(m_desc, channelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, type, 5, dims));
}

FilterDesc::FilterDesc() { CONVSCOPE_CUDNN_CHECK(cudnnCreateFilterDescriptor(&m_desc)); }
FilterDesc::~FilterDesc() { (void)cudnnDestroyFilterDescriptor(m_desc); }
void FilterDesc::set(cudnnTensorFormat_t format, int k, int c, int h, int w, cudnnDataType_t type)
{
    CONVSCOPE_CUDNN_CHECK(cudnnSetFilter4dDescriptor(m_desc, type, format, k, c, h, w));
}
void FilterDesc::set5d(int k, int c, int d, int h, int w, bool channelsLast, cudnnDataType_t type)
{
    const int dims[5] = { k, c, d, h, w };
    CONVSCOPE_CUDNN_CHECK(
        cudnnSetFilterNdDescriptor(m_desc, type, channelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, 5, dims));
}

ConvDesc::ConvDesc() { CONVSCOPE_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&m_desc)); }
ConvDesc::~ConvDesc() { (void)cudnnDestroyConvolutionDescriptor(m_desc); }
void ConvDesc::set(int padH, int padW, int strideH, int strideW, int dilH, int dilW, int groups)
{
    // Cross-correlation is what every framework calls convolution (no kernel flip).
    CONVSCOPE_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        m_desc, padH, padW, strideH, strideW, dilH, dilW, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CONVSCOPE_CUDNN_CHECK(cudnnSetConvolutionGroupCount(m_desc, groups));
}
void ConvDesc::set3d(const int pad[3], const int stride[3], const int dilation[3], int groups)
{
    CONVSCOPE_CUDNN_CHECK(
        cudnnSetConvolutionNdDescriptor(m_desc, 3, pad, stride, dilation, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CONVSCOPE_CUDNN_CHECK(cudnnSetConvolutionGroupCount(m_desc, groups));
}
void ConvDesc::setMath(cudnnMathType_t math) { CONVSCOPE_CUDNN_CHECK(cudnnSetConvolutionMathType(m_desc, math)); }

PoolDesc::PoolDesc() { CONVSCOPE_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&m_desc)); }
PoolDesc::~PoolDesc() { (void)cudnnDestroyPoolingDescriptor(m_desc); }
void PoolDesc::set(cudnnPoolingMode_t mode, int kh, int kw, int padH, int padW, int sh, int sw)
{
    // NaN propagates through max pooling, as in PyTorch.
    CONVSCOPE_CUDNN_CHECK(cudnnSetPooling2dDescriptor(m_desc, mode, CUDNN_PROPAGATE_NAN, kh, kw, padH, padW, sh, sw));
}

OpTensorDesc::OpTensorDesc(cudnnOpTensorOp_t op)
{
    CONVSCOPE_CUDNN_CHECK(cudnnCreateOpTensorDescriptor(&m_desc));
    CONVSCOPE_CUDNN_CHECK(cudnnSetOpTensorDescriptor(m_desc, op, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
}
OpTensorDesc::~OpTensorDesc() { (void)cudnnDestroyOpTensorDescriptor(m_desc); }

ActivationDesc::ActivationDesc() { CONVSCOPE_CUDNN_CHECK(cudnnCreateActivationDescriptor(&m_desc)); }
ActivationDesc::~ActivationDesc() { (void)cudnnDestroyActivationDescriptor(m_desc); }
void ActivationDesc::set(cudnnActivationMode_t mode, double coef)
{
    CONVSCOPE_CUDNN_CHECK(cudnnSetActivationDescriptor(m_desc, mode, CUDNN_PROPAGATE_NAN, coef));
}

} // namespace convscope::cudnn
