// The binary kind's broadcasting on the host (compute/binary.h).
#include "compute/binary.h"

#include "compute/error.h"

#include <algorithm>

namespace convscope {

namespace {
    std::string dimsText(const std::vector<int64_t>& d)
    {
        std::string s = "[";
        for (size_t k = 0; k < d.size(); ++k)
            s += (k ? ", " : "") + std::to_string(d[k]);
        return s + "]";
    }

    // The axis order in memory of a tensor of `rank` dims: channels-last puts axis 1 last (NHWC, NDHWC). A GPU
    // session's storage format does so at every rank above 2 (kernels/common/storage_convert.cu permutes any
    // [n, c, rest...] with rest > 1 to [n, rest..., c], and axisRuns in copy_kernels.cu reads it so): a rank-3
    // [N, C, L] is stored [N, L, C], a rank-6 [N, C, A, B, H, W] as [N, A, B, H, W, C]. Ranks 1 and 2 have no
    // positions and keep the plain order.
    std::vector<int> memoryOrder(size_t rank, bool channelsLast)
    {
        std::vector<int> order(rank);
        for (size_t k = 0; k < rank; ++k)
            order[k] = int(k);
        if (channelsLast && rank > 2)
            std::rotate(order.begin() + 1, order.begin() + 2, order.end());
        return order;
    }

    // The element stride of each axis (logical order) of a tensor of `dims` laid out as `channelsLast` says.
    std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims, bool channelsLast)
    {
        const std::vector<int> order = memoryOrder(dims.size(), channelsLast);
        std::vector<int64_t> strides(dims.size(), 0);
        int64_t s = 1;
        for (size_t k = dims.size(); k-- > 0;) {
            strides[size_t(order[k])] = s;
            s *= dims[size_t(order[k])];
        }
        return strides;
    }
} // namespace

const char* binaryOpName(Binary::Op op)
{
    switch (op) {
    case Binary::Op::Add:
        return "add";
    case Binary::Op::Sub:
        return "sub";
    case Binary::Op::Mul:
        return "mul";
    case Binary::Op::Div:
        return "div";
    case Binary::Op::Pow:
        return "pow";
    case Binary::Op::Min:
        return "min";
    case Binary::Op::Max:
        return "max";
    }
    return "?";
}

std::vector<int64_t> constantDims(const Binary& b)
{
    return b.constant_shape.empty() ? std::vector<int64_t> { 1 } : b.constant_shape;
}

std::vector<int64_t> broadcastDims(
    const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::string& aName, const std::string& bName)
{
    const size_t rank = std::max(a.size(), b.size());
    std::vector<int64_t> out(rank, 1);
    for (size_t k = 0; k < rank; ++k) {
        const int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
        const int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
        if (da != db && da != 1 && db != 1)
            throw InputError(aName + " " + dimsText(a) + " and " + bName + " " + dimsText(b)
                + " do not broadcast (NumPy's rule: aligned from the right, each pair of sizes equal or one of them "
                  "1; axis "
                + std::to_string(k) + " of the result has " + std::to_string(da) + " against " + std::to_string(db)
                + ")");
        out[k] = da == 1 ? db : da;
    }
    return out;
}

BinaryOperands binaryOperands(const Binary& l, const std::vector<Shape>& ins)
{
    BinaryOperands o;
    if (l.constant.empty()) {
        if (ins.size() != 2)
            throw InputError("binary " + std::string(binaryOpName(l.op)) + " without a \"constant\" reads two inputs, "
                + "but it has " + std::to_string(ins.size()));
        o.a = ins[0].dims();
        o.b = ins[1].dims();
        return o;
    }
    if (ins.size() != 1)
        throw InputError("binary " + std::string(binaryOpName(l.op))
            + " with a \"constant\" reads one input, but it has " + std::to_string(ins.size()));
    const std::vector<int64_t> c = constantDims(l);
    int64_t count = 1;
    for (int64_t d : c) {
        if (d < 1)
            throw InputError("\"constant_shape\" " + dimsText(c) + " has a size below 1");
        count *= d;
    }
    if (count != int64_t(l.constant.size()))
        throw InputError("\"constant\" has " + std::to_string(l.constant.size()) + " values but \"constant_shape\" "
            + dimsText(c) + " holds " + std::to_string(count));
    if (c.size() > size_t(kMaxBinaryRank))
        throw InputError("\"constant_shape\" " + dimsText(c) + " has more than 6 dims");
    o.a = l.constant_first ? c : ins[0].dims();
    o.b = l.constant_first ? ins[0].dims() : c;
    o.constantSide = l.constant_first ? 0 : 1;
    return o;
}

BinaryPlan makeBinaryPlan(
    BinaryFn fn, const std::vector<int64_t>& out, bool outChannelsLast, const BinaryOperand& a, const BinaryOperand& b)
{
    BinaryPlan p;
    p.fn = fn;
    const size_t rank = out.size();
    if (rank > size_t(kMaxBinaryRank) || a.dims.size() > rank || b.dims.size() > rank)
        throw InputError("binary: a plan of more than 6 dims, or an operand of more dims than its output");
    // Each operand's strides along the output's logical axes (0 where it is broadcast), right-aligned.
    const auto aligned = [&](const BinaryOperand& o) {
        const std::vector<int64_t> own = stridesOf(o.dims, o.channelsLast);
        std::vector<int64_t> s(rank, 0);
        for (size_t k = 0; k < o.dims.size(); ++k) {
            const size_t at = rank - o.dims.size() + k;
            s[at] = o.dims[k] == 1 && out[at] != 1 ? 0 : own[k];
        }
        return s;
    };
    const std::vector<int64_t> sa = aligned(a), sb = aligned(b);
    const std::vector<int> order = memoryOrder(rank, outChannelsLast);
    p.rank = int(rank);
    p.count = 1;
    for (size_t k = 0; k < rank; ++k) {
        p.out[k] = out[size_t(order[k])];
        p.strideA[k] = sa[size_t(order[k])];
        p.strideB[k] = sb[size_t(order[k])];
        p.count *= out[k];
    }
    return p;
}

} // namespace convscope
