// softmax / log_softmax along any axis and the reduce kind (issue 30): the axis arithmetic every backend shares.
// A tensor of any rank 1..6 is viewed around one axis as [outer, size, inner] (softmax), or split into the axes
// kept and the axes reduced (reduce); shape inference has checked the axes, and these throw InputError otherwise.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape.h"

#include <cstdint>
#include <string>
#include <vector>

namespace convscope {

// `dim` of a tensor of `rank` dims wrapped to 0..rank-1 (PyTorch's rule: -rank..rank-1); InputError naming `what`
// (the kind) otherwise.
int64_t wrapAxis(int64_t dim, int rank, const std::string& what);

// A tensor viewed around one axis: outer · size · inner elements, the axis `size` long with stride `inner`.
struct AxisView {
    int64_t outer = 1, size = 1, inner = 1;
};
AxisView axisView(const std::vector<int64_t>& dims, int64_t axis);
AxisView softmaxView(const Shape& s, int64_t dim); // dim as the spec has it (negative allowed)

// Reduce's axes, wrapped and sorted; every axis when the spec lists none. InputError for an axis out of range or one
// given twice.
std::vector<int64_t> reduceAxes(const Reduce& r, int rank);
// The output dims: the reduced axes 1 (keepdim) or gone; all gone (torch's 0-d tensor) is [1] here, the engine's
// smallest rank.
std::vector<int64_t> reduceOutputDims(const Reduce& r, const std::vector<int64_t>& in);

// "mean", "sum", "max", "min", "l2": the file's op names.
const char* reduceOpName(Reduce::Op op);
// The op of a name, or false.
bool parseReduceOp(const std::string& name, Reduce::Op* op);

// A reduction split for a loop: the input's dims permuted so that the kept axes come first (in order) and the reduced
// last (axes of size 1 dropped, neighbours that are one run in memory merged: rank may be below the input's); `kept`
// elements of the output, each the reduction of `reduced` inputs. strides[k] is the input's stride of permuted axis k
// (elements), dims[k] its size, outStrides[k] (k < keptAxes) the output's stride of kept axis k. Plain data, so the
// CUDA kernels take it by value.
struct ReducePlan {
    int rank = 0, keptAxes = 0;
    long long dims[6] = { 1, 1, 1, 1, 1, 1 };
    long long strides[6] = { 0, 0, 0, 0, 0, 0 };
    long long outStrides[6] = { 0, 0, 0, 0, 0, 0 };
    long long kept = 1, reduced = 1;
};
// inStrides / outStrides: the stride of each logical axis of the input and of the output (reduceOutputDims), in
// elements: contiguousStrides for NCHW, channelsLastStrides for a GPU session's storage.
ReducePlan reducePlan(const Reduce& r, const std::vector<int64_t>& inDims, const std::vector<int64_t>& inStrides,
    const std::vector<int64_t>& outStrides);
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& dims);
// Dim 1 moved last (rank 3 and more), as a GPU session stores activations outside FP32.
std::vector<int64_t> channelsLastStrides(const std::vector<int64_t>& dims);

} // namespace convscope
