// The normalization kinds' host side for the GPU modules' dispatches (cuda_backend.cpp, cudnn_session.cpp): a norm
// layer's plan (compute/normalization.h) as normalization.cuh's geometry. Compiled into both modules.
#pragma once

#include "compute/normalization.h"
#include "kernels/cuda/normalization.cuh"

namespace convscope::cuda {

NormGeometry normGeometryOf(const LayerSpec& spec, const Shape& in);

} // namespace convscope::cuda
