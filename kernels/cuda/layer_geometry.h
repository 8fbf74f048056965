// The cuda backend's view of a layer: a spec and its inferred shape (padding resolved) mapped to the int geometry
// structs the kernels take, and a fused activation mapped to the epilogue's ActivationKind.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "kernels/cuda/activation_kind.h"
#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/merge.cuh"
#include "kernels/cuda/pooling.cuh"

namespace convscope::cuda {

// A fused activation (an activation spec, compute/fusion.h) for a convolution's epilogue; throws for a kind that has
// no epilogue form (hardtanh, prelu and softmax run kernels of their own).
ActivationKind activationKind(const LayerSpec& spec, float* param);
// Conv2d with its fused activation, if any; ConvTranspose2d (which never fuses).
ConvGeometry geometryOf(const Conv2d& c, const LayerShape& s);
ConvGeometry geometryOf(const ConvTranspose2d& c, const LayerShape& s);
PoolGeometry poolGeometry(const LayerShape& s, const Pair& kernel, const Pair& stride, const Pair& dilation);
PadMode padMode(Pad::Mode m);

} // namespace convscope::cuda
