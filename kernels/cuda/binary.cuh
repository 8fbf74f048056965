// The binary kind on the device (issue 30): out = a op b with NumPy's broadcasting, by compute/binary_math.h's plan
// (the strides of each operand along the output's axes in memory order, 0 where it is broadcast), so one kernel
// serves NCHW FP32 and channels-last storage. Compiled into both GPU modules.
#pragma once

#include "compute/binary_math.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// FP32 operands and output.
void binaryBroadcast(const BinaryPlan& plan, const float* a, const float* b, float* y, cudaStream_t st);
// In a session's storage type: the output and the activation operands are `type`; an operand flagged FP32 (the
// layer's constant) is read as float.
void binaryBroadcastStored(
    const BinaryPlan& plan, DType type, const void* a, bool aFp32, const void* b, bool bFp32, void* y, cudaStream_t st);

} // namespace convscope::cuda
