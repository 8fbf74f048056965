// The gather kind's shape rules and plan (compute/gather.h).
#include "compute/gather.h"

#include "compute/error.h"
#include "compute/matmul.h"

namespace convscope {

namespace {
    std::string text(const std::vector<int64_t>& d)
    {
        std::string s = "[";
        for (size_t k = 0; k < d.size(); ++k)
            s += (k ? ", " : "") + std::to_string(d[k]);
        return s + "]";
    }
} // namespace

int64_t gatherAxis(const Gather& g, int rank)
{
    if (g.axis < -rank || g.axis >= rank)
        throw InputError("gather: axis " + std::to_string(g.axis) + " is out of range for an input of "
            + std::to_string(rank) + " dims (it takes " + std::to_string(-rank) + " to " + std::to_string(rank - 1)
            + ")");
    return g.axis < 0 ? g.axis + rank : g.axis;
}

std::vector<int64_t> gatherIndexDims(const Gather& g)
{
    int64_t count = 1;
    for (const int64_t d : g.indices_shape) {
        if (d < 1)
            throw InputError("gather: \"indices_shape\" " + text(g.indices_shape) + " has a size below 1");
        count *= d;
    }
    if (count != int64_t(g.indices.size()))
        throw InputError("gather: \"indices\" has " + std::to_string(g.indices.size())
            + " values but \"indices_shape\" " + text(g.indices_shape) + " holds " + std::to_string(count));
    return g.indices_shape;
}

std::vector<int64_t> gatherWrappedIndices(const Gather& g, const std::vector<int64_t>& data)
{
    const int64_t axis = gatherAxis(g, int(data.size()));
    const int64_t size = data[size_t(axis)];
    std::vector<int64_t> out;
    out.reserve(g.indices.size());
    for (size_t k = 0; k < g.indices.size(); ++k) {
        const int64_t i = g.indices[k];
        if (i < -size || i >= size)
            throw InputError("gather: index " + std::to_string(i) + " (position " + std::to_string(k)
                + " of the indices) is out of range for axis " + std::to_string(axis) + " of size "
                + std::to_string(size) + " of the input " + text(data) + " (it takes " + std::to_string(-size) + " to "
                + std::to_string(size - 1) + ")");
        out.push_back(i < 0 ? i + size : i);
    }
    return out;
}

std::vector<int64_t> gatherOutputDims(const Gather& g, const std::vector<int64_t>& data)
{
    const int64_t axis = gatherAxis(g, int(data.size()));
    const std::vector<int64_t> idx = gatherIndexDims(g);
    gatherWrappedIndices(g, data);
    std::vector<int64_t> out(data.begin(), data.begin() + axis);
    out.insert(out.end(), idx.begin(), idx.end());
    out.insert(out.end(), data.begin() + axis + 1, data.end());
    if (out.empty())
        throw InputError("gather: one scalar index into the 1-D input " + text(data)
            + " gives a 0-D scalar, which ConvScope's tensors (rank 1 to 6) cannot hold");
    if (out.size() > size_t(kMaxGatherRank))
        throw InputError("gather: the input " + text(data) + " with indices of shape " + text(idx) + " along axis "
            + std::to_string(axis) + " gives " + std::to_string(out.size())
            + " dims; ConvScope's tensors have 6 at most");
    return out;
}

GatherPlan makeGatherPlan(const Gather& g, const std::vector<int64_t>& data, bool inChannelsLast, bool outChannelsLast)
{
    const std::vector<int64_t> out = gatherOutputDims(g, data);
    const int64_t axis = gatherAxis(g, int(data.size()));
    const std::vector<int64_t> idx = gatherIndexDims(g);
    const std::vector<int64_t> si = tensorStrides(data, inChannelsLast), so = tensorStrides(out, outChannelsLast);
    const std::vector<int64_t> sidx = tensorStrides(idx, false);
    GatherPlan p;
    p.rank = int(out.size());
    const int64_t r = int64_t(idx.size());
    for (int64_t k = 0; k < int64_t(out.size()); ++k) {
        p.outDims[k] = out[size_t(k)];
        p.outStride[k] = so[size_t(k)];
        p.count *= out[size_t(k)];
        if (k < axis)
            p.inMul[k] = si[size_t(k)];
        else if (k < axis + r)
            p.idxMul[k] = sidx[size_t(k - axis)];
        else
            p.inMul[k] = si[size_t(k - r + 1)];
    }
    p.axisStride = si[size_t(axis)];
    return p;
}

} // namespace convscope
