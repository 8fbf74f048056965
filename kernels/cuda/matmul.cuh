// The general tensor kinds of issue 30 on the device: matmul (torch.matmul: a batched tiled GEMM over the broadcast
// batch, compute/matmul_math.h's plan) and gather (a copy by compute/gather_math.h's plan, the indices in device
// memory). Each takes PyTorch's contiguous FP32 tensors or a session's channels-last storage (the plan's strides say
// which), and sums in FP32 whatever the storage type. Compiled into both GPU modules.
#pragma once

#include "compute/gather_math.h"
#include "compute/matmul_math.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <string>

namespace convscope::cuda {

// C = A · B per batch matrix: 32 × 32 output tiles of a block of 32 × 8 threads (4 outputs each), A's and B's 32 × 32
// tiles staged in shared memory, FP32 accumulation; `type` the storage type of all three.
void matmulBatched(const MatmulPlan& p, DType type, const void* a, const void* b, void* c, cudaStream_t st);
std::string matmulNote(const MatmulPlan& p);

// out = in gathered by the plan; `indices` the wrapped indices (int64, device memory); elements of `type`.
void gatherCopy(const GatherPlan& p, DType type, const void* in, const long long* indices, void* out, cudaStream_t st);

} // namespace convscope::cuda
