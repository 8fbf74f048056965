// Our CUDA reduce (mean, sum, max, min, l2) over any axes, in any storage type with FP32 accumulation.
#pragma once

#include "compute/reduce.h"
#include "compute/shape_inference.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// The plan of a reduce layer on FP32 NCHW tensors, and on a session's channels-last storage (compute/reduce.h).
inline ReducePlan reducePlanNchw(const Reduce& r, const LayerShape& s)
{
    const std::vector<int64_t> in = s.in.dims(), out = s.out.dims();
    return reducePlan(r, in, contiguousStrides(in), contiguousStrides(out));
}
inline ReducePlan reducePlanChannelsLast(const Reduce& r, const LayerShape& s)
{
    const std::vector<int64_t> in = s.in.dims(), out = s.out.dims();
    return reducePlan(r, in, channelsLastStrides(in), channelsLastStrides(out));
}

// Every output of the plan: a split reduction when few outputs each reduce many inputs (`scratch` of
// reduceScratchBytes; null: no split), one block per output when each reduces many inputs, else one thread per output.
size_t reduceScratchBytes(const ReducePlan& p, int sms);
void reduceTensor(
    const ReducePlan& p, Reduce::Op op, DType type, const void* x, void* y, void* scratch, int sms, cudaStream_t st);

} // namespace convscope::cuda
