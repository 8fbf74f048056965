// Shape inference of softmax, log_softmax and reduce (compute/shape_inference_reduce.h).
#include "compute/shape_inference_reduce.h"

#include "compute/error.h"
#include "compute/reduce.h"

namespace convscope {

namespace {
    double bytesOf(int64_t elements) { return 4.0 * double(elements); }

    std::string listText(const std::vector<int64_t>& v)
    {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i)
            s += (i ? ", " : "") + std::to_string(v[i]);
        return s + "]";
    }
} // namespace

LayerShape inferSoftmax(int64_t dim, bool log, const Shape& in)
{
    const std::vector<int64_t> dims = in.dims();
    const int64_t axis = wrapAxis(dim, int(dims.size()), log ? "log_softmax" : "softmax");
    LayerShape r;
    r.out = in;
    r.formula = "output shape = input shape " + in.str() + "\n"
        + (log ? "y = x − m − log Σ e^(x − m)" : "y = e^(x − m) / Σ e^(x − m)") + " along dim " + std::to_string(axis)
        + " (" + std::to_string(dims[size_t(axis)]) + " values; m their maximum)";
    r.cost.flops = 4.0 * double(in.numel()); // max, subtract + exp, sum, divide (or subtract)
    r.cost.bytesRead = bytesOf(in.numel());
    r.cost.bytesWritten = bytesOf(in.numel());
    return r;
}

LayerShape inferReduce(const Reduce& l, const Shape& in)
{
    const std::vector<int64_t> dims = in.dims();
    const std::vector<int64_t> axes = reduceAxes(l, int(dims.size()));
    const std::vector<int64_t> out = reduceOutputDims(l, dims);
    LayerShape r;
    r.out = Shape::of(out);
    const char* op = reduceOpName(l.op);
    r.formula = std::string(op) + " over dims " + listText(axes) + (l.keepdim ? " (kept as 1)" : "") + ": " + in.str()
        + " → " + r.out.str();
    if (!l.keepdim && axes.size() == dims.size())
        r.formula += " (PyTorch's 0-d result, held as [1])";
    r.cost.flops = (l.op == Reduce::Op::L2 ? 2.0 : 1.0) * double(in.numel());
    r.cost.bytesRead = bytesOf(in.numel());
    r.cost.bytesWritten = bytesOf(r.out.numel());
    return r;
}

} // namespace convscope
