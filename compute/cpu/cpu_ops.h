// The CPU implementations of every layer. Two families:
//   direct::  the readable loops a lecture shows; single-threaded; the reference everything else is
//             checked against (selection cpu.direct).
//   fast::    what cpu.im2col_gemm and cpu.tap_gemm run: im2col / col2im + OpenBLAS sgemm for convolutions with a
//             bounded workspace (or one sgemm per tap on the padded input), sgemm for linear, and multi-threaded
//             loops for the rest.
// Every function writes every element of `out`, which the caller allocates with the shape inferred by
// compute/shape_inference (so the output size rules live in one place). `pad` is the resolved padding
// (LayerShape::resolvedPadding). Weight layouts are PyTorch's (see compute/network.h).
#pragma once

#include "compute/binary.h"
#include "compute/layer_spec.h"
#include "compute/normalization.h"
#include "compute/resize_math.h"
#include "compute/shape_inference.h"
#include "compute/tensor.h"

#include <vector>

namespace convscope::cpu {

namespace direct {
    void conv2d(const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec, const Padding2d& pad,
        Tensor& out);
    void convTranspose2d(const Tensor& in, const Tensor& weight, const Tensor* bias, const ConvTranspose2d& spec,
        const Padding2d& pad, Tensor& out);
    void maxPool2d(const Tensor& in, const MaxPool2d& spec, const Padding2d& pad, Tensor& out);
    void avgPool2d(const Tensor& in, const AvgPool2d& spec, const Padding2d& pad, Tensor& out);
    void globalAvgPool2d(const Tensor& in, Tensor& out);
    // weight / bias may be null (affine = false)
    void batchNorm2d(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight, const Tensor* bias,
        double eps, Tensor& out);
    void activation(const Tensor& in, const LayerSpec& spec, Tensor& out); // the activations without weights
    // PReLU: x > 0 ? x : slope[c]·x, c = dim 1 of in (channel, or feature of a flat input); `slopes` holds 1 or C.
    void prelu(const Tensor& in, const Tensor& slopes, Tensor& out);
    void linear(const Tensor& in, const Tensor& weight, const Tensor* bias, Tensor& out);
    // softmax (log: log_softmax) along `axis` (0..rank-1, already wrapped); dim 1 by default.
    void softmax(const Tensor& in, Tensor& out, int64_t axis = 1, bool log = false);
    // reduce (mean, sum, max, min, l2) into out's shape (reduceOutputDims), double sums: reduce.cpp.
    void reduce(const Tensor& in, const Reduce& spec, Tensor& out);
    // Element-wise sum of two or more inputs of out's shape, summed in double.
    void add(const std::vector<const Tensor*>& ins, Tensor& out);
    // a · b element-wise; either may be [N, C, 1, 1] and is broadcast over the other's H and W.
    void mul(const Tensor& a, const Tensor& b, Tensor& out);
    // The inputs one after the other along `dim` (torch.cat; dim 0..rank-1, already wrapped).
    void concat(const std::vector<const Tensor*>& ins, int64_t dim, Tensor& out);
    // Constant, reflect or replicate padding of H and W (Pad::padding is [top, bottom, left, right]).
    void pad(const Tensor& in, const Pad& spec, Tensor& out);
    // Resize of H, W (an image) or D, H, W (a volume) by `plan` (compute/resize.h's resizePlan).
    void resize(const Tensor& in, const ResizePlan& plan, Tensor& out);
    // torch.nn.ChannelShuffle and x.narrow(dim, start, end − start) (shuffle_slice.cpp).
    void channelShuffle(const Tensor& in, const ChannelShuffle& spec, Tensor& out);
    void slice(const Tensor& in, const Slice& spec, Tensor& out);
    // x.permute(dims) made contiguous (dims already wrapped to 0..rank-1; shuffle_slice.cpp).
    void transpose(const Tensor& in, const std::vector<int64_t>& dims, Tensor& out);
    // out = a op b by the broadcast plan (binary.cpp), in double.
    void binary(const float* a, const float* b, const BinaryPlan& plan, Tensor& out);
} // namespace direct

namespace fast {
    void binary(const float* a, const float* b, const BinaryPlan& plan, Tensor& out); // float, threaded
    // Workspace bound of conv_transpose2d's column buffer: max(kMinWorkspaceBytes, the bytes of the layer's input +
    // output tensors). conv2d works in tiles of at most max(512, 1 MiB / 4K, 1024) output pixels, one column
    // buffer of K × tile floats per OpenMP thread (K = C_in/g · kh · kw).
    inline constexpr int64_t kMinWorkspaceBytes = 8 << 20;
    void conv2d(const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec, const Padding2d& pad,
        Tensor& out);
    // cpu.tap_gemm: one GEMM per kernel tap on the zero-padded input, for stride 1, ≥ 16 input channels per group
    // and not a 1×1 without padding (conv2dTapGemmApplies); any other layer goes to conv2d above.
    bool conv2dTapGemmApplies(const Conv2d& spec, int64_t inChannels);
    // Where the CPU has AVX-512, conv2dTapGemm runs our register tile instead, on a wider set: any equal strides, a
    // 1×1 and the stem's three input channels too, ≥ 8 output channels per group (conv2d_tap_gemm.cpp, v5).
    bool conv2dTapAvx512Applies(const Conv2d& spec, int64_t inChannels, int64_t outChannels);
    // `prepacked`: packTapWeights(weight, spec), made once (a session's prepare) where the AVX-512 tile runs the
    // layer; null packs the weights in the call.
    void conv2dTapGemm(const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec,
        const Padding2d& pad, Tensor& out, const float* prepacked = nullptr);
    // The weights in the AVX-512 tile's order: [group][32-channel block][tap][C_in/g][32], zero past C_out/g.
    std::vector<float> packTapWeights(const Tensor& weight, const Conv2d& spec);
    // The version without AVX-512 that conv2dTapGemm falls back to: one OpenBLAS sgemm per tap.
    void conv2dTapGemmBlas(const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec,
        const Padding2d& pad, Tensor& out);
    void convTranspose2d(const Tensor& in, const Tensor& weight, const Tensor* bias, const ConvTranspose2d& spec,
        const Padding2d& pad, Tensor& out);
    void maxPool2d(const Tensor& in, const MaxPool2d& spec, const Padding2d& pad, Tensor& out);
    void avgPool2d(const Tensor& in, const AvgPool2d& spec, const Padding2d& pad, Tensor& out);
    void globalAvgPool2d(const Tensor& in, Tensor& out);
    void batchNorm2d(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight, const Tensor* bias,
        double eps, Tensor& out);
    void activation(const Tensor& in, const LayerSpec& spec, Tensor& out);
    void prelu(const Tensor& in, const Tensor& slopes, Tensor& out);
    void linear(const Tensor& in, const Tensor& weight, const Tensor* bias, Tensor& out);
    void softmax(const Tensor& in, Tensor& out, int64_t axis = 1, bool log = false);
    void reduce(const Tensor& in, const Reduce& spec, Tensor& out);
    // As direct::, in float across OpenMP threads (add sums in the order the inputs are named, as PyTorch's x + y + z).
    void add(const std::vector<const Tensor*>& ins, Tensor& out);
    void mul(const Tensor& a, const Tensor& b, Tensor& out);
    void concat(const std::vector<const Tensor*>& ins, int64_t dim, Tensor& out);
    void pad(const Tensor& in, const Pad& spec, Tensor& out);
    void resize(const Tensor& in, const ResizePlan& plan, Tensor& out);
    void channelShuffle(const Tensor& in, const ChannelShuffle& spec, Tensor& out);
    void slice(const Tensor& in, const Slice& spec, Tensor& out);
    void transpose(const Tensor& in, const std::vector<int64_t>& dims, Tensor& out);
} // namespace fast

// The 3-D kinds on volumes [N, C, D, H, W] (the volumes issue), with the same two families: `pad` is the resolved
// padding (LayerShape::resolvedPadding3d); weights are PyTorch's [C_out, C_in/g, kd, kh, kw] (conv3d) and
// [C_in, C_out/g, kd, kh, kw] (conv_transpose3d).
namespace direct {
    void conv3d(const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv3d& spec, const Padding3d& pad,
        Tensor& out);
    void convTranspose3d(const Tensor& in, const Tensor& weight, const Tensor* bias, const ConvTranspose3d& spec,
        const Padding3d& pad, Tensor& out);
    void maxPool3d(const Tensor& in, const MaxPool3d& spec, const Padding3d& pad, Tensor& out);
    void avgPool3d(const Tensor& in, const AvgPool3d& spec, const Padding3d& pad, Tensor& out);
    void globalAvgPool3d(const Tensor& in, Tensor& out);
    void batchNorm3d(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight, const Tensor* bias,
        double eps, Tensor& out);
} // namespace direct

namespace fast {
    // vol2col tiles + one single-threaded sgemm per (image, group, tile), as conv2d's im2col_gemm.
    void conv3d(const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv3d& spec, const Padding3d& pad,
        Tensor& out);
    // sgemm Wᵀ·X then col2vol, as conv_transpose2d's col2im_gemm.
    void convTranspose3d(const Tensor& in, const Tensor& weight, const Tensor* bias, const ConvTranspose3d& spec,
        const Padding3d& pad, Tensor& out);
    void maxPool3d(const Tensor& in, const MaxPool3d& spec, const Padding3d& pad, Tensor& out);
    void avgPool3d(const Tensor& in, const AvgPool3d& spec, const Padding3d& pad, Tensor& out);
    void globalAvgPool3d(const Tensor& in, Tensor& out);
    void batchNorm3d(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight, const Tensor* bias,
        double eps, Tensor& out);
} // namespace fast

// layer_norm, group_norm, instance_norm by compute/normalization.h's plan (normalization.cpp); weight and bias hold the
// plan's parameters (1 and 0 where the layer has none).
namespace direct {
    void normalization(const Tensor& in, const Tensor& weight, const Tensor& bias, const NormPlan& plan, Tensor& out);
}
namespace fast {
    void normalization(const Tensor& in, const Tensor& weight, const Tensor& bias, const NormPlan& plan, Tensor& out);
}

// The binary layer's plan and operand pointers (its inputs and its constant), and the layer run on them.
BinaryPlan binaryLayerPlan(const Binary& l, const LayerShape& s, const std::vector<const Tensor*>& ins,
    const Tensor* constant, const float*& a, const float*& b);
void runBinary(const Binary& l, const LayerShape& s, const std::vector<const Tensor*>& ins, const Tensor* constant,
    Tensor& out, bool fast);

// matmul (torch.matmul, compute/matmul.h) of two contiguous inputs, or one and the layer's constant: double sums (fast
// false) or one sgemm per batch matrix (matmul.cpp); gather with constant indices (compute/gather.h): a copy.
void runMatmul(const Matmul& l, const LayerShape& s, const std::vector<const Tensor*>& ins, const Tensor* constant,
    Tensor& out, bool fast);
void runGather(const Gather& l, const Tensor& in, Tensor& out);

} // namespace convscope::cpu
