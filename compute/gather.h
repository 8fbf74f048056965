// The gather kind (issue 30, compute/layer_spec_tensor.h) on the host: its output dims, the indices wrapped to
// non-negative, and the plan (compute/gather_math.h) the CPU op and the CUDA kernel run.
#pragma once

#include "compute/gather_math.h"
#include "compute/layer_spec.h"

#include <cstdint>
#include <vector>

namespace convscope {

// The gathered axis of a tensor of `rank` dims (negative counted from the end). Throws InputError when out of range.
int64_t gatherAxis(const Gather& g, int rank);
// The indices' dims: indices_shape, checked against the number of indices. Throws InputError.
std::vector<int64_t> gatherIndexDims(const Gather& g);
// data.shape[:axis] + indices_shape + data.shape[axis + 1:], after checking every index against the axis's size
// (InputError with the index, its position, the axis and its size). Ranks 1..6.
std::vector<int64_t> gatherOutputDims(const Gather& g, const std::vector<int64_t>& data);
// The indices wrapped to 0..size−1 for the axis's size (checked as above).
std::vector<int64_t> gatherWrappedIndices(const Gather& g, const std::vector<int64_t>& data);
// The plan for data of `data` dims laid out contiguously or channels-last (compute/matmul.h's tensorStrides), and the
// output likewise.
GatherPlan makeGatherPlan(const Gather& g, const std::vector<int64_t>& data, bool inChannelsLast, bool outChannelsLast);

} // namespace convscope
