// ONNX Slice on an activation, and the wide views (issue 30's last torchvision models):
//   - Slice: one layer per axis it narrows, none when it keeps everything (ONNX's negative and out-of-range bounds
//     resolved and clamped as the ONNX spec says, per the step's sign): a slice layer for a step of 1, a gather of the
//     constant indices start, start + step, … for any other step (negative ones too; Swin's patch merging). An empty
//     Slice (torch.roll by 0 exports one: Swin3D's shifted windows where the window covers the input) is held back as
//     empty (GraphBuilder::empty): a Concat leaves it out, any other reader fails naming it;
//   - a Reshape to more than 6 dims, then a Transpose, then a Reshape (Swin3D's window partition, 8-D): the three as
//     at most 6-D layers (GraphBuilder::wide; reshape and transpose in onnx_convert_views.cpp hold the first two back).
#include "compute/onnx/onnx_converters.h"

#include "compute/error.h"

#include <algorithm>
#include <limits>

namespace convscope::onnx::convert {

void slice(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    onlyFirstOutput(g, n, a);
    const std::string& input = in0(n, a);
    const Shape in = g.activation(input, a).shape;
    const std::vector<int64_t> dims = in.dims();
    const int64_t rank = int64_t(dims.size());
    std::vector<int64_t> starts, ends, axes, steps;
    if (g.opset >= 10) {
        if (n.input_size() < 3)
            a.fail("Slice without starts and ends");
        starts = g.constant(n.input(1), a, "starts").ints(a.where());
        ends = g.constant(n.input(2), a, "ends").ints(a.where());
        if (const ConstTensor* c = g.optionalConstant(n, 3, a, "axes"))
            axes = c->ints(a.where());
        if (const ConstTensor* c = g.optionalConstant(n, 4, a, "steps"))
            steps = c->ints(a.where());
    } else {
        starts = a.getInts("starts").value_or(std::vector<int64_t> {});
        ends = a.getInts("ends").value_or(std::vector<int64_t> {});
        axes = a.getInts("axes").value_or(std::vector<int64_t> {});
    }
    if (axes.empty())
        for (size_t k = 0; k < starts.size(); ++k)
            axes.push_back(int64_t(k));
    if (starts.size() != ends.size() || axes.size() != starts.size()
        || (!steps.empty() && steps.size() != starts.size()))
        refuse(n, a, "Slice with starts, ends, axes and steps of different lengths");
    struct Cut {
        int64_t axis, start, end, step, count;
    };
    std::vector<Cut> cuts;
    for (size_t k = 0; k < axes.size(); ++k) {
        const int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (axis < 0 || axis >= rank)
            refuse(n, a,
                "Slice on axis " + std::to_string(axes[k]) + " of the " + std::to_string(rank) + "-D " + in.str());
        const int64_t size = dims[size_t(axis)], step = steps.empty() ? 1 : steps[k];
        const std::string range = "[" + std::to_string(starts[k]) + ", " + std::to_string(ends[k]) + ") step "
            + std::to_string(step) + " of axis " + std::to_string(axis) + " (size " + std::to_string(size) + ")";
        if (step == 0)
            refuse(n, a, "Slice " + range + ": a step of 0");
        // ONNX: negative bounds count from the end (the size added); then, stepping forward, both are clamped to
        // [0, size]; stepping backward, the start to [0, size - 1] and the end to [-1, size - 1].
        const auto adjusted = [size](int64_t v, int64_t lo, int64_t hi) {
            if (v < 0)
                v += size; // no overflow: v < 0 < size
            return std::clamp<int64_t>(v, lo, hi);
        };
        const int64_t start = adjusted(starts[k], 0, step > 0 ? size : size - 1),
                      end = adjusted(ends[k], step > 0 ? 0 : -1, step > 0 ? size : size - 1);
        // The count of start, start + step, … before end (written so that no step, however large, overflows).
        const int64_t count = step > 0                    ? (end > start ? (end - start - 1) / step + 1 : 0)
            : start <= end                                ? 0
            : step == std::numeric_limits<int64_t>::min() ? 1
                                                          : (start - end - 1) / -step + 1;
        if (count == 0) { // held back: a Concat leaves it out; any other reader fails with this
            g.empty[n.output(0)] = a.where() + ": Slice " + range
                + " is empty (ConvScope's tensors have no empty axis; only a Concat may read an empty Slice)";
            return;
        }
        cuts.push_back({ axis, start, end, step, count });
    }
    std::string current = input;
    int layers = 0;
    for (const Cut& c : cuts) {
        if (c.step == 1 && c.start == 0 && c.end == dims[size_t(c.axis)])
            continue; // keeps the whole axis
        const std::string layer = layers == 0 ? name : name + "/axis" + std::to_string(c.axis);
        const std::string output = layer + "/out";
        if (c.step == 1) {
            g.addLayer(layer, Slice { c.axis, c.start, c.end }, { current }, output, a);
        } else {
            // A stepped slice (Swin's patch merging, x[:, 0::2]; a reversal, x[::-1]) is a gather of the indices
            // start, start + step, … along the axis: exact, on every backend.
            Gather gl;
            gl.axis = c.axis;
            gl.indices_shape = { c.count };
            gl.indices.clear(); // not the kind's default { 0 }
            for (int64_t j = 0; j < c.count; ++j)
                gl.indices.push_back(c.start + j * c.step);
            g.addLayer(layer, gl, { current }, output, a);
        }
        current = output;
        ++layers;
    }
    g.activations[n.output(0)] = g.activation(current, a);
}

// A wide view's dims after its transpose.
std::vector<int64_t> wideDims(const GraphBuilder::WideView& w)
{
    std::vector<int64_t> d;
    for (int64_t p : w.perm)
        d.push_back(w.dims[size_t(p)]);
    return d;
}

// The wide view `w` (a reshape of w.input to w.dims, then the transpose w.perm) as layers: its size-1 axes
// dropped and the input axes that stay neighbours in the same order merged; a reshape to those dims and a
// transpose of them, whose output holds the same elements in the same order as the wide transpose's. Returns the
// tensor the reader reshapes (bound to the wide one's dims through g.wide, for its 0s and -1); refuses, with
// w.why, when more than 6 axes remain.
std::string unwiden(
    GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a, GraphBuilder::WideView w)
{
    std::vector<int64_t> index(w.dims.size(), -1), kept; // kept axes, renumbered
    for (size_t k = 0; k < w.dims.size(); ++k)
        if (w.dims[k] != 1) {
            index[k] = int64_t(kept.size());
            kept.push_back(w.dims[k]);
        }
    std::vector<int64_t> order; // the kept axes in output order
    for (int64_t p : w.perm)
        if (index[size_t(p)] >= 0)
            order.push_back(index[size_t(p)]);
    // Groups: runs of the output order whose input axes follow each other.
    std::vector<std::pair<int64_t, int64_t>> groups; // [first, last] input axis, in output order
    for (int64_t ax : order)
        if (!groups.empty() && groups.back().second + 1 == ax)
            groups.back().second = ax;
        else
            groups.push_back({ ax, ax });
    std::vector<std::pair<int64_t, int64_t>> byInput = groups;
    std::sort(byInput.begin(), byInput.end());
    if (groups.size() > size_t(Shape::kMaxRank))
        refuse(n, a, w.why);
    std::vector<int64_t> dims, perm;
    for (const auto& [first, last] : byInput) {
        int64_t d = 1;
        for (int64_t k = first; k <= last; ++k)
            d *= kept[size_t(k)];
        dims.push_back(d);
    }
    for (const auto& gr : groups)
        perm.push_back(int64_t(std::find(byInput.begin(), byInput.end(), gr) - byInput.begin()));
    if (dims.empty())
        dims = { 1 }, perm = { 0 };
    std::string current = w.input;
    if (g.activation(current, a).shape.dims() != dims) {
        g.addLayer(name + "_view", Reshape { dims }, { current }, n.input(0) + "#view", a);
        current = n.input(0) + "#view";
    }
    bool identity = true;
    for (size_t k = 0; k < perm.size(); ++k)
        identity = identity && perm[k] == int64_t(k);
    if (!identity) {
        g.addLayer(name + "_permute", Transpose { perm }, { current }, n.input(0) + "#permuted", a);
        current = n.input(0) + "#permuted";
    }
    g.wide[current] = w; // its true dims, for the reader's 0s and -1
    return current;
}

} // namespace convscope::onnx::convert
