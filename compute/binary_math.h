// The binary kind's arithmetic (compute/layer_spec.h's Binary, issue 30), written once for the CPU ops and the CUDA
// kernels (__host__ __device__ under nvcc): NumPy's broadcasting of two operands of up to kMaxBinaryRank dims, as a
// plan of plain numbers a kernel takes by value — the output's dims and, per operand, its element stride along each
// output axis (0 where the operand has 1 there and is read again), in whatever order the tensors are laid out in
// memory (NCHW, or channels-last in a GPU session's storage format: the host permutes the axes, the kernel does not
// know).
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define CONVSCOPE_BINARY_HD __host__ __device__
#else
#define CONVSCOPE_BINARY_HD
#endif

namespace convscope {

inline constexpr int kMaxBinaryRank = 6;

enum class BinaryFn { Add, Sub, Mul, Div, Pow, Min, Max }; // Binary::Op's order

struct BinaryPlan {
    BinaryFn fn = BinaryFn::Add;
    int rank = 1;
    int64_t out[kMaxBinaryRank] = { 1, 1, 1, 1, 1, 1 }; // the output's dims, outermost first
    int64_t strideA[kMaxBinaryRank] = {}, strideB[kMaxBinaryRank] = {}; // 0 along a broadcast axis
    int64_t count = 1; // elements of the output
};

// PyTorch's results: torch.pow (std::pow), torch.minimum / torch.maximum propagate NaN.
template <typename Real> CONVSCOPE_BINARY_HD inline Real applyBinary(BinaryFn fn, Real a, Real b)
{
    switch (fn) {
    case BinaryFn::Add:
        return a + b;
    case BinaryFn::Sub:
        return a - b;
    case BinaryFn::Mul:
        return a * b;
    case BinaryFn::Div:
        return a / b;
    case BinaryFn::Pow:
        return pow(a, b);
    case BinaryFn::Min:
        return (a != a || b != b) ? a + b : (a < b ? a : b);
    case BinaryFn::Max:
        return (a != a || b != b) ? a + b : (a > b ? a : b);
    }
    return a;
}

// The offsets of output element i in the two operands.
CONVSCOPE_BINARY_HD inline void binaryOffsets(const BinaryPlan& p, int64_t i, int64_t& a, int64_t& b)
{
    a = 0;
    b = 0;
    for (int k = p.rank - 1; k >= 0; --k) {
        const int64_t idx = i % p.out[k];
        i /= p.out[k];
        a += idx * p.strideA[k];
        b += idx * p.strideB[k];
    }
}

} // namespace convscope
