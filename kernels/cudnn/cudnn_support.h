// What every part of the cudnn module shares: checked cuDNN and cuBLAS calls, owning descriptors, and the
// per-thread library handles.
//
// Handles: cuDNN and cuBLAS handles are expensive to create (tens of milliseconds, some device memory) and
// are not safe to use from two threads at once, so each thread that runs cuDNN work gets one pair, reused by
// every session on that thread (the window runs all GPU work on one worker thread). A session points the
// pair at its own stream before each layer. When a thread ends its pair goes back to a pool for the next
// thread; the pool is never destroyed, because at process exit the CUDA context may already be gone and a
// cudnnDestroy then would crash the program on its way out.
#pragma once

#include "compute/storage_format.h"
#include "kernels/common/calibration.h"

#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

namespace convscope::cudnn {

// "CUDNN_STATUS_NOT_SUPPORTED: <cuDNN's own last message for this thread>", for messages a person reads.
std::string reason(cudnnStatus_t status);
std::string reason(cublasStatus_t status);

// Throws Error (OutOfMemoryError for allocation failures) naming the call and cuDNN's reason.
void check(cudnnStatus_t status, const char* what, const char* file, int line);
void check(cublasStatus_t status, const char* what, const char* file, int line);

struct Handles {
    cudnnHandle_t cudnn = nullptr;
    cublasHandle_t cublas = nullptr;
};
// This thread's pair (created on first use; throws Error with cuDNN's reason if that fails).
Handles& threadHandles();

// cuBLAS SGEMM's rate on this device, for the roofline's compute ceiling: 8192³ (three 256 MiB matrices) in
// pedantic FP32 (no TF32), best of 3 after a warm-up, on this thread's handle.
gpu::Measured measureSgemm();

// "9.1.0" from cudnnGetVersion(); the cuBLAS version from cublasGetProperty.
// The scaling factors cuDNN's calls take by pointer (alpha = 1, beta = 0 or 1).
inline constexpr float kOne = 1.0f, kZero = 0.0f;
// "0.1234 ms", for layer notes.
std::string formatMs(double ms);

std::string cudnnVersionString();
std::string cublasVersionString();

// cuDNN's element type for a storage type (compute/storage_format.h): FLOAT, HALF, BFLOAT16.
inline cudnnDataType_t cudnnType(DType t)
{
    return t == DType::F16 ? CUDNN_DATA_HALF : t == DType::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}
inline const char* cudnnTypeName(DType t)
{
    return t == DType::F16 ? "CUDNN_DATA_HALF" : t == DType::BF16 ? "CUDNN_DATA_BFLOAT16" : "CUDNN_DATA_FLOAT";
}

// Device pointers of one layer, as the session holds them (conv_layers.h, native_layers.h, volume_layers.h). x and y
// are FP32 NCHW tensors for a layer that runs on FP32 data (a plain FP32 session, or the FP32 copies a Tensor Core
// session makes), and channels-last tensors of the storage type for a layer that runs natively on that storage
// (compute/storage_format.h); the parameters are FP32 in PyTorch's layout either way.
struct LayerBuffers {
    const void* x = nullptr;
    const float* weight = nullptr;
    const float* bias = nullptr;
    void* y = nullptr;
    void* scratch = nullptr; // the layer's scratch bytes (convScratchBytes, volumeScratchBytes, ...) of it
    const void* skip = nullptr; // a conv2d's fused residual add (compute/fusion.h): its second input, stored like y
    // The FP32 view, for the layers on FP32 data.
    const float* xf() const { return static_cast<const float*>(x); }
    float* yf() const { return static_cast<float*>(y); }
};

// Owning wrappers; every create/set is checked.
class TensorDesc {
public:
    TensorDesc();
    ~TensorDesc();
    TensorDesc(const TensorDesc&) = delete;
    TensorDesc& operator=(const TensorDesc&) = delete;
    // Packed 4-D tensor in the given format (CUDNN_TENSOR_NCHW or CUDNN_TENSOR_NHWC) and element type.
    void set(cudnnTensorFormat_t format, int n, int c, int h, int w, cudnnDataType_t type = CUDNN_DATA_FLOAT);
    // Explicit strides (a window into a larger tensor).
    void setStrided(
        int n, int c, int h, int w, int sn, int sc, int sh, int sw, cudnnDataType_t type = CUDNN_DATA_FLOAT);
    // Packed 5-D tensor (volumes): NCDHW, or NDHWC when channelsLast; dimensions are given as N, C, D, H, W either way.
    void set5d(int n, int c, int d, int h, int w, bool channelsLast = false, cudnnDataType_t type = CUDNN_DATA_FLOAT);
    cudnnTensorDescriptor_t get() const { return m_desc; }

private:
    cudnnTensorDescriptor_t m_desc = nullptr;
};

class FilterDesc {
public:
    FilterDesc();
    ~FilterDesc();
    FilterDesc(const FilterDesc&) = delete;
    FilterDesc& operator=(const FilterDesc&) = delete;
    void set(cudnnTensorFormat_t format, int k, int c, int h, int w, cudnnDataType_t type = CUDNN_DATA_FLOAT);
    // [K, C, kd, kh, kw] in NCDHW order, or [K, kd, kh, kw, C] when channelsLast (cuDNN's NHWC filter format).
    void set5d(int k, int c, int d, int h, int w, bool channelsLast = false, cudnnDataType_t type = CUDNN_DATA_FLOAT);
    cudnnFilterDescriptor_t get() const { return m_desc; }

private:
    cudnnFilterDescriptor_t m_desc = nullptr;
};

class ConvDesc {
public:
    ConvDesc();
    ~ConvDesc();
    ConvDesc(const ConvDesc&) = delete;
    ConvDesc& operator=(const ConvDesc&) = delete;
    void set(int padH, int padW, int strideH, int strideW, int dilH, int dilW, int groups);
    // A 3-D convolution: pad, stride and dilation as {depth, height, width}.
    void set3d(const int pad[3], const int stride[3], const int dilation[3], int groups);
    void setMath(cudnnMathType_t math);
    cudnnConvolutionDescriptor_t get() const { return m_desc; }

private:
    cudnnConvolutionDescriptor_t m_desc = nullptr;
};

class PoolDesc {
public:
    PoolDesc();
    ~PoolDesc();
    PoolDesc(const PoolDesc&) = delete;
    PoolDesc& operator=(const PoolDesc&) = delete;
    void set(cudnnPoolingMode_t mode, int kh, int kw, int padH, int padW, int sh, int sw);
    cudnnPoolingDescriptor_t get() const { return m_desc; }

private:
    cudnnPoolingDescriptor_t m_desc = nullptr;
};

// cudnnOpTensor's operation (add, mul) in FP32, NaN propagated.
class OpTensorDesc {
public:
    explicit OpTensorDesc(cudnnOpTensorOp_t op);
    ~OpTensorDesc();
    OpTensorDesc(const OpTensorDesc&) = delete;
    OpTensorDesc& operator=(const OpTensorDesc&) = delete;
    cudnnOpTensorDescriptor_t get() const { return m_desc; }

private:
    cudnnOpTensorDescriptor_t m_desc = nullptr;
};

class ActivationDesc {
public:
    ActivationDesc();
    ~ActivationDesc();
    ActivationDesc(const ActivationDesc&) = delete;
    ActivationDesc& operator=(const ActivationDesc&) = delete;
    void set(cudnnActivationMode_t mode, double coef);
    cudnnActivationDescriptor_t get() const { return m_desc; }

private:
    cudnnActivationDescriptor_t m_desc = nullptr;
};

} // namespace convscope::cudnn

#define CONVSCOPE_CUDNN_CHECK(expr) ::convscope::cudnn::check((expr), #expr, __FILE__, __LINE__)
#define CONVSCOPE_CUBLAS_CHECK(expr) ::convscope::cudnn::check((expr), #expr, __FILE__, __LINE__)
