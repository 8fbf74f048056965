// ONNX Softmax, LogSoftmax and ReduceMean / ReduceSum / ReduceMax / ReduceMin / ReduceL2 as softmax, log_softmax and
// reduce layers (compute/onnx/onnx_converters.h).
#include "compute/onnx/onnx_converters.h"

#include "compute/error.h"
#include "compute/reduce.h"

#include <algorithm>
#include <vector>

namespace convscope::onnx::convert {

using Node = ::onnx::NodeProto;

void softmax(GraphBuilder& g, const Node& n, const std::string& name, size_t index, const Attributes& a, bool log)
{
    onlyFirstOutput(g, n, a);
    const std::string& x = in0(n, a);
    const std::vector<int64_t> dims = g.activation(x, a).shape.dims();
    const int rank = int(dims.size());
    const std::string what = n.op_type() + " axis";
    // Opset 13 on: one axis (default the last). Before: the input coerced to 2-D at `axis` (default 1), the softmax
    // over the axes from `axis` on, flattened together.
    int64_t axis = 0;
    try {
        axis = wrapAxis(a.getInt("axis", g.opset < 13 ? 1 : -1), rank, what);
    } catch (const InputError& e) {
        a.fail(e.what());
    }
    const auto make = [&](int64_t dim) -> LayerSpec {
        if (log)
            return LogSoftmax { dim };
        return Softmax { dim };
    };
    const bool oneAxis
        = g.opset >= 13 || std::all_of(dims.begin() + axis + 1, dims.end(), [](int64_t d) { return d == 1; });
    if (oneAxis)
        return g.addLayer(name, make(axis), { x }, n.output(0), a);
    // [outer, rest] (the batch left free when it is outside the softmax), the softmax on the last axis, and back.
    int64_t rest = 1;
    for (int i = int(axis); i < rank; ++i)
        rest *= dims[size_t(i)];
    const std::vector<int64_t> flat = { axis == 0 ? 1 : -1, rest };
    std::vector<int64_t> back = dims;
    if (axis > 0)
        back[0] = -1;
    const std::string flatName = n.output(0) + "#2d", softName = n.output(0) + "#softmax";
    g.addLayer(g.layerName(n, index, "_2d"), Reshape { flat }, { x }, flatName, a);
    g.addLayer(name, make(-1), { flatName }, softName, a);
    g.addLayer(g.layerName(n, index, "_back"), Reshape { back }, { softName }, n.output(0), a);
}

void reduce(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a, Reduce::Op op)
{
    onlyFirstOutput(g, n, a);
    const std::string& x = in0(n, a);
    // Axes: an attribute, or from ReduceSum 13 and the others 18 an optional second input that must be constant.
    const bool axesInput = g.opset >= (op == Reduce::Op::Sum ? 13 : 18);
    std::vector<int64_t> axes;
    if (axesInput) {
        if (n.input_size() > 1 && !n.input(1).empty()) {
            if (!g.isConstant(n.input(1)))
                refuse(n, a, n.op_type() + " whose axes are computed (ConvScope needs them constant)");
            axes = g.constant(n.input(1), a, "axes").ints(a.where());
        }
    } else {
        axes = a.getInts("axes").value_or(std::vector<int64_t> {});
    }
    const bool keepdims = a.getInt("keepdims", 1) != 0;
    if (axes.empty() && axesInput && a.getInt("noop_with_empty_axes", 0) != 0)
        return g.addLayer(name, Identity {}, { x }, n.output(0), a); // the input unchanged
    Reduce r;
    r.op = op;
    r.dim = axes;
    r.keepdim = keepdims;
    g.addLayer(name, r, { x }, n.output(0), a);
}

} // namespace convscope::onnx::convert
