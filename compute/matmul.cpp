// The matmul kind's shape rules and plans (compute/matmul.h).
#include "compute/matmul.h"

#include "compute/binary.h"
#include "compute/error.h"

#include <algorithm>

namespace convscope {

namespace {
    std::string text(const std::vector<int64_t>& d)
    {
        std::string s = "[";
        for (size_t k = 0; k < d.size(); ++k)
            s += (k ? ", " : "") + std::to_string(d[k]);
        return s + "]";
    }

    std::vector<int64_t> batchOf(const std::vector<int64_t>& d)
    {
        return d.size() > 2 ? std::vector<int64_t>(d.begin(), d.end() - 2) : std::vector<int64_t> {};
    }
} // namespace

std::vector<int64_t> tensorStrides(const std::vector<int64_t>& dims, bool channelsLast)
{
    std::vector<int> order(dims.size());
    for (size_t k = 0; k < dims.size(); ++k)
        order[k] = int(k);
    if (channelsLast && dims.size() > 2)
        std::rotate(order.begin() + 1, order.begin() + 2, order.end());
    std::vector<int64_t> strides(dims.size(), 0);
    int64_t s = 1;
    for (size_t k = dims.size(); k-- > 0;) {
        strides[size_t(order[k])] = s;
        s *= dims[size_t(order[k])];
    }
    return strides;
}

std::vector<int64_t> matmulOutputDims(
    const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::string& aName, const std::string& bName)
{
    if (a.empty() || b.empty() || a.size() > 6 || b.size() > 6)
        throw InputError("matmul takes operands of rank 1 to 6, but " + aName + " is " + text(a) + " and " + bName
            + " is " + text(b));
    if (a.size() == 1 && b.size() == 1)
        throw InputError("matmul of two 1-D tensors " + text(a) + " and " + text(b)
            + " is a 0-D scalar (torch.matmul's dot product), which ConvScope's tensors (rank 1 to 6) cannot hold");
    const int64_t ka = a.back();
    const int64_t kb = b.size() == 1 ? b[0] : b[b.size() - 2];
    if (ka != kb)
        throw InputError("matmul needs the columns of " + aName + " " + text(a) + " (its last axis, "
            + std::to_string(ka) + ") to equal the rows of " + bName + " " + text(b) + " ("
            + (b.size() == 1 ? "its only axis, " : "its second-to-last axis, ") + std::to_string(kb) + ")");
    std::vector<int64_t> out = broadcastDims(batchOf(a), batchOf(b), aName + "'s batch axes", bName + "'s batch axes");
    if (a.size() >= 2)
        out.push_back(a[a.size() - 2]);
    if (b.size() >= 2)
        out.push_back(b.back());
    return out;
}

MatmulPlan makeMatmulPlan(const std::vector<int64_t>& a, bool aChannelsLast, const std::vector<int64_t>& b,
    bool bChannelsLast, bool outChannelsLast)
{
    const std::vector<int64_t> out = matmulOutputDims(a, b, "a", "b");
    const std::vector<int64_t> sa = tensorStrides(a, aChannelsLast), sb = tensorStrides(b, bChannelsLast),
                               so = tensorStrides(out, outChannelsLast);
    MatmulPlan p;
    const int rankA = int(a.size()), rankB = int(b.size());
    p.batchRank = std::max({ rankA - 2, rankB - 2, 0 });
    for (int k = 0; k < p.batchRank; ++k) {
        p.batchDims[k] = out[size_t(k)];
        p.batch *= out[size_t(k)];
    }
    p.k = a.back();
    p.m = rankA >= 2 ? a[size_t(rankA - 2)] : 1;
    p.n = rankB >= 2 ? b.back() : 1;
    // Batch axis k of the output is axis k − (batchRank − operand's batch rank) of the operand, where that exists and
    // is not 1.
    const auto batchStrides = [&](const std::vector<int64_t>& d, const std::vector<int64_t>& s, MatmulOperandPlan& o) {
        const int own = std::max(int(d.size()) - 2, 0);
        for (int k = 0; k < p.batchRank; ++k) {
            const int axis = k - (p.batchRank - own);
            o.batchStride[k] = axis >= 0 && d[size_t(axis)] != 1 ? s[size_t(axis)] : 0;
        }
    };
    batchStrides(a, sa, p.a);
    batchStrides(b, sb, p.b);
    p.a.rowStride = rankA >= 2 ? sa[size_t(rankA - 2)] : 0;
    p.a.colStride = sa.back();
    p.b.rowStride = rankB >= 2 ? sb[size_t(rankB - 2)] : sb[0];
    p.b.colStride = rankB >= 2 ? sb.back() : 0;
    for (int k = 0; k < p.batchRank; ++k)
        p.c.batchStride[k] = so[size_t(k)];
    p.c.rowStride = rankA >= 2 ? so[size_t(p.batchRank)] : 0;
    p.c.colStride = rankB >= 2 ? so.back() : 0;
    return p;
}

MatmulOperands matmulOperands(const Matmul& l, const std::vector<Shape>& ins)
{
    MatmulOperands o;
    if (l.constant.empty()) {
        if (ins.size() != 2)
            throw InputError(
                "matmul without a \"constant\" reads two inputs, but it has " + std::to_string(ins.size()));
        o.a = ins[0].dims();
        o.b = ins[1].dims();
        return o;
    }
    if (ins.size() != 1)
        throw InputError("matmul with a \"constant\" reads one input, but it has " + std::to_string(ins.size()));
    const std::vector<int64_t> c
        = l.constant_shape.empty() ? std::vector<int64_t> { int64_t(l.constant.size()) } : l.constant_shape;
    int64_t count = 1;
    for (const int64_t d : c) {
        if (d < 1)
            throw InputError("matmul: \"constant_shape\" " + text(c) + " has a size below 1");
        count *= d;
    }
    if (count != int64_t(l.constant.size()) || c.size() > 6)
        throw InputError("matmul: \"constant\" has " + std::to_string(l.constant.size())
            + " values but \"constant_shape\" " + text(c) + " holds " + std::to_string(count) + " (ranks 1 to 6)");
    o.a = l.constant_first ? c : ins[0].dims();
    o.b = l.constant_first ? ins[0].dims() : c;
    o.constantSide = l.constant_first ? 0 : 1;
    return o;
}

bool matmulUniformBatch(const MatmulPlan& p, int64_t stride[3])
{
    const MatmulOperandPlan* ops[3] = { &p.a, &p.b, &p.c };
    int64_t coord[kMaxMatmulBatchRank] = {};
    for (int o = 0; o < 3; ++o) {
        p.coordinates(p.batch > 1 ? 1 : 0, coord);
        stride[o] = p.batch > 1 ? ops[o]->at(coord, p.batchRank, 0, 0) : 0;
        for (int64_t i = 0; i < p.batch; ++i) {
            p.coordinates(i, coord);
            if (ops[o]->at(coord, p.batchRank, 0, 0) != i * stride[o])
                return false;
        }
    }
    return stride[2] == p.m * p.n || p.batch == 1;
}

} // namespace convscope
