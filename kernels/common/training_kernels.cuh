// The element-wise pieces both GPU training sessions share (kernels/cudnn/training_session.h, kernels/cuda/training/
// cuda_training_session.h): the optimizers' updates (torch.optim.SGD with momentum and weight decay, torch.optim.Adam),
// the sum of a tensor's gradients from several readers, the activations' backward (the cudnn session: the kinds
// cuDNN's activation API lacks; the cuda session: every kind; their forward is kernels/cuda/activation.cu), PReLU's,
// and the finiteness flag the step checks after the backward. FP32 math; one grid-stride kernel each, on the
// session's stream. Linked into every module through kernels_common.
//
// Mixed precision (--math fp16 / bf16 on cudnn): activations and their gradients are stored in the step's storage type
// (DType, compute/storage_format.h) and every kernel here that reads or writes them takes that type (default FP32),
// widening to FP32 for its math. Parameters stay FP32 masters: the optimizers read a gradient in the storage type,
// multiplied by `unscale` (1 / the loss scale), and write the updated parameter's storage copy, which the forward
// and backward-data read (PyTorch's autocast casts the FP32 weight to FP16 in each forward; the copy is that cast,
// made once per update instead).
#pragma once

#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace convscope::gpu::train {

// A parameter gradient as an optimizer reads it: FP32, or (mixed precision) the storage type, scaled by the loss scale.
struct GradientIn {
    const void* data = nullptr;
    DType type = DType::F32;
    float unscale = 1.0f; // the gradient read is data[i] · unscale
};
// Where an optimizer also writes the updated parameter rounded to the storage type (data null: nowhere).
struct ParameterCopy {
    void* data = nullptr;
    DType type = DType::F16;
};

// g = grad + wd·p; with momentum: buf = g on the first step (started false), else momentum·buf + g; p −= lr·buf.
// Without momentum (buf null): p −= lr·g. Both optimizers change nothing when `skip` (may be null) points at a
// non-zero flag: the step's loss was not finite (loss_kernels.cuh), so the parameters must stay as they were. Both set
// *nonFinite (when not null) if a gradient they read is NaN or infinite: the step's finiteness check of the parameter
// gradients at no extra read.
void sgdUpdate(float* param, GradientIn grad, ParameterCopy copy, float* buf, int64_t count, float lr, float momentum,
    float weightDecay, bool started, const int* skip, int* nonFinite, cudaStream_t stream);
// g = grad + wd·p; m = β1·m + (1 − β1)·g; v = β2·v + (1 − β2)·g²; p −= stepSize · m / (sqrt(v) / root2 + eps), with
// stepSize = lr / (1 − β1^t) and root2 = sqrt(1 − β2^t) computed by the caller in double.
void adamUpdate(float* param, GradientIn grad, ParameterCopy copy, float* m, float* v, int64_t count, float stepSize,
    float root2, float beta1, float beta2, float eps, float weightDecay, const int* skip, int* nonFinite,
    cudaStream_t stream);
// dst += src, both of `type`.
void accumulate(void* dst, const void* src, int64_t count, cudaStream_t stream, DType type = DType::F32);
// *flag = 1 when any of the `count` values of `type` is NaN or infinite (flag is left alone otherwise).
void flagNonFinite(const void* values, int64_t count, int* flag, cudaStream_t stream, DType type = DType::F32);
// dst += src (of `type`, widened) in FP32: the phased step's gradient sums.
void addInto(float* dst, const void* src, DType type, int64_t count, cudaStream_t stream);
// dst = src · factor, converting between element types (the mixed-precision step's boundaries: the input up, the
// output and gradients down, the loss scale applied or removed).
void convertScaled(
    const void* src, DType srcType, void* dst, DType dstType, int64_t count, float factor, cudaStream_t stream);
// dst = src rounded to nearest even in `type` (FP16: ±inf past 65504, its subnormals below 2^-14; BF16: FP32's
// range) and widened back to FP32; dst may be src. The cuda session's mixed precision (HalfMath::RoundedProducts in
// gpu_training_session.h): the same values as the CPU's roundedTo (compute/training/mixed_products.h).
void roundThrough(const float* src, float* dst, int64_t count, DType type, cudaStream_t stream);

// The activations' backward with PyTorch's value at every kink (as the CPU's
// compute/training/norm_activation_backward.cpp): gx = f'(x) · gy from the forward's input x (sigmoid and tanh
// recompute f(x) from x). `param` is leaky_relu's negative_slope, elu's alpha or hardtanh's lower bound, `param2`
// hardtanh's upper bound.
enum class ActivationGrad { LeakyReLU, ReLU6, Hardswish, Hardsigmoid, SiLU, Hardtanh, ReLU, Sigmoid, Tanh, ELU };
void activationBackward(ActivationGrad kind, float param, float param2, const void* x, const void* gy, void* gx,
    int64_t count, cudaStream_t stream, DType type = DType::F32);

// PReLU on x [n, channels, plane] with `slopeCount` slopes (1 shared, or one per channel): gx = x > 0 ? gy : a·gy.
// (The slopes' gradient is a per-channel reduction: kernels/cuda/training/channel_reduce.cuh.)
void preluBackwardData(const float* slopes, int64_t slopeCount, int64_t n, int64_t channels, int64_t plane,
    const float* x, const float* gy, float* gx, cudaStream_t stream);

} // namespace convscope::gpu::train
