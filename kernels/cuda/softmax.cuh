// Our CUDA softmax and log_softmax along any axis.
#pragma once

#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// softmax (log: log_softmax) along the middle axis of a tensor viewed as [outer, size, inner] (compute/reduce.h's
// AxisView), in any storage type with FP32 math. The FP32 NCHW path and a session's storage both call it.
void softmaxAxis(
    long long outer, long long size, long long inner, bool log, DType type, const void* x, void* y, cudaStream_t st);

} // namespace convscope::cuda
