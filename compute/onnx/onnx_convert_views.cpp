// The ONNX operators that move data:
//   - (Slice: onnx_convert_slice.cpp, with the wide views that Reshape and Transpose hold back);
//   - Reshape (0 copies the input's dim unless allowzero, one -1), Flatten on any axis (always [prod(dims[:axis]),
//     prod(dims[axis:])]), Squeeze and Unsqueeze: a reshape layer to the resolved dims (dim 0 left free, -1, when it
//     keeps the batch; a flatten for [N, F]);
//   - Transpose (perm, default the axes reversed): a transpose layer;
//   - Split: one slice layer per output that is read (its sizes from the split input or attribute, num_outputs, or
//     equal parts: onnx_fold_ops.cpp's splitSizes);
//   - Expand of an activation (NumPy's broadcast of the input to the shape): a binary mul by a constant of ones whose
//     dims are the ones the expand grows (1 elsewhere), which broadcasts exactly (x · 1 = x, bit for bit);
//   - a constant input of a Concat with activations (ViT's class token): made an activation from one of them, exactly
//     (concatInputs);
//   - the channel shuffle PyTorch exports (torchvision's ShuffleNet V2): Reshape [N, C, *] → [N, g, C/g, *],
//     Transpose of axes 1 and 2, Reshape back to [N, C, *], with nothing else reading the two views, becomes one
//     channel_shuffle layer when its last Reshape is read.
#include "compute/onnx/onnx_converters.h"

#include "compute/error.h"
#include "compute/onnx/onnx_fold.h"
#include "compute/shape_inference.h"

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
            } else if (__builtin_mul_overflow(known, target[k], &known)) {
                return {}; // a target past 2^63 elements (the fuzz preset found one): its counts cannot match
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
    std::string dimsText(const std::vector<int64_t>& d) { return npyDimsText(d); }

    // A reshape layer from `input` to `dims` (resolved), named `name`, bound to `output`. The batch stays free (-1 in
    // dim 0) when the output keeps the input's; an [N, F] of an image-like input is a flatten, as PyTorch writes it.
    void addReshape(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a,
        const std::string& input, std::vector<int64_t> dims)
    {
        const Shape in = g.activation(input, a).shape;
        const std::vector<int64_t> inDims = in.dims();
        if (dims.empty() || dims.size() > size_t(Shape::kMaxRank))
            refuse(n, a,
                "a " + std::to_string(dims.size()) + "-D result " + dimsText(dims) + " (ConvScope's tensors have 1 to "
                    + std::to_string(Shape::kMaxRank) + " dims)");
        for (const int64_t d : dims)
            if (d < 1)
                refuse(n, a, "an empty result " + dimsText(dims) + " (ConvScope's tensors have no empty axis)");
        onlyFirstOutput(g, n, a);
        if (dims.size() == 2 && inDims.size() > 2 && dims[0] == inDims[0])
            return g.addLayer(name, Flatten {}, { input }, n.output(0), a);
        if (dims[0] == inDims[0])
            dims[0] = -1;
        g.addLayer(name, Reshape { dims }, { input }, n.output(0), a);
    }

    // PyTorch's channel shuffle as three layers just added — reshape [N, C, *] → [N, g, C/g, *], transpose of dims 1
    // and 2, reshape back — whose two intermediate tensors nothing else reads: one channel_shuffle layer instead,
    // named after the last.
    bool readsOnly(const Layer& l, const std::string& above) // the layer above, by default or by name
    {
        return l.inputs.empty() || l.inputs == std::vector<std::string> { above };
    }

    void collapseShuffle(GraphBuilder& g, const ::onnx::NodeProto& n)
    {
        std::vector<Layer>& layers = g.net.layers;
        if (layers.size() < 3)
            return;
        const int last = int(layers.size()) - 1;
        const auto* swap = std::get_if<Transpose>(&layers[size_t(last - 1)].spec);
        if (!std::holds_alternative<Reshape>(layers[size_t(last - 2)].spec) || !swap
            || !std::holds_alternative<Reshape>(layers[size_t(last)].spec)
            || !readsOnly(layers[size_t(last - 1)], layers[size_t(last - 2)].name)
            || !readsOnly(layers[size_t(last)], layers[size_t(last - 1)].name))
            return;
        std::vector<std::string> views; // the tensors of the first two layers: read once each, by the next
        for (const auto& [tensor, act] : g.activations)
            if (act.layer == last - 2 || act.layer == last - 1) {
                const auto used = g.uses.find(tensor);
                if (used == g.uses.end() || used->second != 1)
                    return;
                views.push_back(tensor);
            }
        const ShapeReport shapes = inferShapes(g.net);
        if (!shapes.ok() || views.size() != 2)
            return;
        const std::vector<int64_t> d = shapes.layers[size_t(last - 2)].in.dims();
        const std::vector<int64_t> mid = shapes.layers[size_t(last - 2)].out.dims();
        if (d.size() < 3 || mid.size() != d.size() + 1 || mid[0] != d[0] || mid[1] < 2 || mid[1] * mid[2] != d[1]
            || !std::equal(d.begin() + 2, d.end(), mid.begin() + 3) || shapes.layers[size_t(last)].out.dims() != d)
            return;
        std::vector<int64_t> perm(mid.size());
        for (size_t k = 0; k < perm.size(); ++k)
            perm[k] = int64_t(k);
        std::swap(perm[1], perm[2]);
        if (wrappedDims(*swap, int(mid.size())) != perm)
            return;
        Layer shuffle = layers[size_t(last)];
        shuffle.spec = ChannelShuffle { mid[1] };
        shuffle.inputs = layers[size_t(last - 2)].inputs;
        layers.erase(layers.end() - 3, layers.end());
        layers.push_back(std::move(shuffle));
        for (const std::string& v : views)
            g.activations.erase(v);
        g.activations[n.output(0)].layer = last - 2;
    }

    std::vector<int64_t> axesOf(GraphBuilder& g, const ::onnx::NodeProto& n, const Attributes& a, bool required)
    {
        if (g.opset >= 13) {
            if (const ConstTensor* c = g.optionalConstant(n, 1, a, "axes"))
                return c->ints(a.where());
        } else if (auto v = a.getInts("axes")) {
            return *v;
        }
        if (required)
            refuse(n, a, n.op_type() + " without axes");
        return {};
    }
} // namespace

void reshape(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    std::string input = in0(n, a);
    if (n.input_size() < 2 || n.input(1).empty())
        a.fail("Reshape without its shape input");
    const std::vector<int64_t> target = g.constant(n.input(1), a, "shape").ints(a.where());
    if (const auto w = g.wide.find(input); w != g.wide.end() && !g.isActivation(input))
        input = unwiden(g, n, name, a, w->second); // the wide view and its transpose as layers of at most 6 dims
    const std::vector<int64_t> inDims
        = g.wide.count(input) ? wideDims(g.wide.at(input)) : g.activation(input, a).shape.dims();
    const bool allowZero = a.getInt("allowzero", 0) != 0;
    const std::vector<int64_t> dims = resolveReshape(inDims, target, allowZero);
    if (dims.empty())
        refuse(n, a,
            "Reshape of " + dimsText(inDims) + " to " + dimsText(target) + (allowZero ? " with allowzero" : "")
                + ": the element counts differ, or two -1s");
    if (dims.size() > size_t(Shape::kMaxRank) && g.uses[n.output(0)] == 1 && n.output_size() == 1) {
        // Held back until a Transpose and a Reshape read it (GraphBuilder::wide).
        std::vector<int64_t> identity(dims.size());
        for (size_t k = 0; k < dims.size(); ++k)
            identity[k] = int64_t(k);
        g.wide[n.output(0)] = { input, dims, identity,
            a.where() + ": a " + std::to_string(dims.size()) + "-D result " + dimsText(dims)
                + " (ConvScope's tensors have 1 to " + std::to_string(Shape::kMaxRank)
                + " dims; one is taken when a Transpose and then a Reshape read it)" };
        return;
    }
    addReshape(g, n, name, a, input, dims);
    collapseShuffle(g, n);
}

void flatten(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    // ONNX's Flatten always makes [prod(dims[:axis]), prod(dims[axis:])], axis in [-r, r].
    const std::string& input = in0(n, a);
    const std::vector<int64_t> d = g.activation(input, a).shape.dims();
    const int64_t r = int64_t(d.size());
    int64_t axis = a.getInt("axis", 1);
    if (axis < -r || axis > r)
        refuse(n, a, "Flatten on axis " + std::to_string(axis) + " of a " + std::to_string(r) + "-D input");
    axis = axis < 0 ? axis + r : axis;
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < r; ++k)
        (k < axis ? outer : inner) *= d[size_t(k)];
    addReshape(g, n, name, a, input, { outer, inner });
}

void squeeze(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    const std::string& input = in0(n, a);
    const std::vector<int64_t> d = g.activation(input, a).shape.dims();
    const bool unsqueeze = n.op_type() == "Unsqueeze";
    std::vector<int64_t> axes = axesOf(g, n, a, unsqueeze);
    const int64_t r = int64_t(d.size()) + (unsqueeze ? int64_t(axes.size()) : 0);
    std::vector<bool> marked(size_t(r), false);
    for (int64_t ax : axes) {
        const int64_t k = ax < 0 ? ax + r : ax;
        if (k < 0 || k >= r || marked[size_t(k)])
            refuse(n, a,
                n.op_type() + " on axes " + dimsText(axes) + " of " + dimsText(d) + ": axis " + std::to_string(ax)
                    + " is out of range or repeated");
        marked[size_t(k)] = true;
    }
    std::vector<int64_t> out;
    if (unsqueeze) {
        size_t from = 0;
        for (int64_t k = 0; k < r; ++k)
            out.push_back(marked[size_t(k)] ? 1 : d[from++]);
    } else {
        for (int64_t k = 0; k < r; ++k) {
            const bool drop = axes.empty() ? d[size_t(k)] == 1 : bool(marked[size_t(k)]);
            if (drop && d[size_t(k)] != 1)
                refuse(n, a,
                    "Squeeze of axis " + std::to_string(k) + " of " + dimsText(d) + ", whose size is "
                        + std::to_string(d[size_t(k)]) + ", not 1");
            if (!drop)
                out.push_back(d[size_t(k)]);
        }
    }
    addReshape(g, n, name, a, input, out);
}

void transpose(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    const std::string& input = in0(n, a);
    const bool wide = g.wide.count(input) && !g.isActivation(input);
    const std::vector<int64_t> d = wide ? wideDims(g.wide.at(input)) : g.activation(input, a).shape.dims();
    std::vector<int64_t> perm = a.getInts("perm").value_or(std::vector<int64_t> {});
    if (perm.empty()) // ONNX's default: the axes reversed
        for (size_t k = d.size(); k-- > 0;)
            perm.push_back(int64_t(k));
    onlyFirstOutput(g, n, a);
    if (const auto w = g.wide.find(input); wide) {
        // A transpose of a wide view, read once: held back too (the reshape that reads it makes the layers).
        std::vector<int64_t> seen(w->second.perm.size(), 0), composed;
        if (perm.size() != seen.size() || g.uses[n.output(0)] != 1)
            a.fail(w->second.why);
        for (int64_t p : perm) {
            if (p < 0 || p >= int64_t(seen.size()) || seen[size_t(p)]++)
                refuse(n, a, "Transpose perm " + dimsText(perm) + " of a " + std::to_string(seen.size()) + "-D tensor");
            composed.push_back(w->second.perm[size_t(p)]);
        }
        GraphBuilder::WideView t = w->second;
        t.perm = composed;
        g.wide[n.output(0)] = t;
        return;
    }
    g.addLayer(name, Transpose { perm }, { input }, n.output(0), a);
}

void split(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    const std::string& input = in0(n, a);
    const std::vector<int64_t> dims = g.activation(input, a).shape.dims();
    const int64_t rank = int64_t(dims.size());
    int64_t axis = a.getInt("axis", 0);
    if (axis < -rank || axis >= rank)
        refuse(
            n, a, "Split on axis " + std::to_string(axis) + " of the " + std::to_string(rank) + "-D " + dimsText(dims));
    axis = axis < 0 ? axis + rank : axis;
    const ConstTensor* given = g.opset >= 13 ? g.optionalConstant(n, 1, a, "split") : nullptr;
    const std::vector<int64_t> sizes = splitSizes(n, dims, axis, given, a, g.opset);
    int64_t begin = 0;
    for (int k = 0; k < n.output_size(); ++k) {
        const int64_t size = sizes[size_t(k)];
        const std::string& out = n.output(k);
        begin += size;
        if (out.empty() || !g.uses.count(out))
            continue; // nothing reads this part
        if (size == 0)
            refuse(n, a,
                "Split output " + std::to_string(k) + " is empty (sizes " + dimsText(sizes)
                    + "; ConvScope's tensors have no empty axis)");
        const std::string layer = k == 0 ? name : name + "/" + std::to_string(k);
        if (size == dims[size_t(axis)])
            g.addLayer(layer, Identity {}, { input }, out, a);
        else
            g.addLayer(layer, Slice { axis, begin - size, begin }, { input }, out, a);
    }
}

void expand(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    onlyFirstOutput(g, n, a);
    const std::string& input = in0(n, a);
    const std::vector<int64_t> in = g.activation(input, a).shape.dims();
    if (n.input_size() < 2 || !g.isConstant(n.input(1)))
        refuse(n, a, "Expand whose shape is computed from data (ConvScope needs it constant)");
    const std::vector<int64_t> shape = g.constant(n.input(1), a, "shape").ints(a.where());
    const size_t r = std::max(in.size(), shape.size());
    // Both right-aligned, missing dims 1: a dim of 1 on either side takes the other (ONNX's bidirectional rule).
    std::vector<int64_t> out(r), grow(r, 1);
    bool same = r == in.size();
    for (size_t k = 0; k < r; ++k) {
        const int64_t x = k + in.size() >= r ? in[k + in.size() - r] : 1;
        const int64_t t = k + shape.size() >= r ? shape[k + shape.size() - r] : 1;
        if (t < 0 || (x != t && x != 1 && t != 1))
            a.fail("Expand of " + dimsText(in) + " to " + dimsText(shape) + ": dimension " + std::to_string(k) + " is "
                + std::to_string(x) + " and the shape asks " + std::to_string(t) + " (only a dimension of 1 expands)");
        out[k] = x == 1 ? t : x;
        if (out[k] == 0)
            refuse(n, a, "Expand to an empty " + dimsText(out) + " (ConvScope's tensors have no empty axis)");
        if (out[k] != x)
            grow[k] = out[k];
        same = same && out[k] == x;
    }
    if (same)
        return g.addLayer(name, Identity {}, { input }, n.output(0), a);
    const int64_t ones = elementCount(grow, a.where());
    if (ones > (int64_t(1) << 26))
        refuse(n, a, "Expand of " + dimsText(in) + " to " + dimsText(out) + " (over 2^26 broadcast elements)");
    Binary l;
    l.op = Binary::Op::Mul;
    l.constant.assign(size_t(ones), 1.0f);
    l.constant_shape = grow;
    g.addLayer(name, l, { input }, n.output(0), a);
}

std::vector<std::string> concatInputs(
    GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a, int64_t axis)
{
    // A constant input becomes a tensor of layers from an activation input `like` of the same concat: a slice of
    // length 1 along the axis, raised to the power 0 (1 for every value, NaN and infinities included), times the
    // constant, which broadcasts along the axis (and the batch, where the constant's is 1). Exact, three small layers.
    std::string like;
    for (const auto& in : n.input())
        if (like.empty() && g.isActivation(in))
            like = in;
    std::vector<std::string> ins;
    for (int k = 0; k < n.input_size(); ++k) {
        const std::string& in = n.input(k);
        if (g.empty.count(in) && !g.isActivation(in))
            continue; // an empty Slice adds nothing
        if (g.isActivation(in) || like.empty() || !g.isConstant(in)) {
            (void)g.activation(in, a); // fails naming an undefined input
            ins.push_back(in);
            continue;
        }
        const ConstTensor& c = g.constant(in, a, "input " + std::to_string(k));
        const std::vector<int64_t> d = g.activation(like, a).shape.dims();
        const int64_t r = int64_t(d.size()), ax = axis < 0 ? axis + r : axis;
        if (int64_t(c.dims.size()) != r || ax < 0 || ax >= r)
            a.fail("Concat on axis " + std::to_string(axis) + " of the constant " + dimsText(c.dims) + " and "
                + dimsText(d) + " (ranks differ or the axis is out of range)");
        for (int64_t j = 0; j < r; ++j)
            if (j != ax && c.dims[size_t(j)] != d[size_t(j)] && c.dims[size_t(j)] != 1)
                a.fail("Concat on axis " + std::to_string(ax) + " of the constant " + dimsText(c.dims) + " and "
                    + dimsText(d) + ": dimension " + std::to_string(j) + " differs");
        if (c.numel() > (int64_t(1) << 26))
            refuse(n, a, "Concat of a constant of " + dimsText(c.dims) + " (over 2^26 elements)");
        const std::string base = name + "/const" + std::to_string(k),
                          tensor = n.output(0) + "#const" + std::to_string(k);
        std::string one = like;
        if (d[size_t(ax)] != 1) {
            g.addLayer(base + "_slice", Slice { ax, 0, 1 }, { like }, tensor + "#slice", a);
            one = tensor + "#slice";
        }
        Binary ones;
        ones.op = Binary::Op::Pow;
        ones.constant = { 0.0f };
        ones.constant_shape = { 1 };
        g.addLayer(base + "_ones", ones, { one }, tensor + "#ones", a);
        Binary value;
        value.op = Binary::Op::Mul;
        for (int64_t e = 0; e < c.numel(); ++e)
            value.constant.push_back(float(c.at(size_t(e))));
        value.constant_shape = c.dims;
        g.addLayer(base, value, { tensor + "#ones" }, tensor, a);
        ins.push_back(tensor);
    }
    return ins;
}

void padAxes(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a,
    const std::vector<int64_t>& pads, double value)
{
    onlyFirstOutput(g, n, a);
    const size_t r = pads.size() / 2;
    std::vector<size_t> axes;
    for (size_t ax = 0; ax < r; ++ax)
        if (pads[ax] || pads[ax + r])
            axes.push_back(ax);
    std::string current = in0(n, a);
    if (axes.empty())
        return g.addLayer(name, Identity {}, { current }, n.output(0), a);
    for (size_t k = 0; k < axes.size(); ++k) {
        const size_t ax = axes[k];
        const std::vector<int64_t> d = g.activation(current, a).shape.dims();
        const std::string stem = k + 1 == axes.size() ? name : name + "/axis" + std::to_string(ax);
        const std::string out = k + 1 == axes.size() ? n.output(0) : n.output(0) + "#axis" + std::to_string(ax);
        std::vector<std::string> parts;
        for (const int side : { 0, 1 }) {
            const int64_t count = pads[ax + size_t(side) * r];
            if (side == 1)
                parts.push_back(current);
            if (count == 0)
                continue;
            // A block of `count` values along the axis: a slice of one, to the power 0, times the value.
            const std::string block = out + (side ? "#after" : "#before"), layer = stem + (side ? "_after" : "_before");
            std::string one = current;
            if (d[ax] != 1) {
                g.addLayer(layer + "_slice", Slice { int64_t(ax), 0, 1 }, { current }, block + "#slice", a);
                one = block + "#slice";
            }
            Binary ones;
            ones.op = Binary::Op::Pow;
            ones.constant = { 0.0f };
            ones.constant_shape = { 1 };
            g.addLayer(layer + "_ones", ones, { one }, block + "#ones", a);
            if (count > (int64_t(1) << 26))
                refuse(n, a, "Pad of " + std::to_string(count) + " along axis " + std::to_string(ax));
            Binary fill;
            fill.op = Binary::Op::Mul;
            fill.constant.assign(size_t(count), float(value));
            fill.constant_shape.assign(r, 1);
            fill.constant_shape[ax] = count;
            g.addLayer(layer, fill, { block + "#ones" }, block, a);
            parts.push_back(block);
        }
        g.addLayer(stem, Concat { int64_t(ax) }, parts, out, a);
        current = out;
    }
}

void tile(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    // Tile of an activation: along each repeated axis, a concat of that many copies (exact; at most 256 a axis).
    onlyFirstOutput(g, n, a);
    std::string current = in0(n, a);
    if (n.input_size() < 2 || !g.isConstant(n.input(1)))
        refuse(n, a, "Tile whose repeats are computed from data (ConvScope needs them constant)");
    const std::vector<int64_t> reps = g.constant(n.input(1), a, "repeats").ints(a.where());
    const std::vector<int64_t> d = g.activation(current, a).shape.dims();
    if (reps.size() != d.size())
        a.fail("Tile of " + dimsText(d) + " with repeats " + dimsText(reps) + " of another length");
    std::vector<size_t> axes;
    for (size_t k = 0; k < reps.size(); ++k) {
        if (reps[k] < 1 || reps[k] > 256)
            refuse(n, a,
                "Tile of " + dimsText(d) + " by " + dimsText(reps)
                    + " (ConvScope repeats an axis 1 to 256 times; its tensors have no empty axis)");
        if (reps[k] > 1)
            axes.push_back(k);
    }
    if (axes.empty())
        return g.addLayer(name, Identity {}, { current }, n.output(0), a);
    for (size_t j = 0; j < axes.size(); ++j) {
        const bool last = j + 1 == axes.size();
        const std::string out = last ? n.output(0) : n.output(0) + "#tile" + std::to_string(axes[j]);
        g.addLayer(last ? name : name + "/axis" + std::to_string(axes[j]), Concat { int64_t(axes[j]) },
            std::vector<std::string>(size_t(reps[axes[j]]), current), out, a);
        current = out;
    }
}

} // namespace convscope::onnx::convert
