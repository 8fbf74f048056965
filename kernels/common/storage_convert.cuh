// Conversions between FP32 NCHW tensors (what the host holds and every FP32 kernel takes) and a session's storage
// format (compute/storage_format.h). Shapes are NCHW, NCDHW or [N, F]; channels-last puts C innermost (NHWC,
// NDHWC); a [N, F] tensor is the same in both. All asynchronous on `stream`.
#pragma once

#include "compute/shape.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

namespace convscope::gpu {

// FP32 NCHW → storage (rounding to nearest even where the type is narrower).
void toStorage(const float* src, void* dst, const Shape& shape, StorageFormat format, cudaStream_t stream);
// storage → FP32 NCHW (exact).
void fromStorage(const void* src, float* dst, const Shape& shape, StorageFormat format, cudaStream_t stream);
// n values FP32 → `type`, same order (weights).
void convertValues(const float* src, void* dst, int64_t n, DType type, cudaStream_t stream);
// A channels-last tensor of `shape` into NCHW element order, same type: PyTorch's flatten of the NCHW tensor.
void channelsLastToNchw(const void* src, void* dst, const Shape& shape, DType type, cudaStream_t stream);

} // namespace convscope::gpu
