// matmul and gather (issue 30) for the GPU modules' dispatches (cuda_backend.cpp, stored_dispatch.cpp,
// cudnn_session.cpp): the plans from compute/matmul.h and compute/gather.h for the session's layout, gather's indices
// in the layer's scratch, the kernels of matmul.cu. Compiled into both modules.
#pragma once

#include "compute/elementwise_math.h"
#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <string>
#include <type_traits>
#include <vector>

namespace convscope::cuda {

template <typename T>
inline constexpr bool isGeneralTensorKind = std::is_same_v<T, Matmul> || std::is_same_v<T, Gather>;
// These and the tensor-maths kinds (gelu, softplus, mish, unary, binary): our kernels on every GPU backend.
template <typename T>
inline constexpr bool isOurTensorKind = isElementwiseMathKind<T> || std::is_same_v<T, Binary> || isGeneralTensorKind<T>;

// The layer's scratch: gather's wrapped indices (int64); 0 for matmul and every other kind.
size_t tensorKindScratchBytes(const LayerSpec& spec);
// Untimed, at prepare: gather's indices into the scratch (the stream is synchronised). The layer note.
std::string prepareTensorKind(const LayerSpec& spec, const LayerShape& s, void* scratch, cudaStream_t st);
// One pass: tensors of `type`, laid out channels-last where `channelsLast` (a session's storage format), else
// PyTorch's contiguous layout; `constant` matmul's constant operand (FP32, contiguous: such a layer runs on FP32 data).
void runTensorKind(const LayerSpec& spec, const LayerShape& s, DType type, bool channelsLast,
    const std::vector<const void*>& inputs, const float* constant, const void* scratch, void* y, cudaStream_t st);
// Whether the layer runs in a storage format's type: not a matmul by a constant (its FP32 operand would mix types).
bool tensorKindRunsInStorage(const LayerSpec& spec);

} // namespace convscope::cuda
