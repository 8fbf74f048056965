// The cuda backend's algorithm names and what each of them supports (cuda_support.cpp): the answers the module's
// Backend::supports gives, apart from the module's session and dispatch (cuda_backend.cpp).
#pragma once

#include "compute/backend.h"
#include "compute/layer_spec.h"
#include "compute/shape_inference.h"

#include <string>

namespace convscope::cuda {

inline constexpr const char* kDirect = "direct";
inline constexpr const char* kTiled = "tiled";
inline constexpr const char* kImplicitGemm = "implicit_gemm";
inline constexpr const char* kWinograd = "winograd";
inline constexpr const char* kFft = "fft";
// Tensor Cores (tf32, fp16, bf16 math only): conv2d layers of one group run conv2d_tensor_core.cu in the session's
// storage format; the convolutions it refuses (grouped, depthwise), transposed and 3-D ones run the storage-format
// kernels of stored_conv.cuh, and every other layer its storage-format kernel (stored_dispatch.h).
inline constexpr const char* kTensorCore = "tensor_core";

inline bool isKnownAlgorithm(const std::string& a)
{
    return a == kDirect || a == kTiled || a == kImplicitGemm || a == kWinograd || a == kFft || a == kTensorCore;
}

// Whether cuda.<algorithm> runs a layer of this kind and shape, or why not (a reason a person can act on).
Support cudaSupport(const std::string& algorithm, const LayerSpec& spec, const LayerShape& shape);

} // namespace convscope::cuda
