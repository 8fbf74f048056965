// The matmul kind (issue 30, compute/layer_spec_tensor.h): torch.matmul's shape rules on the host — the 1-D operand
// rules, NumPy's broadcast of the batch axes — and the plan (compute/matmul_math.h) the CPU ops and the CUDA kernels
// run, for PyTorch's contiguous layout or a GPU session's channels-last storage.
#pragma once

#include "compute/layer_spec.h"
#include "compute/matmul_math.h"
#include "compute/shape.h"

#include <cstdint>
#include <string>
#include <vector>

namespace convscope {

// torch.matmul's output dims for operands of dims `a` and `b` (ranks 1..6). Throws InputError naming both shapes
// (`aName`, `bName`: how the message calls them) when the inner sizes differ or the batch axes do not broadcast.
std::vector<int64_t> matmulOutputDims(
    const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::string& aName, const std::string& bName);

// The dims of the layer's two operands in `a · b` order, from its input shapes (two, or one and its constant).
// Throws InputError for a constant whose count its shape does not hold, or the wrong number of inputs.
struct MatmulOperands {
    std::vector<int64_t> a, b;
    int constantSide = -1; // 0: a is the constant, 1: b is, -1: two inputs
};
MatmulOperands matmulOperands(const Matmul& l, const std::vector<Shape>& ins);

// The plan of out = a · b. Each tensor is laid out contiguously (PyTorch's order, last axis fastest) or, where its
// flag says so, channels-last as a GPU session's storage format holds ranks above 2 ([n, rest..., c]).
MatmulPlan makeMatmulPlan(const std::vector<int64_t>& a, bool aChannelsLast, const std::vector<int64_t>& b,
    bool bChannelsLast, bool outChannelsLast);

// Whether each operand's batch matrices lie at a fixed stride (index · stride, 0 when the operand is broadcast over
// the whole batch) and the output is contiguous in PyTorch's order, so one strided-batched GEMM call runs it (cuBLAS,
// the CPU's batched loop); `stride` gets A's, B's and C's.
bool matmulUniformBatch(const MatmulPlan& p, int64_t stride[3]);

// The element strides of a tensor of `dims` (logical order), contiguous or channels-last ([n, rest..., c] for ranks
// above 2, as a GPU session stores them).
std::vector<int64_t> tensorStrides(const std::vector<int64_t>& dims, bool channelsLast);

} // namespace convscope
