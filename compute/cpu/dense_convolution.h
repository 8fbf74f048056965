// Convolutions that are linear layers: a conv2d whose window covers its whole input (DCGAN's discriminator head,
// 512 × 4 × 4 → 1) or a conv_transpose2d whose input is one pixel (DCGAN's generator stem, a 100-long code → 512 ×
// 4 × 4), without padding, dilation or groups. Their im2col / col2im moves one element per column row, which cost
// more than the products (the head's forward took 2 ms for 131 072 multiply-adds at batch 16); as one GEMM over
// the flattened images they take microseconds. The weight's flat layout is already the matrix:
//   conv2d            W [O, C·kh·kw]:  y = x · Wᵀ (+ b)          gx = gy · W          gW = gyᵀ · x
//   conv_transpose2d  W [C, O·kh·kw]:  y = x · W  (+ b per O)    gx = gy · Wᵀ         gW = xᵀ · gy
// Each is one of a linear layer's products (op_common.h), a transposed convolution's forward and data swapped.
// cpu.im2col_gemm's forward and the fast backward (conv_backward_gemm.cpp) take this path when it applies.
#pragma once

#include "compute/layer_spec.h"
#include "compute/tensor.h"

namespace convscope::cpu::fast {

bool conv2dIsDense(const Conv2d& spec, const Padding2d& pad, const Shape& in, const Shape& out);
bool convTranspose2dIsDense(const ConvTranspose2d& spec, const Padding2d& pad, const Shape& in, const Shape& out);

// The forward (bias optional, as the layer's), for a layer the predicate above accepted.
void denseConv2d(const Tensor& in, const Tensor& weight, const Tensor* bias, Tensor& out);
void denseConvTranspose2d(const Tensor& in, const Tensor& weight, const Tensor* bias, Tensor& out);
// The data and weight gradients (the bias gradient is the caller's, a sum per output channel).
void denseConv2dData(const Tensor& gy, const Tensor& weight, Tensor& gx);
void denseConv2dWeights(const Tensor& gy, const Tensor& x, Tensor& gw);
void denseConvTranspose2dData(const Tensor& gy, const Tensor& weight, Tensor& gx);
void denseConvTranspose2dWeights(const Tensor& gy, const Tensor& x, Tensor& gw);

} // namespace convscope::cpu::fast
