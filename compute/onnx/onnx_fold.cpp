// Constant folding. Every op here works on element indices (a list of source positions) so one routine serves
// float and integer tensors alike; these tensors are small (shapes, pads) or weights transposed once.
#include "compute/onnx/onnx_fold.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/memory_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace convscope::onnx {

namespace {

    std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims)
    {
        std::vector<int64_t> s(dims.size(), 1);
        for (size_t k = dims.size(); k-- > 1;)
            s[k - 1] = s[k] * dims[k];
        return s;
    }

    // A tensor of `dims` whose element k is src's element at index[k].
    ConstTensor pick(const ConstTensor& src, std::vector<int64_t> dims, const std::vector<int64_t>& index)
    {
        ConstTensor out;
        out.dims = std::move(dims);
        out.isFloat = src.isFloat;
        if (src.isFloat) {
            out.f.reserve(index.size());
            for (int64_t k : index)
                out.f.push_back(src.f[size_t(k)]);
        } else {
            out.i.reserve(index.size());
            for (int64_t k : index)
                out.i.push_back(src.i[size_t(k)]);
        }
        return out;
    }

    const ConstTensor& need(const std::vector<const ConstTensor*>& in, size_t k, const Attributes& a)
    {
        if (k >= in.size() || !in[k])
            a.fail("input " + std::to_string(k) + " is missing");
        return *in[k];
    }

    int64_t normAxis(int64_t axis, int64_t rank, const Attributes& a)
    {
        if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
            a.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
        return axis < 0 ? axis + rank : axis;
    }

    std::vector<int64_t> axesFrom(
        const std::vector<const ConstTensor*>& in, size_t k, const Attributes& a, int64_t opset, int64_t sinceInput)
    {
        if (opset >= sinceInput)
            return k < in.size() && in[k] ? in[k]->ints(a.where() + ": axes") : std::vector<int64_t> {};
        return a.getInts("axes").value_or(std::vector<int64_t> {});
    }

    ConstTensor transpose(const ConstTensor& x, const Attributes& a)
    {
        const size_t r = x.dims.size();
        std::vector<int64_t> perm = a.getInts("perm").value_or(std::vector<int64_t> {});
        if (perm.empty())
            for (size_t k = 0; k < r; ++k)
                perm.push_back(int64_t(r - 1 - k));
        std::vector<int64_t> sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        for (size_t k = 0; k < sorted.size(); ++k)
            if (sorted.size() != r || sorted[k] != int64_t(k))
                a.fail("perm " + npyDimsText(perm) + " is not a permutation of " + std::to_string(r) + " axes");
        std::vector<int64_t> dims(r), in = stridesOf(x.dims);
        for (size_t k = 0; k < r; ++k)
            dims[k] = x.dims[size_t(perm[k])];
        std::vector<int64_t> index(size_t(x.numel())), pos(r, 0);
        for (size_t e = 0; e < index.size(); ++e) {
            int64_t src = 0;
            for (size_t k = 0; k < r; ++k)
                src += pos[k] * in[size_t(perm[k])];
            index[e] = src;
            for (size_t k = r; k-- > 0;) {
                if (++pos[k] < dims[k])
                    break;
                pos[k] = 0;
            }
        }
        return pick(x, dims, index);
    }

    ConstTensor gather(const ConstTensor& x, const ConstTensor& idx, const Attributes& a)
    {
        const int64_t r = int64_t(x.dims.size());
        if (r == 0)
            a.fail("Gather of a scalar");
        const int64_t axis = normAxis(a.getInt("axis", 0), r, a);
        const std::vector<int64_t> ids = idx.ints(a.where() + ": indices");
        const int64_t n = x.dims[size_t(axis)];
        int64_t outer = 1, inner = 1;
        for (int64_t k = 0; k < axis; ++k)
            outer *= x.dims[size_t(k)];
        for (int64_t k = axis + 1; k < r; ++k)
            inner *= x.dims[size_t(k)];
        std::vector<int64_t> dims(x.dims.begin(), x.dims.begin() + axis);
        dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
        dims.insert(dims.end(), x.dims.begin() + axis + 1, x.dims.end());
        std::vector<int64_t> index;
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t id : ids) {
                if (id < -n || id >= n)
                    a.fail("index " + std::to_string(id) + " is out of range for a dimension of " + std::to_string(n));
                const int64_t j = id < 0 ? id + n : id;
                for (int64_t in = 0; in < inner; ++in)
                    index.push_back((o * n + j) * inner + in);
            }
        return pick(x, dims, index);
    }

    ConstTensor concat(const std::vector<const ConstTensor*>& in, const Attributes& a)
    {
        if (in.empty())
            a.fail("Concat without inputs");
        const ConstTensor& first = need(in, 0, a);
        const int64_t r = int64_t(first.dims.size());
        const int64_t axis = normAxis(a.getInt("axis", 0), r, a);
        ConstTensor out;
        out.isFloat = first.isFloat;
        out.dims = first.dims;
        out.dims[size_t(axis)] = 0;
        int64_t outer = 1;
        for (int64_t k = 0; k < axis; ++k)
            outer *= first.dims[size_t(k)];
        for (size_t t = 0; t < in.size(); ++t) {
            const ConstTensor& x = need(in, t, a);
            if (int64_t(x.dims.size()) != r || x.isFloat != first.isFloat)
                a.fail("Concat of constants of different ranks or types");
            for (int64_t k = 0; k < r; ++k)
                if (k != axis && x.dims[size_t(k)] != first.dims[size_t(k)])
                    a.fail("Concat of " + npyDimsText(x.dims) + " and " + npyDimsText(first.dims));
            out.dims[size_t(axis)] += x.dims[size_t(axis)];
        }
        for (int64_t o = 0; o < outer; ++o)
            for (const ConstTensor* x : in) {
                const int64_t block = outer ? x->numel() / std::max<int64_t>(outer, 1) : 0;
                for (int64_t e = 0; e < block; ++e) {
                    if (out.isFloat)
                        out.f.push_back(x->f[size_t(o * block + e)]);
                    else
                        out.i.push_back(x->i[size_t(o * block + e)]);
                }
            }
        return out;
    }

    ConstTensor reshape(const ConstTensor& x, const std::vector<int64_t>& shape, bool allowZero, const Attributes& a)
    {
        std::vector<int64_t> dims = shape;
        int64_t known = 1, minus = -1;
        for (size_t k = 0; k < dims.size(); ++k) {
            if (dims[k] == 0 && !allowZero) {
                if (k >= x.dims.size())
                    a.fail("shape " + npyDimsText(shape) + " copies a dimension the input " + npyDimsText(x.dims)
                        + " lacks");
                dims[k] = x.dims[k];
            }
            if (dims[k] == -1) {
                if (minus >= 0)
                    a.fail("shape " + npyDimsText(shape) + " has two -1");
                minus = int64_t(k);
                continue;
            }
            if (dims[k] < 0)
                a.fail("shape " + npyDimsText(shape) + " has a negative dimension");
            known = checkedMul(known, dims[k], a.where() + ": shape");
        }
        if (minus >= 0) {
            if (known == 0 || x.numel() % known != 0)
                a.fail("cannot reshape " + npyDimsText(x.dims) + " to " + npyDimsText(shape));
            dims[size_t(minus)] = x.numel() / known;
        }
        if (elementCount(dims, a.where()) != x.numel())
            a.fail("cannot reshape " + npyDimsText(x.dims) + " to " + npyDimsText(shape));
        ConstTensor out = x;
        out.dims = dims;
        return out;
    }

    ConstTensor slice(const ConstTensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends,
        std::vector<int64_t> axes, std::vector<int64_t> steps, const Attributes& a)
    {
        const int64_t r = int64_t(x.dims.size());
        if (axes.empty())
            for (size_t k = 0; k < starts.size(); ++k)
                axes.push_back(int64_t(k));
        if (steps.empty())
            steps.assign(starts.size(), 1);
        if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
            a.fail("starts, ends, axes and steps differ in length");
        std::vector<int64_t> begin(size_t(r), 0), step(size_t(r), 1), dims = x.dims;
        for (size_t k = 0; k < starts.size(); ++k) {
            const int64_t ax = normAxis(axes[k], r, a), n = x.dims[size_t(ax)], s = steps[k];
            if (s == 0)
                a.fail("a step of 0");
            const auto clampIdx = [&](int64_t v, int64_t lo, int64_t hi) {
                if (v < 0)
                    v = v < -n ? -1 : v + n; // -1 marks "before the first": clamped below
                return std::clamp(v, lo, hi);
            };
            int64_t b, e;
            if (s > 0) {
                b = clampIdx(starts[k], 0, n);
                e = clampIdx(ends[k], 0, n);
                dims[size_t(ax)] = e > b ? (e - b + s - 1) / s : 0;
            } else {
                b = clampIdx(starts[k], 0, n - 1); // ONNX: a start before the first is the first (onnxruntime too)
                e = clampIdx(ends[k], -1, n - 1);
                if (ends[k] < -n)
                    e = -1;
                dims[size_t(ax)] = b > e ? (b - e - s - 1) / -s : 0;
            }
            begin[size_t(ax)] = b;
            step[size_t(ax)] = s;
        }
        const std::vector<int64_t> in = stridesOf(x.dims);
        std::vector<int64_t> index(size_t(elementCount(dims, a.where()))), pos(size_t(r), 0);
        for (size_t e = 0; e < index.size(); ++e) {
            int64_t src = 0;
            for (int64_t k = 0; k < r; ++k)
                src += (begin[size_t(k)] + pos[size_t(k)] * step[size_t(k)]) * in[size_t(k)];
            index[e] = src;
            for (int64_t k = r; k-- > 0;) {
                if (++pos[size_t(k)] < dims[size_t(k)])
                    break;
                pos[size_t(k)] = 0;
            }
        }
        return pick(x, dims, index);
    }

    // Numpy broadcasting of two constants for Add, Sub, Mul, Div.
    ConstTensor elementwise(const std::string& op, const ConstTensor& x, const ConstTensor& y, const Attributes& a)
    {
        const size_t r = std::max(x.dims.size(), y.dims.size());
        std::vector<int64_t> dx(r, 1), dy(r, 1), dims(r);
        std::copy(x.dims.begin(), x.dims.end(), dx.begin() + long(r - x.dims.size()));
        std::copy(y.dims.begin(), y.dims.end(), dy.begin() + long(r - y.dims.size()));
        for (size_t k = 0; k < r; ++k) {
            if (dx[k] != dy[k] && dx[k] != 1 && dy[k] != 1)
                a.fail("cannot broadcast " + npyDimsText(x.dims) + " with " + npyDimsText(y.dims));
            dims[k] = dx[k] == 1 ? dy[k] : dx[k];
        }
        const std::vector<int64_t> sx = stridesOf(dx), sy = stridesOf(dy);
        ConstTensor out;
        out.dims = dims;
        out.isFloat = x.isFloat || y.isFloat;
        const size_t n = size_t(elementCount(dims, a.where()));
        std::vector<int64_t> pos(r, 0);
        for (size_t e = 0; e < n; ++e) {
            int64_t ix = 0, iy = 0;
            for (size_t k = 0; k < r; ++k) {
                ix += (dx[k] == 1 ? 0 : pos[k]) * sx[k];
                iy += (dy[k] == 1 ? 0 : pos[k]) * sy[k];
            }
            if (out.isFloat) {
                const double p = x.at(size_t(ix)), q = y.at(size_t(iy));
                out.f.push_back(float(op == "Add" ? p + q : op == "Sub" ? p - q : op == "Mul" ? p * q : p / q));
            } else {
                const int64_t p = x.i[size_t(ix)], q = y.i[size_t(iy)];
                if (op == "Div" && q == 0)
                    a.fail("integer division by zero");
                // Shape arithmetic stays far from overflow; checked anyway, since the numbers come from the file (and
                // may be negative: PyTorch writes -1 · ones for a view's free dims).
                int64_t r = 0;
                const bool overflow = op == "Add" ? __builtin_add_overflow(p, q, &r)
                    : op == "Sub"                 ? __builtin_sub_overflow(p, q, &r)
                    : op == "Mul"                 ? __builtin_mul_overflow(p, q, &r)
                                                  : (p == std::numeric_limits<int64_t>::min() && q == -1);
                if (overflow)
                    a.fail("integer " + op + " of " + std::to_string(p) + " and " + std::to_string(q)
                        + " overflows 64 bits");
                // ONNX's integer Div truncates toward zero, as C++ does.
                out.i.push_back(op == "Div" ? p / q : r);
            }
            for (size_t k = r; k-- > 0;) {
                if (++pos[k] < dims[k])
                    break;
                pos[k] = 0;
            }
        }
        return out;
    }

} // namespace

const std::vector<std::string>& foldableOperators()
{
    static const std::vector<std::string> ops = [] {
        std::vector<std::string> v = { "Add", "Cast", "Concat", "Constant", "ConstantOfShape", "Div", "Gather",
            "Identity", "Mul", "Reshape", "Slice", "Squeeze", "Sub", "Transpose", "Unsqueeze" };
        v.insert(v.end(), shapeFoldOperators().begin(), shapeFoldOperators().end());
        v.insert(v.end(), mathFoldOperators().begin(), mathFoldOperators().end());
        std::sort(v.begin(), v.end());
        return v;
    }();
    return ops;
}

bool isFoldable(const std::string& op)
{
    const auto& ops = foldableOperators();
    return std::find(ops.begin(), ops.end(), op) != ops.end();
}

std::vector<ConstTensor> foldNode(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& in,
    const Attributes& a, int64_t opset, const std::filesystem::path& modelDir)
{
    const std::string& op = node.op_type();
    if (const auto& more = shapeFoldOperators(); std::binary_search(more.begin(), more.end(), op))
        return foldShapeOperator(node, in, a, opset);
    if (const auto& more = mathFoldOperators(); std::binary_search(more.begin(), more.end(), op))
        return foldMathOperator(node, in, a, opset);
    if (op == "Constant") {
        if (const auto* t = a.getTensor("value"))
            return { readTensor(*t, modelDir, a.where() + ": value") };
        ConstTensor c;
        if (a.has("value_float")) {
            c.f = { a.getFloat("value_float", 0) };
        } else if (const auto fs = a.getFloats("value_floats")) {
            c.f = *fs;
            c.dims = { int64_t(fs->size()) };
        } else if (a.has("value_int")) {
            c.isFloat = false;
            c.i = { a.getInt("value_int", 0) };
        } else if (const auto is = a.getInts("value_ints")) {
            c.isFloat = false;
            c.i = *is;
            c.dims = { int64_t(is->size()) };
        } else {
            a.fail("a Constant without a value ConvScope reads (value, value_float(s), value_int(s))");
        }
        return { c };
    }
    if (op == "Identity")
        return { need(in, 0, a) };
    if (op == "Transpose")
        return { transpose(need(in, 0, a), a) };
    if (op == "Gather")
        return { gather(need(in, 0, a), need(in, 1, a), a) };
    if (op == "Concat")
        return { concat(in, a) };
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div")
        return { elementwise(op, need(in, 0, a), need(in, 1, a), a) };
    if (op == "Cast") {
        ConstTensor x = need(in, 0, a);
        const int64_t to = a.getInt("to", ::onnx::TensorProto::FLOAT);
        using P = ::onnx::TensorProto;
        const bool toFloat = to == P::FLOAT || to == P::DOUBLE;
        if (!toFloat && to != P::INT64 && to != P::INT32 && to != P::BOOL)
            a.fail("Cast to type " + std::to_string(to)
                + " (ConvScope folds casts to float, double, int32, int64 and bool)");
        if (to == P::BOOL) { // a mask: 1 where nonzero
            ConstTensor b;
            b.dims = x.dims;
            b.isFloat = false;
            for (size_t k = 0; k < size_t(x.numel()); ++k)
                b.i.push_back(x.at(k) != 0 ? 1 : 0);
            return { b };
        }
        if (toFloat && !x.isFloat) {
            for (int64_t v : x.i)
                x.f.push_back(float(v));
            x.i.clear();
        } else if (!toFloat && x.isFloat) {
            for (float v : x.f)
                x.i.push_back(int64_t(std::trunc(v)));
            x.f.clear();
        }
        x.isFloat = toFloat;
        return { x };
    }
    if (op == "ConstantOfShape") {
        const std::vector<int64_t> dims = need(in, 0, a).ints(a.where() + ": shape");
        ConstTensor value;
        value.f = { 0.0f };
        if (const auto* t = a.getTensor("value"))
            value = readTensor(*t, modelDir, a.where() + ": value");
        if (value.numel() != 1)
            a.fail("ConstantOfShape's value must hold one element");
        const int64_t n = elementCount(dims, a.where());
        checkedMul(n, 8, a.where());
        ConstTensor out;
        out.dims = dims;
        out.isFloat = value.isFloat;
        if (n > (int64_t(1) << 26)) // as the other folds (onnx_fold_ops.cpp): shapes, masks, small constants
            a.fail("ConstantOfShape of " + npyDimsText(dims) + " is too large to fold");
        checkHostAllocation(n * 8, a.where() + ": ConstantOfShape of " + npyDimsText(dims));
        if (value.isFloat)
            out.f.assign(size_t(n), value.f[0]);
        else
            out.i.assign(size_t(n), value.i[0]);
        return { out };
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
        const ConstTensor& x = need(in, 0, a);
        std::vector<int64_t> axes = axesFrom(in, 1, a, opset, 13);
        ConstTensor out = x;
        if (op == "Unsqueeze") {
            const int64_t r = int64_t(x.dims.size() + axes.size());
            for (int64_t& ax : axes)
                ax = normAxis(ax, r, a);
            std::sort(axes.begin(), axes.end());
            for (int64_t ax : axes)
                out.dims.insert(out.dims.begin() + ax, 1);
        } else {
            const int64_t r = int64_t(x.dims.size());
            std::vector<bool> drop(size_t(r), false);
            for (int64_t ax : axes)
                drop[size_t(normAxis(ax, r, a))] = true;
            out.dims.clear();
            for (int64_t k = 0; k < r; ++k) {
                const bool squeeze = axes.empty() ? x.dims[size_t(k)] == 1 : drop[size_t(k)];
                if (squeeze && x.dims[size_t(k)] != 1)
                    a.fail("Squeeze of a dimension of size " + std::to_string(x.dims[size_t(k)]));
                if (!squeeze)
                    out.dims.push_back(x.dims[size_t(k)]);
            }
        }
        return { out };
    }
    if (op == "Reshape") {
        const ConstTensor& x = need(in, 0, a);
        std::vector<int64_t> shape = opset >= 5 ? need(in, 1, a).ints(a.where() + ": shape")
                                                : a.getInts("shape").value_or(std::vector<int64_t> {});
        return { reshape(x, shape, a.getInt("allowzero", 0) != 0, a) };
    }
    if (op == "Slice") {
        const ConstTensor& x = need(in, 0, a);
        if (opset < 10)
            return { slice(x, a.getInts("starts").value_or(std::vector<int64_t> {}),
                a.getInts("ends").value_or(std::vector<int64_t> {}),
                a.getInts("axes").value_or(std::vector<int64_t> {}), {}, a) };
        const auto opt
            = [&](size_t k) { return k < in.size() && in[k] ? in[k]->ints(a.where()) : std::vector<int64_t> {}; };
        return { slice(x, need(in, 1, a).ints(a.where()), need(in, 2, a).ints(a.where()), opt(3), opt(4), a) };
    }
    a.fail("cannot fold " + op);
}

} // namespace convscope::onnx
