// The CPU backward ops of the training step (issue 33), PyTorch's autograd semantics exactly. Every function
// overwrites every element of what it writes (gx, gw, gb); the training session sums the gradients of a tensor read
// by several layers. Shapes are the forward's: gy has the layer output's shape, gx the input's, gw the weight's.
//   direct::  plain loops with double sums: the reference (cpu.direct), and what the finite-difference tests check.
//   fast::    conv2d, conv_transpose2d, conv3d, conv_transpose3d and linear through im2col / vol2col +
//             detail::parallelSgemm (cpu.im2col_gemm); every other kind has one implementation (below, outside both
//             namespaces), loops that sum in double, threaded on the fast path (`parallel`).
// `pad` is the resolved padding (LayerShape::resolvedPadding), as in the forward ops (compute/cpu/cpu_ops.h).
// `parallel` (the fast CPU algorithms pass true; cpu.direct stays on one thread): split across the OpenMP team above
// detail::kMinParallelElements elements. Each element is computed by one thread in the same order either way, so the
// results are bit-identical. cpu.direct's 2-D convolution gradients (and its forward convolutions, compute/cpu/) are
// split across the team by planes and weight rows in the same way: on a deep network they are most of its step.
#pragma once

#include "compute/binary.h"
#include "compute/shape_inference.h"

#include "compute/layer_spec.h"
#include "compute/normalization.h"
#include "compute/tensor.h"

#include <cstdint>
#include <vector>

namespace convscope::cpu::grad {

namespace direct {
    // gx = ∂L/∂x of y = conv2d(x, w) given gy = ∂L/∂y.
    void conv2dData(const Tensor& gy, const Tensor& weight, const Conv2d& spec, const Padding2d& pad, Tensor& gx);
    // gw (and gb when not null: Σ gy over N, H, W) given the forward's input x.
    void conv2dWeights(
        const Tensor& gy, const Tensor& x, const Conv2d& spec, const Padding2d& pad, Tensor& gw, Tensor* gb);
    void convTranspose2dData(
        const Tensor& gy, const Tensor& weight, const ConvTranspose2d& spec, const Padding2d& pad, Tensor& gx);
    void convTranspose2dWeights(
        const Tensor& gy, const Tensor& x, const ConvTranspose2d& spec, const Padding2d& pad, Tensor& gw, Tensor* gb);
    // y = x·Wᵀ + b with x [N, in], W [out, in] (stored {out, in, 1, 1}).
    void linearData(const Tensor& gy, const Tensor& weight, Tensor& gx);
    void linearWeights(const Tensor& gy, const Tensor& x, Tensor& gw, Tensor* gb);
    // The 3-D convolutions on volumes [N, C, D, H, W] (`pad` is LayerShape::resolvedPadding3d).
    void conv3dData(const Tensor& gy, const Tensor& weight, const Conv3d& spec, const Padding3d& pad, Tensor& gx);
    void conv3dWeights(
        const Tensor& gy, const Tensor& x, const Conv3d& spec, const Padding3d& pad, Tensor& gw, Tensor* gb);
    void convTranspose3dData(
        const Tensor& gy, const Tensor& weight, const ConvTranspose3d& spec, const Padding3d& pad, Tensor& gx);
    void convTranspose3dWeights(
        const Tensor& gy, const Tensor& x, const ConvTranspose3d& spec, const Padding3d& pad, Tensor& gw, Tensor* gb);
} // namespace direct

namespace fast {
    void conv2dData(const Tensor& gy, const Tensor& weight, const Conv2d& spec, const Padding2d& pad, Tensor& gx);
    void conv2dWeights(
        const Tensor& gy, const Tensor& x, const Conv2d& spec, const Padding2d& pad, Tensor& gw, Tensor* gb);
    void convTranspose2dData(
        const Tensor& gy, const Tensor& weight, const ConvTranspose2d& spec, const Padding2d& pad, Tensor& gx);
    void convTranspose2dWeights(
        const Tensor& gy, const Tensor& x, const ConvTranspose2d& spec, const Padding2d& pad, Tensor& gw, Tensor* gb);
    void linearData(const Tensor& gy, const Tensor& weight, Tensor& gx);
    void linearWeights(const Tensor& gy, const Tensor& x, Tensor& gw, Tensor* gb);
    // vol2col / col2vol + parallel sgemm: the same column matrix as the 2-D ops with a depth axis.
    void conv3dData(const Tensor& gy, const Tensor& weight, const Conv3d& spec, const Padding3d& pad, Tensor& gx);
    void conv3dWeights(
        const Tensor& gy, const Tensor& x, const Conv3d& spec, const Padding3d& pad, Tensor& gw, Tensor* gb);
    void convTranspose3dData(
        const Tensor& gy, const Tensor& weight, const ConvTranspose3d& spec, const Padding3d& pad, Tensor& gx);
    void convTranspose3dWeights(
        const Tensor& gy, const Tensor& x, const ConvTranspose3d& spec, const Padding3d& pad, Tensor& gw, Tensor* gb);
} // namespace fast

// Batch norm in training mode (torch.nn.BatchNorm2d.train(), and BatchNorm3d over D·H·W planes): the batch's own mean
// and biased variance normalise, and the running statistics move by `momentum` toward the batch mean and the *unbiased*
// variance. `mean` and `invstd` (one per channel, 1/sqrt(var + eps)) are kept for the backward. weight / bias null:
// affine = false.
struct BatchStats {
    std::vector<double> mean, invstd;
    // The fast path's per-channel {Σ gy, Σ gy·x̂} (dβ, dγ), kept by batchNorm2dData for the batchNorm2dWeights that
    // follows it on the same gy and x (one read of both instead of two); batchNorm2dWeights takes them once.
    std::vector<double> gradientSums;
    const float* sumsOf[2] = { nullptr, nullptr }; // the gy and x they were summed from (null: none kept)
};
void batchNorm2dTrainForward(const Tensor& x, const Tensor* weight, const Tensor* bias, double eps, double momentum,
    Tensor& runningMean, Tensor& runningVar, Tensor& y, BatchStats& stats, bool parallel = false);
void batchNorm2dData(
    const Tensor& gy, const Tensor& x, const Tensor* weight, BatchStats& stats, Tensor& gx, bool parallel = false);
void batchNorm2dWeights(
    const Tensor& gy, const Tensor& x, BatchStats& stats, Tensor& gw, Tensor& gb, bool parallel = false);

// The activations without weights (relu, leaky_relu, sigmoid, tanh, elu, relu6, hardswish, hardsigmoid, silu,
// hardtanh), from the forward's input x, with PyTorch's value at every kink (relu'(0) = 0, hardtanh' = 0 on its
// bounds, elu'(0) = alpha, hardswish'(±3) as its formula's branches). Throws InputError for another kind.
void activation(const Tensor& gy, const Tensor& x, const LayerSpec& spec, Tensor& gx, bool parallel = false);
// PReLU: gx = x > 0 ? gy : a·gy; ga = Σ (x > 0 ? 0 : x·gy) per slope (one slope, or one per channel).
void preluData(const Tensor& gy, const Tensor& x, const Tensor& slopes, Tensor& gx);
void preluWeights(const Tensor& gy, const Tensor& x, Tensor& gslopes);

// Max pooling sends each output's gradient to its window's argmax, found as PyTorch's CPU kernel finds it: the first
// largest value in row-major window order, a NaN replacing it (the last NaN wins); several outputs that share an
// argmax add up there.
void maxPool2d(
    const Tensor& gy, const Tensor& x, const MaxPool2d& spec, const Padding2d& pad, Tensor& gx, bool parallel = false);
// Average pooling spreads gy / divisor over the window's real pixels, with the forward's divisor rule.
void avgPool2d(const Tensor& gy, const AvgPool2d& spec, const Padding2d& pad, Tensor& gx, bool parallel = false);
// Global average pooling of an image or a volume (the mean over H·W or D·H·W): gy / area everywhere.
void globalAvgPool2d(const Tensor& gy, Tensor& gx);
// The 3-D pools, with their forward's rules (maxpool3d.cpp, avgpool3d.cpp).
void maxPool3d(const Tensor& gy, const Tensor& x, const MaxPool3d& spec, const Padding3d& pad, Tensor& gx);
void avgPool3d(const Tensor& gy, const AvgPool3d& spec, const Padding3d& pad, Tensor& gx);

// softmax along `axis` (wrapped; dim 1 by default) from its output y: gx = y · (gy − Σ gy·y) along the axis; for
// log_softmax gx = gy − e^y · Σ gy (reduce_backward.cpp).
void softmax(const Tensor& gy, const Tensor& y, Tensor& gx, bool parallel = false, int64_t axis = 1, bool log = false);
// reduce from its input x and output y: mean gy / k, sum gy, max and min gy split evenly among the tied extremes
// (torch.amax's rule), l2 gy · x / y (0 where the norm is 0), broadcast over the reduced axes.
void reduce(const Tensor& gy, const Tensor& x, const Tensor& y, const Reduce& spec, Tensor& gx);
// The gradient of one factor of y = a · b: gx = gy · other, summed over H and W when this factor was broadcast
// ([N, C, 1, 1] against a larger gy).
void mulInput(const Tensor& gy, const Tensor& other, Tensor& gx);
// binary (binary_backward.cpp): the gradient of operand `which` (0: a, 1: b) of out = a op b by the broadcast plan,
// summed in double over the outputs a broadcast operand reached; and of the layer's input j (its constant gets none).
void binaryInput(const Tensor& gy, const float* a, const float* b, const BinaryPlan& plan, int which, Tensor& g);
void binaryLayerInput(const Binary& l, const LayerShape& s, const std::vector<const Tensor*>& ins,
    const Tensor* constant, size_t j, const Tensor& gy, Tensor& gx);
// matmul (tensor_backward.cpp): the gradient of operand `which` (0: a, 1: b) of c = a · b (torch.matmul), summed in
// double over the batch matrices a broadcast operand served; gather: dy scattered back by the indices (summed).
void matmulInput(const Tensor& gy, const Tensor& a, const Tensor& b, size_t which, Tensor& g);
void matmulLayerInput(const Matmul& l, const LayerShape& s, const std::vector<const Tensor*>& ins,
    const Tensor* constant, size_t j, const Tensor& gy, Tensor& gx); // input j's (the constant gets none)
void gatherInput(const Gather& l, const Tensor& gy, Tensor& gx);
// Input `gx`'s channels of concat's gy, from channel `offset` on.
void concatInput(const Tensor& gy, int64_t offset, Tensor& gx);
// Pad: the interior of gy; reflect and replicate add each border pixel's gradient onto the pixel it copied.
void pad(const Tensor& gy, const Pad& spec, Tensor& gx);
// Slice: zeros, with gy copied into the window [start, end) of axis `dim`.
void slice(const Tensor& gy, const Slice& spec, Tensor& gx);
// dst = src (add's inputs, flatten, identity; the same element count).
void copy(const Tensor& src, Tensor& dst);
// dst += src, element-wise (a tensor read by several layers sums their gradients).
void accumulate(const Tensor& src, Tensor& dst, bool parallel = false);

// Dropout in training mode: each element is zeroed with probability p and the rest scaled by 1 / (1 − p), with a
// mask drawn from ConvScope's seeded generator (compute/random.h; PyTorch's own generator's mask cannot be
// reproduced). mask holds 0 or 1 / (1 − p) per element; the backward is gx = gy · mask.
void dropoutForward(const Tensor& x, double p, uint64_t seed, std::vector<float>& mask, Tensor& y);
void dropoutBackward(const Tensor& gy, const std::vector<float>& mask, Tensor& gx);

// Is every element finite?
bool allFinite(const Tensor& t, bool parallel = false);

// layer_norm, group_norm, instance_norm (norm_backward.cpp): their forward is cpu::direct/fast::normalization with the
// session's weight and bias; these recompute each row's statistics from x. gw / gb null: not a parameter (affine false,
// layer_norm's bias false).
void normalizationData(
    const Tensor& gy, const Tensor& x, const Tensor& weight, const NormPlan& plan, Tensor& gx, bool parallel = false);
void normalizationWeights(
    const Tensor& gy, const Tensor& x, const NormPlan& plan, Tensor* gw, Tensor* gb, bool parallel = false);

} // namespace convscope::cpu::grad
