// The tensor-maths kinds of issue 30 on the device, one entry per session path for the GPU modules' dispatches
// (cuda_backend.cpp, stored_dispatch.cpp, cudnn_session.cpp): gelu, softplus, mish, unary (elementwise_math.cu) and
// binary (binary.cu, its operands' pointers and broadcast plan from compute/binary.h). Compiled into both modules.
#pragma once

#include "compute/elementwise_math.h"
#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <type_traits>
#include <vector>

namespace convscope::cuda {

template <typename T> inline constexpr bool isTensorMathKind = isElementwiseMathKind<T> || std::is_same_v<T, Binary>;

// FP32 NCHW: `inputs` the layer's inputs, `constant` its materialised constant (binary's; null otherwise).
void runTensorMath(const LayerSpec& spec, const LayerShape& s, const std::vector<const float*>& inputs,
    const float* constant, float* y, cudaStream_t st);
// In a session's storage format (channels-last `type` activations; the constant stays FP32 NCHW).
void runTensorMathStored(const LayerSpec& spec, const LayerShape& s, DType type, const std::vector<const void*>& inputs,
    const float* constant, void* y, cudaStream_t st);

} // namespace convscope::cuda
