// Shape inference of the 3-D kinds (conv3d, conv_transpose3d, maxpool3d, avgpool3d, global_avgpool3d, batchnorm3d).
// Internal to compute/: shape_inference.cpp's dispatch calls these; each throws InputError with a message a teacher
// can read, and fills the output shape, the formula of D, H and W with the numbers in, the resolved padding and the
// cost.
#pragma once

#include "compute/shape_inference.h"

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
