// The binary kind (issue 30): NumPy broadcasting of its two operands — two inputs, or one input and the layer's
// constant — on the host: the output dims, the plan the CPU ops and the CUDA kernels run (compute/binary_math.h),
// and the names and files of its fields.
#pragma once

#include "compute/binary_math.h"
#include "compute/layer_spec.h"
#include "compute/shape.h"

#include <string>
#include <vector>

namespace convscope {

const char* binaryOpName(Binary::Op op); // "add", "sub", "mul", "div", "pow", "min", "max"
inline BinaryFn binaryFnOf(Binary::Op op) { return BinaryFn(int(op)); }

// The constant's dims ({1} for a scalar given without a shape).
std::vector<int64_t> constantDims(const Binary& b);

// NumPy's rule: dims aligned from the right, each pair equal or one of them 1. Throws InputError naming both shapes.
std::vector<int64_t> broadcastDims(
    const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::string& aName, const std::string& bName);

// The dims of the layer's two operands in `x op y` order, from its input shapes (one or two) and its constant.
struct BinaryOperands {
    std::vector<int64_t> a, b;
    int constantSide = -1; // 0: a is the constant, 1: b is, -1: two inputs
};
BinaryOperands binaryOperands(const Binary& l, const std::vector<Shape>& ins);

// One operand of a plan: its dims and whether it is stored channels-last (a GPU session's storage format puts an
// activation's channel innermost; the constant and FP32 activations are NCHW).
struct BinaryOperand {
    std::vector<int64_t> dims;
    bool channelsLast = false;
};
// The plan of out = a op b with the output laid out channels-last or not.
BinaryPlan makeBinaryPlan(
    BinaryFn fn, const std::vector<int64_t>& out, bool outChannelsLast, const BinaryOperand& a, const BinaryOperand& b);

} // namespace convscope
