// The axis arithmetic of softmax, log_softmax and reduce (compute/reduce.h).
#include "compute/reduce.h"

#include "compute/error.h"

#include <algorithm>

namespace convscope {

int64_t wrapAxis(int64_t dim, int rank, const std::string& what)
{
    if (dim < -rank || dim >= rank)
        throw InputError(what + ": dim " + std::to_string(dim) + " is out of range for a tensor of rank "
            + std::to_string(rank) + " (expected " + std::to_string(-rank) + " to " + std::to_string(rank - 1) + ")");
    return dim < 0 ? dim + rank : dim;
}

AxisView axisView(const std::vector<int64_t>& dims, int64_t axis)
{
    AxisView v;
    for (size_t i = 0; i < dims.size(); ++i) {
        if (int64_t(i) < axis)
            v.outer *= dims[i];
        else if (int64_t(i) == axis)
            v.size = dims[i];
        else
            v.inner *= dims[i];
    }
    return v;
}

AxisView softmaxView(const Shape& s, int64_t dim)
{
    const std::vector<int64_t> d = s.dims();
    return axisView(d, wrapAxis(dim, int(d.size()), "softmax"));
}

std::vector<int64_t> reduceAxes(const Reduce& r, int rank)
{
    std::vector<int64_t> axes;
    if (r.dim.empty()) {
        for (int64_t i = 0; i < rank; ++i)
            axes.push_back(i);
        return axes;
    }
    for (int64_t d : r.dim) {
        const int64_t a = wrapAxis(d, rank, "reduce");
        if (std::find(axes.begin(), axes.end(), a) != axes.end())
            throw InputError("reduce: dim " + std::to_string(a)
                + " appears more than once in \"dim\" (a tensor of rank " + std::to_string(rank) + ")");
        axes.push_back(a);
    }
    std::sort(axes.begin(), axes.end());
    return axes;
}

std::vector<int64_t> reduceOutputDims(const Reduce& r, const std::vector<int64_t>& in)
{
    const std::vector<int64_t> axes = reduceAxes(r, int(in.size()));
    std::vector<int64_t> out;
    for (size_t i = 0; i < in.size(); ++i) {
        const bool reduced = std::binary_search(axes.begin(), axes.end(), int64_t(i));
        if (!reduced)
            out.push_back(in[i]);
        else if (r.keepdim)
            out.push_back(1);
    }
    if (out.empty())
        out.push_back(1); // torch's 0-d result
    return out;
}

const char* reduceOpName(Reduce::Op op)
{
    switch (op) {
    case Reduce::Op::Mean:
        return "mean";
    case Reduce::Op::Sum:
        return "sum";
    case Reduce::Op::Max:
        return "max";
    case Reduce::Op::Min:
        return "min";
    case Reduce::Op::L2:
        return "l2";
    }
    return "?";
}

bool parseReduceOp(const std::string& name, Reduce::Op* op)
{
    for (Reduce::Op o : { Reduce::Op::Mean, Reduce::Op::Sum, Reduce::Op::Max, Reduce::Op::Min, Reduce::Op::L2 })
        if (name == reduceOpName(o)) {
            *op = o;
            return true;
        }
    return false;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& dims)
{
    std::vector<int64_t> s(dims.size(), 1);
    for (size_t i = dims.size(); i-- > 1;)
        s[i - 1] = s[i] * dims[i];
    return s;
}

std::vector<int64_t> channelsLastStrides(const std::vector<int64_t>& dims)
{
    if (dims.size() < 3)
        return contiguousStrides(dims);
    std::vector<int64_t> order; // memory order of the logical axes: 0, 2, 3, …, 1
    order.push_back(0);
    for (size_t i = 2; i < dims.size(); ++i)
        order.push_back(int64_t(i));
    order.push_back(1);
    std::vector<int64_t> s(dims.size(), 1);
    int64_t stride = 1;
    for (size_t k = order.size(); k-- > 0;) {
        s[size_t(order[k])] = stride;
        stride *= dims[size_t(order[k])];
    }
    return s;
}

namespace {
    // Axes of size 1 dropped and neighbours that are one run in memory merged, within the kept group (in the input
    // and in the output) and within the reduced one: the same elements in the same order with fewer index divisions
    // (a mean over every axis of a contiguous tensor is one axis of stride 1).
    ReducePlan compactPlan(const ReducePlan& p)
    {
        ReducePlan c;
        c.kept = p.kept;
        c.reduced = p.reduced;
        int n = 0;
        for (int group = 0; group < 2; ++group) {
            const int first = group == 0 ? 0 : p.keptAxes, last = group == 0 ? p.keptAxes : p.rank;
            const int start = n;
            for (int a = first; a < last; ++a) {
                if (p.dims[a] == 1)
                    continue;
                if (n > start && c.strides[n - 1] == p.strides[a] * p.dims[a]
                    && (group == 1 || c.outStrides[n - 1] == p.outStrides[a] * p.dims[a])) {
                    c.dims[n - 1] *= p.dims[a]; // the earlier axis steps over whole runs of this one
                    c.strides[n - 1] = p.strides[a];
                    c.outStrides[n - 1] = p.outStrides[a];
                    continue;
                }
                c.dims[n] = p.dims[a];
                c.strides[n] = p.strides[a];
                c.outStrides[n] = group == 0 ? p.outStrides[a] : 0;
                ++n;
            }
            if (group == 0)
                c.keptAxes = n;
        }
        c.rank = n;
        return c;
    }
} // namespace

ReducePlan reducePlan(const Reduce& r, const std::vector<int64_t>& inDims, const std::vector<int64_t>& inStrides,
    const std::vector<int64_t>& outStrides)
{
    const int rank = int(inDims.size());
    if (rank < 1 || rank > 6 || inStrides.size() != inDims.size())
        throw Error("internal error: reducePlan of rank " + std::to_string(rank));
    const std::vector<int64_t> axes = reduceAxes(r, rank);
    ReducePlan p;
    p.rank = rank;
    int k = 0, outAxis = 0;
    for (int i = 0; i < rank; ++i) {
        const bool reduced = std::binary_search(axes.begin(), axes.end(), int64_t(i));
        if (reduced) {
            if (r.keepdim)
                ++outAxis;
            continue;
        }
        p.dims[k] = inDims[size_t(i)];
        p.strides[k] = inStrides[size_t(i)];
        p.outStrides[k] = size_t(outAxis) < outStrides.size() ? outStrides[size_t(outAxis)] : 0;
        p.kept *= inDims[size_t(i)];
        ++k;
        ++outAxis;
    }
    p.keptAxes = k;
    for (int64_t a : axes) {
        p.dims[k] = inDims[size_t(a)];
        p.strides[k] = inStrides[size_t(a)];
        p.reduced *= inDims[size_t(a)];
        ++k;
    }
    return compactPlan(p);
}

} // namespace convscope
