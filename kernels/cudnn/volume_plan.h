// cuDNN on volumes (the volumes issue): conv3d, conv_transpose3d and the 3-D pools through the legacy API's Nd
// descriptors (5-D tensors and filters, a 3-D convolution descriptor, Nd pooling).
//
// What cuDNN cannot say directly is prepared around it, as conv_plan.h does for images:
//   asymmetric padding  (TensorFlow's "same" puts the odd plane at the back/bottom/right, which the lecture's
//                       autoencoder has on every layer) the descriptor pads both sides equally, so the input is
//                       first padded into scratch (the "pad step", volume_kernels.cu) and cuDNN runs with padding 0 —
//                       what PyTorch does for such padding too (F.pad, then the convolution);
//   conv_transpose3d    is cuDNN's backward-data convolution with padding 0 into a scratch of the full transposed
//                       size; a crop step takes the layer's window out of it and adds the bias (always: the crop also
//                       covers output_padding and asymmetric "same" cropping, which a symmetric descriptor cannot);
//   3-D pools           run on cuDNN when its floor-mode, symmetric-padding, undilated window is PyTorch's; anything
//                       else (ceil_mode adding a window, asymmetric padding, dilation, divisor_override) runs our
//                       kernel (pooling3d.cuh) and the layer note says why.
//
// Native (a Tensor Core session, compute/storage_format.h): conv3d and conv_transpose3d read and write the session's
// NDHWC tensors of the storage type in place, with [K, kd, kh, kw, C/g] filters of that type (cuDNN's NHWC filter
// format; converted once at prepare), an FP32 compute type and tensor-op math; the pad and crop steps run on the same
// channels-last data (volume_kernels.cuh).
//
// Algorithm choice: `auto` runs cudnnFindConvolutionForwardAlgorithmEx under the workspace limit, then times the
// acceptable algorithms within 1.5× of Find's best (at most four) with CUDA events, median of five, and keeps the
// fastest — cached per layer shape for the process. A pinned algorithm is checked with
// cudnnGetConvolutionForwardWorkspaceSize, whose failure carries cuDNN's reason.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/cudnn_support.h"

#include <optional>
#include <string>

namespace convscope::cudnn {

// The geometry's `in` is the input as given.
struct Conv3dLayout : ConvGeometry<3> {
    Padding3d pad; // resolved
    bool padStep; // asymmetric: pad into scratch, cuDNN padding 0
    int cudnnPad[3]; // cuDNN's symmetric padding (0 with the pad step)
    int pd, ph, pw; // the input cuDNN sees (padded with the pad step)
    bool native = false; // NDHWC tensors and filters of `storage` (else FP32 NCDHW)
    DType storage = DType::F32;
    size_t paddedFloats() const; // elements of the pad step's scratch (0 without)
};
// `native`: the layout for a session storing tensors channels-last in that type.
Conv3dLayout conv3dLayout(const Conv3d& spec, const LayerShape& shape, std::optional<DType> native = std::nullopt);

using Conv3dDescriptors = ConvDescriptors; // x, y, bias, w, conv as for conv2d, with 5-D tensors
// Sets every descriptor and checks cuDNN agrees on the output size.
void describe(const Conv3dLayout& layout, cudnnMathType_t math, Conv3dDescriptors& d);

struct Conv3dChoice {
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    cudnnMathType_t math = CUDNN_FMA_MATH;
    size_t workspace = 0;
    double ms = -1; // our median for the chosen algorithm (auto only)
    int timed = 0; // how many candidates auto timed
    bool cached = false;
};
// `auto` (pinned = nullopt) or a pinned algorithm (UnsupportedError with cuDNN's reason, or over the limit).
// x, w, y: device buffers of the layout's sizes (auto runs the candidates on them).
Conv3dChoice chooseConv3d(cudnnHandle_t h, const Conv3dLayout& layout, Conv3dDescriptors& d, const ConvOptions& o,
    std::optional<cudnnConvolutionFwdAlgo_t> pinned, const void* x, const void* w, void* y, cudaStream_t stream);
// Empty when the pinned algorithm can run this layer, else cuDNN's reason.
std::string conv3dPinnedRefusal(
    cudnnHandle_t h, const Conv3dLayout& layout, const ConvOptions& o, cudnnConvolutionFwdAlgo_t algo);

// conv_transpose3d as backward data into the full transposed output, then the crop step.
// The geometry's `in` is the layer input (cuDNN's dy), `out` the layer output.
struct ConvTranspose3dLayout : ConvGeometry<3> {
    int fd, fh, fw; // the full transposed output cuDNN writes
    int offD, offH, offW; // where the layer's window starts in it (the front/top/left crop)
    bool native = false; // NDHWC tensors and [C_in, kd, kh, kw, C_out/g] filters of `storage` (else FP32 NCDHW)
    DType storage = DType::F32;
    size_t fullFloats() const; // elements of the full output
};
ConvTranspose3dLayout convTranspose3dLayout(
    const ConvTranspose3d& spec, const LayerShape& shape, std::optional<DType> native = std::nullopt);

using ConvTranspose3dDescriptors = ConvTransposeDescriptors; // dy, dx, w, conv with 5-D tensors (bias unused)
void describe(const ConvTranspose3dLayout& layout, cudnnMathType_t math, ConvTranspose3dDescriptors& d);
BwdDataChoice chooseBwdData3d(cudnnHandle_t h, const ConvTranspose3dLayout& layout, ConvTranspose3dDescriptors& d,
    const ConvOptions& o, const void* w, const void* dy, void* dx);

// The 3-D pools: empty when cuDNN's pooling computes exactly PyTorch's result, else why our kernel runs instead.
std::string pool3dRefusal(const MaxPool3d& spec, const LayerShape& shape);
std::string pool3dRefusal(const AvgPool3d& spec, const LayerShape& shape);

// The explorer for a conv3d layer (volume_explorer.cpp): the same JSON document exploreConvolution writes for conv2d,
// with three-element kernel, stride and dilation and six-element padding.
std::string exploreConvolution3d(
    const Network& net, const ShapeReport& shapes, size_t index, const SessionOptions& options);

} // namespace convscope::cudnn
