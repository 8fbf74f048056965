#pragma once

#include "kernels/cuda/conv2d.cuh"

namespace convscope::cuda {

// Transposed convolution, gather form. Geometry as conv2d's (n, c, h, w input; k, p, q output; padTop/padLeft
// the crop at the top/left), weight [c, k/groups, r, s].
void convTranspose2dGather(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);

} // namespace convscope::cuda
