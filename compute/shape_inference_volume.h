// Shape inference of the 3-D kinds (conv3d, conv_transpose3d, maxpool3d, avgpool3d, global_avgpool3d, batchnorm3d).
// Internal to compute/: shape_inference.cpp's dispatch calls these; each throws InputError with a message a teacher
// can read, and fills the output shape, the formula of D, H and W with the numbers in, the resolved padding and the
// cost.
#pragma once

#include "compute/shape_inference.h"

namespace convscope {

// A max pool window that holds no element of the input (it lies in the padding, or its dilated taps step over the
// input) has no maximum: PyTorch returns −inf there, which poisons every layer after it. Refused, naming the window:
// `axis` is its label (H, W, D), `out` the windows along it.
void requireWindowsReachInput(const std::string& type, const std::string& axis, int64_t in, int64_t before, int64_t k,
    int64_t s, int64_t d, int64_t out);

} // namespace convscope

namespace convscope::volume {

// A 3-D kind fed anything but a 5-D [N, C, D, H, W] volume: the message names the kind and both ranks.
void requireVolume(const Shape& in, const std::string& type);

LayerShape inferConv3d(const Conv3d& l, const Shape& in);
LayerShape inferConvTranspose3d(const ConvTranspose3d& l, const Shape& in);
LayerShape inferMaxPool3d(const MaxPool3d& l, const Shape& in);
LayerShape inferAvgPool3d(const AvgPool3d& l, const Shape& in);
LayerShape inferGlobalAvgPool3d(const Shape& in);
LayerShape inferBatchNorm3d(const BatchNorm3d& l, const Shape& in);

} // namespace convscope::volume
