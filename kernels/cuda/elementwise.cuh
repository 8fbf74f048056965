// Element-wise layers on the GPU: activations (activation.cu) and batch norm in inference (batchnorm2d.cu).
// The layers that join branches are in merge.cuh.
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// The first five are also the kinds a convolution's epilogue applies (FusedActivation); the rest run as layers.
// Every dispatch over it is a switch without a default in code the host compiler sees (activation.cu's launch, and
// activation_op.cuh's epilogue, which is __host__ __device__ for this reason), so -Wswitch, an error in every build
// (cmake/ConvScopeWarnings.cmake), refuses one that misses a kind; the math per kind (applyActivation<K>) is an
// `if constexpr` chain that ends in a static_assert.
enum class ActivationKind { ReLU, LeakyReLU, Sigmoid, Tanh, ELU, ReLU6, Hardswish, Hardsigmoid, SiLU };

// y = f(x) over `count` elements; `param` is negative_slope (leaky_relu) or alpha (elu).
void activation(ActivationKind kind, float param, long long count, const float* x, float* y, cudaStream_t st);

// Folds the running statistics into one scale and shift per channel (done once, in prepare):
//   scale = weight / sqrt(var + eps), shift = bias − mean·scale   (weight 1, bias 0 when affine is false)
// `folded` receives [scale(C), shift(C)].
void batchNormFold(int channels, const float* mean, const float* var, const float* weight, const float* bias,
    double eps, float* folded, cudaStream_t st);
// y = x·scale[c] + shift[c] for x [n, c, h, w].
void batchNorm2d(int n, int c, int planeSize, const float* x, const float* folded, float* y, cudaStream_t st);

// A grid for a memory-bound grid-stride kernel: enough blocks to fill every multiprocessor several times.
int elementwiseBlocks(long long work, int threads);

} // namespace convscope::cuda
