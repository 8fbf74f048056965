// The tensor-maths kinds of one input on the device (issue 30): gelu, softplus, mish and unary's exp, log, sqrt,
// reciprocal, neg, abs, erf (compute/elementwise_math.h holds the formulas, shared with the CPU). Layout-free, so
// one kernel serves NCHW FP32 and every storage format. Compiled into both GPU modules.
#pragma once

#include "compute/elementwise_math.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// y = f(x) over `count` FP32 elements.
void elementwiseMath(const MathOp& op, long long count, const float* x, float* y, cudaStream_t st);
// The same in a session's storage type (FP32, FP16 or BF16 values, FP32 math).
void elementwiseMathStored(const MathOp& op, long long count, DType type, const void* x, void* y, cudaStream_t st);

} // namespace convscope::cuda
