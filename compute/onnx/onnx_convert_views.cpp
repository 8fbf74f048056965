// The ONNX operators that move data, read into channel_shuffle and slice layers:
//   - Slice on an activation: one slice layer per axis it narrows (steps of 1; ONNX's negative and out-of-range bounds
//     resolved as ONNX does), none when it keeps everything;
//   - the channel shuffle PyTorch exports (torchvision's ShuffleNet V2): Reshape [N, C, *] → [N, g, C/g, *],
//     Transpose of axes 1 and 2, Reshape back to [N, C, *]. The two intermediate tensors are 5-D (6-D for volumes)
//     views ConvScope does not hold: GraphBuilder::shuffleViews remembers them until the last Reshape makes the layer.
// A Transpose or Reshape that is not part of that pattern is refused, naming it.
#include "compute/onnx/onnx_converters.h"

#include "compute/error.h"

#include <algorithm>
#include <limits>

namespace convscope::onnx::convert {

namespace {
    // ONNX Reshape's target with 0 (copy the input's dimension, allowzero 0) and one −1 (the rest) resolved; empty
    // when it cannot be resolved.
    std::vector<int64_t> resolveReshape(const std::vector<int64_t>& in, std::vector<int64_t> target, bool allowZero)
    {
        int64_t total = 1, known = 1;
        for (int64_t d : in)
            total *= d;
        int inferred = -1;
        for (size_t k = 0; k < target.size(); ++k) {
            if (target[k] == 0 && !allowZero) {
                if (k >= in.size())
                    return {};
                target[k] = in[k];
            }
            if (target[k] == -1) {
                if (inferred >= 0)
                    return {};
                inferred = int(k);
            } else if (target[k] < 0) {
                return {};
            } else {
                known *= target[k];
            }
        }
        if (inferred >= 0) {
            if (known == 0 || total % known != 0)
                return {};
            target[size_t(inferred)] = total / known;
        } else if (known != total) {
            return {};
        }
        return target;
    }
} // namespace

bool readShuffleReshape(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a,
    const std::vector<int64_t>& shape)
{
    const std::string& input = in0(n, a);
    // The last step: back to [N, C, *] from a transposed view.
    if (auto it = g.shuffleViews.find(input); it != g.shuffleViews.end()) {
        const GraphBuilder::ShuffleView view = it->second;
        const Shape source = g.activation(view.source, a).shape;
        const std::vector<int64_t> grouped = source.dims();
        std::vector<int64_t> swapped = { grouped[0], grouped[1] / view.groups, view.groups };
        swapped.insert(swapped.end(), grouped.begin() + 2, grouped.end());
        if (!view.transposed || resolveReshape(swapped, shape, a.getInt("allowzero", 0) != 0) != grouped)
            refuse(n, a,
                "Reshape of a " + std::to_string(swapped.size()) + "-D view to " + npyDimsText(shape)
                    + " (ConvScope reads a Reshape–Transpose–Reshape only as a channel shuffle back to "
                    + npyDimsText(grouped) + ")");
        onlyFirstOutput(g, n, a);
        g.addLayer(name, ChannelShuffle { view.groups }, { view.source }, n.output(0), a);
        return true;
    }
    // The first step: [N, C, *] → [N, g, C/g, *] with g > 1.
    if (!g.isActivation(input))
        return false;
    const Shape in = g.activation(input, a).shape;
    if (in.flat)
        return false;
    const std::vector<int64_t> dims = in.dims();
    const std::vector<int64_t> target = resolveReshape(dims, shape, a.getInt("allowzero", 0) != 0);
    if (target.size() != dims.size() + 1 || target[0] != dims[0] || target[1] < 2 || target[1] * target[2] != dims[1]
        || !std::equal(dims.begin() + 2, dims.end(), target.begin() + 3))
        return false;
    g.shuffleViews[n.output(0)] = { input, target[1], false };
    return true;
}

void transpose(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& /*name*/, const Attributes& a)
{
    const std::string& input = in0(n, a);
    const auto it = g.shuffleViews.find(input);
    const std::vector<int64_t> perm = a.getInts("perm").value_or(std::vector<int64_t> {});
    if (it != g.shuffleViews.end() && !it->second.transposed) {
        const size_t rank = g.activation(it->second.source, a).shape.dims().size() + 1;
        std::vector<int64_t> swap(rank);
        for (size_t k = 0; k < rank; ++k)
            swap[k] = int64_t(k);
        std::swap(swap[1], swap[2]);
        if (perm == swap) {
            onlyFirstOutput(g, n, a);
            g.shuffleViews[n.output(0)] = { it->second.source, it->second.groups, true };
            return;
        }
    }
    refuse(n, a,
        "Transpose of an activation (perm " + npyDimsText(perm)
            + "): ConvScope has no transpose layer yet; it reads Reshape [N, g, C/g, *] → Transpose(0, 2, 1, …) → "
              "Reshape [N, C, *] as a channel shuffle");
}

void slice(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    onlyFirstOutput(g, n, a);
    const std::string& input = in0(n, a);
    const Shape in = g.activation(input, a).shape;
    const std::vector<int64_t> dims = in.dims();
    const int64_t rank = int64_t(dims.size());
    std::vector<int64_t> starts, ends, axes, steps;
    if (g.opset >= 10) {
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
    std::string current = input;
    int layers = 0;
    for (size_t k = 0; k < axes.size(); ++k) {
        const int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (axis < 0 || axis >= rank)
            refuse(n, a,
                "Slice on axis " + std::to_string(axes[k]) + " of the " + std::to_string(rank) + "-D " + in.str());
        if (!steps.empty() && steps[k] != 1)
            refuse(n, a, "Slice with step " + std::to_string(steps[k]) + " (ConvScope slices with step 1)");
        const int64_t size = dims[size_t(axis)];
        // ONNX: negative bounds count from the end; both are clamped to [0, size].
        const auto clampIndex = [size](int64_t v) {
            if (v < 0)
                v += size;
            return std::clamp<int64_t>(v, 0, size);
        };
        const int64_t start = clampIndex(starts[k]), end = clampIndex(ends[k]);
        if (start == 0 && end == size)
            continue; // keeps the whole axis
        if (start >= end)
            refuse(n, a,
                "Slice [" + std::to_string(starts[k]) + ", " + std::to_string(ends[k]) + ") of axis "
                    + std::to_string(axis) + " (size " + std::to_string(size) + ") is empty");
        const std::string layer = layers == 0 ? name : name + "/axis" + std::to_string(axis);
        const std::string output = layer + "/out";
        g.addLayer(layer, Slice { axis, start, end }, { current }, output, a);
        current = output;
        ++layers;
    }
    g.activations[n.output(0)] = g.activation(current, a);
}

} // namespace convscope::onnx::convert
