// The second half of constant folding: what exports write around shapes and masks (issue 30) — comparisons and
// logic (Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, And, Or, Xor, Where), element-wise maths of
// constants (Min, Max, Pow, Mod, Neg, Abs, Floor, Ceil, Round, Sign, Sqrt, Reciprocal, Exp, Log), and the
// generators and views (Expand, Tile, Range, Shape, Size, Split). Booleans are integers 0 and 1, as ConstTensor holds
// them; a result is float when any operand is. Sizes come from the file, so every count is checked and capped.
#include "compute/onnx/onnx_fold.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/memory_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::onnx {

namespace {

    constexpr int64_t kMaxFolded = int64_t(1) << 26; // elements: constants computed here are shapes, masks, indices

    const ConstTensor& need(const std::vector<const ConstTensor*>& in, size_t k, const Attributes& a)
    {
        if (k >= in.size() || !in[k])
            a.fail("input " + std::to_string(k) + " is missing");
        return *in[k];
    }

    int64_t cappedCount(const std::vector<int64_t>& dims, const Attributes& a)
    {
        const int64_t n = elementCount(dims, a.where());
        if (n > kMaxFolded)
            a.fail("a constant of " + npyDimsText(dims) + " is too large to fold (over " + std::to_string(kMaxFolded)
                + " elements)");
        // The result and an index per element (64 bits each), against the memory budget.
        checkHostAllocation(n * 16, a.where() + ": a constant of " + npyDimsText(dims));
        return n;
    }

    // NumPy's broadcast of every operand's dims; fails naming them when they do not broadcast.
    std::vector<int64_t> broadcastDims(const std::vector<const ConstTensor*>& ops, const Attributes& a)
    {
        size_t r = 0;
        for (const ConstTensor* t : ops)
            r = std::max(r, t->dims.size());
        std::vector<int64_t> out(r, 1);
        for (const ConstTensor* t : ops)
            for (size_t k = 0; k < t->dims.size(); ++k) {
                const int64_t d = t->dims[k];
                int64_t& o = out[r - t->dims.size() + k];
                if (d != o && d != 1 && o != 1) {
                    std::string shapes;
                    for (const ConstTensor* u : ops)
                        shapes += (shapes.empty() ? "" : " with ") + npyDimsText(u->dims);
                    a.fail("cannot broadcast " + shapes);
                }
                if (o == 1)
                    o = d;
            }
        return out;
    }

    // The flat index into t of each element of a tensor of `out` dims that t broadcasts to.
    std::vector<int64_t> broadcastIndex(const ConstTensor& t, const std::vector<int64_t>& out, const Attributes& a)
    {
        const size_t r = out.size(), off = r - t.dims.size();
        std::vector<int64_t> stride(r, 0);
        int64_t s = 1;
        for (size_t k = t.dims.size(); k-- > 0;) {
            stride[off + k] = t.dims[k] == 1 ? 0 : s;
            s *= t.dims[k];
        }
        std::vector<int64_t> index(size_t(cappedCount(out, a))), pos(r, 0);
        for (size_t e = 0; e < index.size(); ++e) {
            int64_t src = 0;
            for (size_t k = 0; k < r; ++k)
                src += pos[k] * stride[k];
            index[e] = src;
            for (size_t k = r; k-- > 0;) {
                if (++pos[k] < out[k])
                    break;
                pos[k] = 0;
            }
        }
        return index;
    }

    ConstTensor pick(const ConstTensor& src, std::vector<int64_t> dims, const std::vector<int64_t>& index)
    {
        ConstTensor out;
        out.dims = std::move(dims);
        out.isFloat = src.isFloat;
        for (int64_t k : index)
            if (src.isFloat)
                out.f.push_back(src.f[size_t(k)]);
            else
                out.i.push_back(src.i[size_t(k)]);
        return out;
    }

    bool isComparison(const std::string& op)
    {
        return op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual";
    }

    // Two or more operands (Min, Max: any count), broadcast, combined left to right.
    ConstTensor combine(const std::string& op, const std::vector<const ConstTensor*>& ops, const Attributes& a)
    {
        const std::vector<int64_t> dims = broadcastDims(ops, a);
        std::vector<std::vector<int64_t>> idx;
        bool anyFloat = false;
        for (const ConstTensor* t : ops) {
            idx.push_back(broadcastIndex(*t, dims, a));
            anyFloat = anyFloat || t->isFloat;
        }
        const bool logical = isComparison(op) || op == "And" || op == "Or" || op == "Xor";
        ConstTensor out;
        out.dims = dims;
        out.isFloat = anyFloat && !logical;
        const size_t n = idx.empty() ? 0 : idx[0].size();
        for (size_t e = 0; e < n; ++e) {
            if (out.isFloat || (logical && anyFloat)) {
                double v = ops[0]->at(size_t(idx[0][e]));
                for (size_t t = 1; t < ops.size(); ++t) {
                    const double w = ops[t]->at(size_t(idx[t][e]));
                    v = op == "Min"              ? std::min(v, w)
                        : op == "Max"            ? std::max(v, w)
                        : op == "Pow"            ? std::pow(v, w)
                        : op == "Mod"            ? (a.getInt("fmod", 0) ? std::fmod(v, w) : v - w * std::floor(v / w))
                        : op == "Equal"          ? double(v == w)
                        : op == "Less"           ? double(v < w)
                        : op == "Greater"        ? double(v > w)
                        : op == "LessOrEqual"    ? double(v <= w)
                        : op == "GreaterOrEqual" ? double(v >= w)
                        : op == "And"            ? double(v != 0 && w != 0)
                        : op == "Or"             ? double(v != 0 || w != 0)
                                                 : double((v != 0) != (w != 0));
                }
                if (out.isFloat)
                    out.f.push_back(float(v));
                else
                    out.i.push_back(int64_t(v));
                continue;
            }
            int64_t v = ops[0]->i[size_t(idx[0][e])];
            for (size_t t = 1; t < ops.size(); ++t) {
                const int64_t w = ops[t]->i[size_t(idx[t][e])];
                if (op == "Pow") {
                    if (w < 0)
                        a.fail("an integer Pow with a negative exponent");
                    int64_t p = 1;
                    for (int64_t k = 0; k < w && p != 0 && !(p == 1 && v == 1); ++k)
                        if (__builtin_mul_overflow(p, v, &p))
                            a.fail("an integer Pow that overflows 64 bits");
                    v = v == -1 ? (w % 2 ? -1 : 1) : p;
                } else if (op == "Mod") {
                    if (w == 0)
                        a.fail("an integer Mod by zero");
                    const int64_t m = v % w; // fmod's sign (the dividend's); else Python's (the divisor's)
                    v = a.getInt("fmod", 0) || m == 0 || (m < 0) == (w < 0) ? m : m + w;
                } else {
                    v = op == "Min"              ? std::min(v, w)
                        : op == "Max"            ? std::max(v, w)
                        : op == "Equal"          ? int64_t(v == w)
                        : op == "Less"           ? int64_t(v < w)
                        : op == "Greater"        ? int64_t(v > w)
                        : op == "LessOrEqual"    ? int64_t(v <= w)
                        : op == "GreaterOrEqual" ? int64_t(v >= w)
                        : op == "And"            ? int64_t(v != 0 && w != 0)
                        : op == "Or"             ? int64_t(v != 0 || w != 0)
                                                 : int64_t((v != 0) != (w != 0));
                }
            }
            out.i.push_back(v);
        }
        return out;
    }

    ConstTensor unary(const std::string& op, ConstTensor x, const Attributes& a)
    {
        if (op == "Not") {
            ConstTensor out;
            out.dims = x.dims;
            out.isFloat = false;
            for (size_t k = 0; k < size_t(x.numel()); ++k)
                out.i.push_back(x.at(k) == 0 ? 1 : 0);
            return out;
        }
        const bool intOk = op == "Neg" || op == "Abs" || op == "Sign" || op == "Floor" || op == "Ceil" || op == "Round";
        if (!x.isFloat) {
            if (intOk) {
                for (int64_t& v : x.i) {
                    if ((op == "Neg" || op == "Abs") && v == std::numeric_limits<int64_t>::min())
                        a.fail(op + " of the most negative 64-bit integer");
                    v = op == "Neg" ? -v : op == "Abs" ? std::llabs(v) : op == "Sign" ? (v > 0) - (v < 0) : v;
                }
                return x;
            }
            for (int64_t v : x.i) // Sqrt, Exp, … of integers: ONNX takes floats only there; computed as float
                x.f.push_back(float(v));
            x.i.clear();
            x.isFloat = true;
        }
        for (float& v : x.f) {
            const double d = v;
            v = float(op == "Neg"        ? -d
                    : op == "Abs"        ? std::fabs(d)
                    : op == "Sign"       ? double((d > 0) - (d < 0))
                    : op == "Floor"      ? std::floor(d)
                    : op == "Ceil"       ? std::ceil(d)
                    : op == "Round"      ? std::nearbyint(d) // half to even, as ONNX says
                    : op == "Sqrt"       ? std::sqrt(d)
                    : op == "Reciprocal" ? 1.0 / d
                    : op == "Exp"        ? std::exp(d)
                                         : std::log(d));
        }
        return x;
    }

    ConstTensor where(const std::vector<const ConstTensor*>& in, const Attributes& a)
    {
        const ConstTensor &c = need(in, 0, a), &x = need(in, 1, a), &y = need(in, 2, a);
        const std::vector<int64_t> dims = broadcastDims({ &c, &x, &y }, a);
        const std::vector<int64_t> ic = broadcastIndex(c, dims, a), ix = broadcastIndex(x, dims, a),
                                   iy = broadcastIndex(y, dims, a);
        ConstTensor out;
        out.dims = dims;
        out.isFloat = x.isFloat || y.isFloat;
        for (size_t e = 0; e < ic.size(); ++e) {
            const bool take = c.at(size_t(ic[e])) != 0;
            const ConstTensor& s = take ? x : y;
            const int64_t k = take ? ix[e] : iy[e];
            if (out.isFloat)
                out.f.push_back(float(s.at(size_t(k))));
            else
                out.i.push_back(s.i[size_t(k)]);
        }
        return out;
    }

    ConstTensor expand(const ConstTensor& x, const ConstTensor& shape, const Attributes& a)
    {
        ConstTensor target;
        target.dims = shape.ints(a.where() + ": shape");
        for (const int64_t d : target.dims)
            if (d < 0)
                a.fail("Expand to " + npyDimsText(target.dims) + ": a negative dimension");
        const std::vector<int64_t> dims = broadcastDims({ &x, &target }, a);
        return pick(x, dims, broadcastIndex(x, dims, a));
    }

    ConstTensor tile(const ConstTensor& x, const ConstTensor& repeatsT, const Attributes& a)
    {
        const std::vector<int64_t> repeats = repeatsT.ints(a.where() + ": repeats");
        const size_t r = x.dims.size();
        if (repeats.size() != r)
            a.fail("Tile of " + npyDimsText(x.dims) + " with repeats " + npyDimsText(repeats) + " of another length");
        std::vector<int64_t> dims(r);
        for (size_t k = 0; k < r; ++k) {
            if (repeats[k] < 0)
                a.fail("Tile with a negative repeat " + npyDimsText(repeats));
            dims[k] = checkedMul(x.dims[k], repeats[k], a.where());
        }
        std::vector<int64_t> index(size_t(cappedCount(dims, a))), pos(r, 0), stride(r, 1);
        for (size_t k = r; k-- > 1;)
            stride[k - 1] = stride[k] * x.dims[k];
        for (size_t e = 0; e < index.size(); ++e) {
            int64_t src = 0;
            for (size_t k = 0; k < r; ++k)
                src += (pos[k] % x.dims[k]) * stride[k];
            index[e] = src;
            for (size_t k = r; k-- > 0;) {
                if (++pos[k] < dims[k])
                    break;
                pos[k] = 0;
            }
        }
        return pick(x, dims, index);
    }

    ConstTensor range(const std::vector<const ConstTensor*>& in, const Attributes& a)
    {
        const ConstTensor &s = need(in, 0, a), &l = need(in, 1, a), &d = need(in, 2, a);
        if (s.numel() != 1 || l.numel() != 1 || d.numel() != 1)
            a.fail("Range's start, limit and delta must be scalars");
        ConstTensor out;
        out.isFloat = s.isFloat || l.isFloat || d.isFloat;
        const double start = s.at(0), limit = l.at(0), delta = d.at(0);
        if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
            a.fail("Range with delta 0 or a bound that is not finite");
        const double count = std::max(std::ceil((limit - start) / delta), 0.0);
        if (count > double(kMaxFolded))
            a.fail("Range of " + std::to_string(count) + " elements is too large to fold");
        const int64_t n = int64_t(count);
        out.dims = { n };
        for (int64_t k = 0; k < n; ++k)
            if (out.isFloat)
                out.f.push_back(float(start + double(k) * delta));
            else
                out.i.push_back(s.i[0] + k * d.i[0]);
        return out;
    }

    // Split of a constant along `axis` into the given sizes.
    std::vector<ConstTensor> split(const ConstTensor& x, const std::vector<int64_t>& sizes, int64_t axis)
    {
        std::vector<ConstTensor> outs;
        int64_t outer = 1, inner = 1;
        for (int64_t k = 0; k < axis; ++k)
            outer *= x.dims[size_t(k)];
        for (size_t k = size_t(axis) + 1; k < x.dims.size(); ++k)
            inner *= x.dims[k];
        const int64_t n = x.dims[size_t(axis)];
        int64_t begin = 0;
        for (const int64_t size : sizes) {
            std::vector<int64_t> dims = x.dims, index;
            dims[size_t(axis)] = size;
            for (int64_t o = 0; o < outer; ++o)
                for (int64_t j = begin; j < begin + size; ++j)
                    for (int64_t e = 0; e < inner; ++e)
                        index.push_back((o * n + j) * inner + e);
            outs.push_back(pick(x, dims, index));
            begin += size;
        }
        return outs;
    }

    // ScatterND of constants (Swin's shifted-window mask is built by slice assignment): updates written into a copy
    // of data at the index tuples, combined by `reduction` (opset 16: add, mul, max, min; none replaces).
    ConstTensor scatterND(const std::vector<const ConstTensor*>& in, const Attributes& a)
    {
        ConstTensor out = need(in, 0, a);
        const ConstTensor &idx = need(in, 1, a), &upd = need(in, 2, a);
        const std::vector<int64_t> ids = idx.ints(a.where() + ": indices");
        const size_t r = out.dims.size();
        const size_t k = idx.dims.empty() ? 0 : size_t(idx.dims.back());
        if (idx.dims.empty() || k < 1 || k > r)
            a.fail("ScatterND indices " + npyDimsText(idx.dims) + " for data " + npyDimsText(out.dims));
        std::vector<int64_t> want(idx.dims.begin(), idx.dims.end() - 1);
        want.insert(want.end(), out.dims.begin() + long(k), out.dims.end());
        if (upd.dims != want || upd.isFloat != out.isFloat)
            a.fail("ScatterND updates " + npyDimsText(upd.dims) + " for indices " + npyDimsText(idx.dims) + " and data "
                + npyDimsText(out.dims) + " (expected " + npyDimsText(want) + " of the data's type)");
        int64_t slice = 1;
        for (size_t j = k; j < r; ++j)
            slice *= out.dims[j];
        const std::string reduction = a.getString("reduction", "none");
        if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min")
            a.fail("ScatterND reduction \"" + reduction + "\"");
        const size_t tuples = k ? ids.size() / k : 0;
        for (size_t t = 0; t < tuples; ++t) {
            int64_t offset = 0;
            for (size_t j = 0; j < k; ++j) {
                int64_t v = ids[t * k + j];
                const int64_t n = out.dims[j];
                if (v < -n || v >= n)
                    a.fail("ScatterND index " + std::to_string(v) + " is out of range for a dimension of "
                        + std::to_string(n));
                offset = offset * n + (v < 0 ? v + n : v);
            }
            for (int64_t e = 0; e < slice; ++e) {
                const size_t dst = size_t(offset * slice + e), src = t * size_t(slice) + size_t(e);
                const auto apply = [&](auto& data, const auto& u) {
                    data[dst] = reduction == "add" ? data[dst] + u[src]
                        : reduction == "mul"       ? data[dst] * u[src]
                        : reduction == "max"       ? std::max(data[dst], u[src])
                        : reduction == "min"       ? std::min(data[dst], u[src])
                                                   : u[src];
                };
                if (out.isFloat)
                    apply(out.f, upd.f);
                else
                    apply(out.i, upd.i);
            }
        }
        return out;
    }

} // namespace

const std::vector<std::string>& shapeFoldOperators()
{
    static const std::vector<std::string> ops = { "Abs", "And", "Ceil", "Equal", "Exp", "Expand", "Floor", "Greater",
        "GreaterOrEqual", "Less", "LessOrEqual", "Log", "Max", "Min", "Mod", "Neg", "Not", "Or", "Pow", "Range",
        "Reciprocal", "Round", "ScatterND", "Shape", "Sign", "Size", "Split", "Sqrt", "Tile", "Where", "Xor" };
    return ops;
}

std::vector<int64_t> splitSizes(const ::onnx::NodeProto& node, const std::vector<int64_t>& dims, int64_t axis,
    const ConstTensor* splitInput, const Attributes& a, int64_t opset)
{
    const int64_t n = dims[size_t(axis)], outputs = node.output_size();
    std::vector<int64_t> sizes;
    if (splitInput)
        sizes = splitInput->ints(a.where() + ": split");
    else if (opset < 13)
        sizes = a.getInts("split").value_or(std::vector<int64_t> {});
    if (sizes.empty() && opset >= 18 && a.has("num_outputs")) {
        // ONNX 18: chunks of ceil(n / num_outputs), the last smaller.
        const int64_t parts = a.getInt("num_outputs", 0);
        if (parts < 1 || parts != outputs)
            a.fail("Split with num_outputs " + std::to_string(parts) + " and " + std::to_string(outputs) + " outputs");
        const int64_t chunk = (n + parts - 1) / parts;
        for (int64_t k = 0; k < parts; ++k)
            sizes.push_back(std::clamp<int64_t>(n - k * chunk, 0, chunk));
    } else if (sizes.empty()) {
        if (outputs < 1 || n % outputs != 0)
            a.fail("Split of axis " + std::to_string(axis) + " (size " + std::to_string(n) + ") of " + npyDimsText(dims)
                + " into " + std::to_string(outputs) + " equal parts: it does not divide");
        sizes.assign(size_t(outputs), n / outputs);
    }
    int64_t sum = 0;
    for (const int64_t s : sizes) {
        if (s < 0)
            a.fail("Split sizes " + npyDimsText(sizes) + " hold a negative size");
        sum = checkedAdd(sum, s, a.where());
    }
    if (sum != n || int64_t(sizes.size()) != outputs)
        a.fail("Split sizes " + npyDimsText(sizes) + " (sum " + std::to_string(sum) + ", "
            + std::to_string(sizes.size()) + " parts) for axis " + std::to_string(axis) + " of size "
            + std::to_string(n) + " of " + npyDimsText(dims) + " and " + std::to_string(outputs)
            + " outputs: they must sum to the axis and match the outputs");
    return sizes;
}

std::vector<ConstTensor> foldShapeOperator(
    const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in, const Attributes& a, int64_t opset)
{
    const std::string& op = node.op_type();
    if (op == "Where")
        return { where(in, a) };
    if (op == "Expand")
        return { expand(need(in, 0, a), need(in, 1, a), a) };
    if (op == "Tile")
        return { tile(need(in, 0, a), need(in, 1, a), a) };
    if (op == "Range")
        return { range(in, a) };
    if (op == "ScatterND")
        return { scatterND(in, a) };
    if (op == "Shape" || op == "Size") {
        const ConstTensor& x = need(in, 0, a);
        ConstTensor out;
        out.isFloat = false;
        if (op == "Size")
            return { ConstTensor { {}, false, {}, { x.numel() } } };
        const int64_t r = int64_t(x.dims.size());
        int64_t start = a.getInt("start", 0), end = a.getInt("end", r);
        start = std::clamp(start < 0 ? start + r : start, int64_t(0), r);
        end = std::clamp(end < 0 ? end + r : end, int64_t(0), r);
        for (int64_t d = start; d < end; ++d)
            out.i.push_back(x.dims[size_t(d)]);
        out.dims = { int64_t(out.i.size()) };
        return { out };
    }
    if (op == "Split") {
        const ConstTensor& x = need(in, 0, a);
        const int64_t r = int64_t(x.dims.size());
        int64_t axis = a.getInt("axis", 0);
        if (axis < -r || axis >= r)
            a.fail("Split on axis " + std::to_string(axis) + " of " + npyDimsText(x.dims));
        axis = axis < 0 ? axis + r : axis;
        const ConstTensor* s = opset >= 13 && in.size() > 1 ? in[1] : nullptr;
        return split(x, splitSizes(node, x.dims, axis, s, a, opset), axis);
    }
    if (op == "Min" || op == "Max" || op == "Pow" || op == "Mod" || op == "And" || op == "Or" || op == "Xor"
        || isComparison(op)) {
        std::vector<const ConstTensor*> ops;
        for (size_t k = 0; k < in.size(); ++k)
            ops.push_back(&need(in, k, a));
        if (ops.empty() || (ops.size() != 2 && op != "Min" && op != "Max"))
            a.fail(op + " of " + std::to_string(ops.size()) + " inputs");
        return { combine(op, ops, a) };
    }
    return { unary(op, need(in, 0, a), a) };
}

} // namespace convscope::onnx
