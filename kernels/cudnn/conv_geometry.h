// The sizes every cuDNN convolution descriptor is filled from: batch, the layer's input and output channels, the
// spatial extents of input, output and kernel, stride, dilation and groups. They are read once, from a layer and its
// inferred shape, for N spatial axes (2: H, W for images; 3: D, H, W for volumes), each checked to fit cuDNN's 32-bit
// descriptor fields. The forward and transposed layouts of both ranks (conv_plan.h, volume_plan.h) are this plus
// what each path adds: the pad step, the NHWC switch, the crop window.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace convscope::cudnn {

// `v` as a descriptor field; UnsupportedError naming `what` when it is negative or does not fit 32 bits.
int toInt(int64_t v, const char* what);

template <size_t N> struct ConvGeometry {
    int n, cin, cout; // batch; the layer's input and output channels
    std::array<int, N> in, out, kernel, stride, dilation; // per spatial axis, outermost first
    int groups;
};

ConvGeometry<2> convGeometry(const Conv2d& spec, const LayerShape& shape);
ConvGeometry<2> convGeometry(const ConvTranspose2d& spec, const LayerShape& shape);
ConvGeometry<3> convGeometry(const Conv3d& spec, const LayerShape& shape);
ConvGeometry<3> convGeometry(const ConvTranspose3d& spec, const LayerShape& shape);

} // namespace convscope::cudnn
