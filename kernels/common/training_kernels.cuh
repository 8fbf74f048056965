// The element-wise pieces both GPU training sessions share (kernels/cudnn/training_session.h, kernels/cuda/training/
// cuda_training_session.h): the optimizers' updates (torch.optim.SGD with momentum and weight decay, torch.optim.Adam),
// the sum of a tensor's gradients from several readers, the activations' backward (the cudnn session: the kinds
// cuDNN's activation API lacks; the cuda session: every kind; their forward is kernels/cuda/activation.cu), PReLU's,
// and the finiteness flag the step checks after the backward. FP32 math; one grid-stride kernel each, on the
// session's stream. Linked into every module through kernels_common.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace convscope::gpu::train {

// g = grad + wd·p; with momentum: buf = g on the first step (started false), else momentum·buf + g; p −= lr·buf.
// Without momentum (buf null): p −= lr·g. Both optimizers change nothing when `skip` (may be null) points at a
// non-zero flag: the step's loss was not finite (loss_kernels.cuh), so the parameters must stay as they were. Both set
// *nonFinite (when not null) if a gradient they read is NaN or infinite: the step's finiteness check of the parameter
// gradients at no extra read.
void sgdUpdate(float* param, const float* grad, float* buf, int64_t count, float lr, float momentum, float weightDecay,
    bool started, const int* skip, int* nonFinite, cudaStream_t stream);
// g = grad + wd·p; m = β1·m + (1 − β1)·g; v = β2·v + (1 − β2)·g²; p −= stepSize · m / (sqrt(v) / root2 + eps), with
// stepSize = lr / (1 − β1^t) and root2 = sqrt(1 − β2^t) computed by the caller in double.
void adamUpdate(float* param, const float* grad, float* m, float* v, int64_t count, float stepSize, float root2,
    float beta1, float beta2, float eps, float weightDecay, const int* skip, int* nonFinite, cudaStream_t stream);
// dst += src.
void accumulate(float* dst, const float* src, int64_t count, cudaStream_t stream);
// *flag = 1 when any of the `count` values is NaN or infinite (flag is left alone otherwise).
void flagNonFinite(const float* values, int64_t count, int* flag, cudaStream_t stream);

// The activations' backward with PyTorch's value at every kink (as the CPU's
// compute/training/norm_activation_backward.cpp): gx = f'(x) · gy from the forward's input x (sigmoid and tanh
// recompute f(x) from x). `param` is leaky_relu's negative_slope, elu's alpha or hardtanh's lower bound, `param2`
// hardtanh's upper bound.
enum class ActivationGrad { LeakyReLU, ReLU6, Hardswish, Hardsigmoid, SiLU, Hardtanh, ReLU, Sigmoid, Tanh, ELU };
void activationBackward(ActivationGrad kind, float param, float param2, const float* x, const float* gy, float* gx,
    int64_t count, cudaStream_t stream);

// PReLU on x [n, channels, plane] with `slopeCount` slopes (1 shared, or one per channel): gx = x > 0 ? gy : a·gy.
// (The slopes' gradient is a per-channel reduction: kernels/cuda/training/channel_reduce.cuh.)
void preluBackwardData(const float* slopes, int64_t slopeCount, int64_t n, int64_t channels, int64_t plane,
    const float* x, const float* gy, float* gx, cudaStream_t stream);

} // namespace convscope::gpu::train
