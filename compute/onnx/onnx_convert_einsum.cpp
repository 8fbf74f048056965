// ONNX Einsum (numpy.einsum's semantics) of one or two operands, turned at import into existing layer kinds (MaxViT's
// attention writes it; issue 30):
//   - the equation: letters a–z and A–Z, at most one "..." per term (its axes broadcast from the right; one operand's
//     "..." may be longer than the other's), with or without "->" (without: the output is the "..." axes, then the
//     letters that appear once, in ASCII order, as numpy does). A letter repeated inside one term (a diagonal or a
//     trace) and a letter of the output that no input has are refused naming the equation; so are more than two
//     operands and a label whose sizes differ between the operands unless one is 1 (numpy broadcasts that one).
//   - one operand: a reduce sum over the labels the output lacks, then a transpose to the output's order;
//   - two operands: each label is batch (both inputs and the output), contracted (both inputs, not the output),
//     left or right free (one input and the output); a label in one input only and not in the output is summed
//     first (reduce sum). A becomes [batch…, left…, contracted…] → [Bt, M, K] and B [batch…, contracted…, right…] →
//     [Bt, K, N] (transpose, reshape), one matmul gives [Bt, M, N], reshaped to [batch…, left…, right…] and transposed
//     to the output's order. Either operand may be a constant (matmul holds it; its transpose and sums are computed
//     here, in double, rounded once to float). A scalar result is held as [1], as the reduce kind holds one.
#include "compute/onnx/onnx_converters.h"

#include "compute/error.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace convscope::onnx::convert {

namespace {

    constexpr int kEllipsis = 1000; // label of the k-th "..." axis from the right: kEllipsis + k

    struct Operand {
        std::string tensor; // the activation (empty for a constant)
        ConstTensor c; // the constant, when tensor is empty
        std::vector<int> labels;
        std::vector<int64_t> dims;
    };

    std::string labelText(int l)
    {
        return l >= kEllipsis ? "…" + std::to_string(l - kEllipsis) : std::string(1, char(l));
    }

    // One term's labels, its "..." expanded to `rank` axes (ellipsisAxes: how many it stands for; -1 when none).
    std::vector<int> parseTerm(
        const std::string& t, int64_t rank, int64_t& ellipsisAxes, const std::string& why, const Attributes& a)
    {
        std::vector<int> letters;
        int64_t at = -1; // where the "..." stands among the letters
        for (size_t k = 0; k < t.size(); ++k) {
            const char ch = t[k];
            if (ch == '.') {
                if (t.compare(k, 3, "...") != 0 || at >= 0)
                    a.fail(why + ": \"" + t + "\" has a '.' that is not one \"...\"");
                at = int64_t(letters.size());
                k += 2;
            } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
                if (std::find(letters.begin(), letters.end(), int(ch)) != letters.end())
                    a.fail(why + ": \"" + t + "\" repeats '" + std::string(1, ch)
                        + "' (a diagonal or trace: ConvScope's Einsum takes each label once per term)");
                letters.push_back(ch);
            } else
                a.fail(why + ": \"" + t + "\" holds '" + std::string(1, ch) + "' (labels are a–z, A–Z)");
        }
        ellipsisAxes = -1;
        if (rank < 0) { // the output: its "..." is filled in by the caller
            if (at >= 0)
                letters.insert(letters.begin() + at, -1);
            return letters;
        }
        if (at < 0 ? int64_t(letters.size()) != rank : int64_t(letters.size()) > rank)
            a.fail(why + ": \"" + t + "\" names " + std::to_string(letters.size()) + " axes of an operand of "
                + std::to_string(rank));
        if (at < 0)
            return letters;
        ellipsisAxes = rank - int64_t(letters.size());
        std::vector<int> out(letters.begin(), letters.begin() + at);
        for (int64_t k = ellipsisAxes; k-- > 0;)
            out.push_back(kEllipsis + int(k));
        out.insert(out.end(), letters.begin() + at, letters.end());
        return out;
    }

    int64_t product(const std::vector<int64_t>& d)
    {
        return std::accumulate(d.begin(), d.end(), int64_t(1), std::multiplies<>());
    }

    struct Builder {
        GraphBuilder& g;
        const ::onnx::NodeProto& n;
        const std::string& name;
        const Attributes& a;
        int steps = 0;

        // A layer of `spec` on op's activation, op now its output.
        void layer(Operand& op, const std::string& role, LayerSpec spec)
        {
            const std::string out = n.output(0) + "#" + role;
            g.addLayer(name + "_" + role, std::move(spec), { op.tensor }, out, a);
            op.tensor = out;
            ++steps;
        }

        // op with only `keep` (in that order) of its labels, the others summed.
        void keepOnly(Operand& op, const std::vector<int>& keep, const std::string& side)
        {
            if (keep == op.labels)
                return;
            std::vector<int64_t> kept;
            for (int l : keep)
                kept.push_back(op.dims[size_t(std::find(op.labels.begin(), op.labels.end(), l) - op.labels.begin())]);
            if (op.tensor.empty()) { // a constant: summed and permuted here, in double
                std::vector<int64_t> outStride(op.labels.size(), 0);
                int64_t s = 1;
                for (size_t k = keep.size(); k-- > 0;) {
                    outStride[size_t(std::find(op.labels.begin(), op.labels.end(), keep[k]) - op.labels.begin())] = s;
                    s *= kept[k];
                }
                std::vector<double> acc(size_t(product(kept)), 0.0);
                std::vector<int64_t> pos(op.dims.size(), 0);
                for (size_t e = 0; e < size_t(product(op.dims)); ++e) {
                    int64_t o = 0;
                    for (size_t k = 0; k < pos.size(); ++k)
                        o += pos[k] * outStride[k];
                    acc[size_t(o)] += op.c.at(e);
                    for (size_t k = pos.size(); k-- > 0;) {
                        if (++pos[k] < op.dims[k])
                            break;
                        pos[k] = 0;
                    }
                }
                op.c.f.assign(acc.begin(), acc.end());
                op.c.i.clear();
                op.c.isFloat = true;
            } else {
                std::vector<int> remaining;
                Reduce r;
                r.op = Reduce::Op::Sum;
                for (size_t k = 0; k < op.labels.size(); ++k)
                    if (std::find(keep.begin(), keep.end(), op.labels[k]) == keep.end())
                        r.dim.push_back(int64_t(k));
                    else
                        remaining.push_back(op.labels[k]);
                if (!r.dim.empty())
                    layer(op, side + "_sum", r);
                if (remaining != keep && keep.size() > 1) {
                    Transpose t;
                    t.dims.clear();
                    for (int l : keep)
                        t.dims.push_back(int64_t(std::find(remaining.begin(), remaining.end(), l) - remaining.begin()));
                    layer(op, side + "_perm", t);
                }
            }
            op.labels = keep;
            op.dims = kept;
        }

        void reshapeTo(Operand& op, const std::vector<int64_t>& dims, const std::string& role)
        {
            std::vector<int64_t> held = op.dims.empty() ? std::vector<int64_t> { 1 } : op.dims;
            if (!op.tensor.empty() && held != dims)
                layer(op, role, Reshape { dims });
            op.dims = dims;
        }
    };

} // namespace

void einsum(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a)
{
    onlyFirstOutput(g, n, a);
    std::string eq;
    for (char ch : a.getString("equation", ""))
        if (ch != ' ')
            eq += ch;
    const std::string why = "Einsum \"" + a.getString("equation", "") + "\"";
    if (n.input_size() < 1 || n.input_size() > 2)
        refuse(n, a, why + " of " + std::to_string(n.input_size()) + " operands (ConvScope takes 1 or 2)");
    std::vector<Operand> ops(size_t(n.input_size()));
    for (size_t k = 0; k < ops.size(); ++k) {
        const std::string& in = n.input(int(k));
        if (g.isConstant(in)) {
            ops[k].c = g.constant(in, a, "operand " + std::to_string(k));
            ops[k].dims = ops[k].c.dims;
            if (ops[k].c.numel() == 0)
                refuse(n, a,
                    "Einsum \"" + a.getString("equation", "") + "\" of the empty constant " + npyDimsText(ops[k].dims)
                        + " (ConvScope's tensors have no empty axis)");
        } else {
            ops[k].tensor = in;
            ops[k].dims = g.activation(in, a).shape.dims();
        }
    }
    if (std::all_of(ops.begin(), ops.end(), [](const Operand& o) { return o.tensor.empty(); }))
        refuse(n, a, why + " of constants only (not folded)");
    // The terms.
    const size_t arrow = eq.find("->");
    if (arrow != std::string::npos && eq.find("->", arrow + 1) != std::string::npos)
        a.fail(why + " has more than one \"->\"");
    const std::string lhs = eq.substr(0, arrow);
    std::vector<std::string> terms;
    for (size_t from = 0;;) {
        const size_t comma = lhs.find(',', from);
        terms.push_back(lhs.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
        if (comma == std::string::npos)
            break;
        from = comma + 1;
    }
    if (terms.size() != ops.size())
        a.fail(why + " has " + std::to_string(terms.size()) + " input terms for " + std::to_string(ops.size())
            + " operands");
    int64_t maxEllipsis = 0;
    std::map<int, int64_t> sizes, count;
    for (size_t k = 0; k < ops.size(); ++k) {
        int64_t e = 0;
        ops[k].labels = parseTerm(terms[k], int64_t(ops[k].dims.size()), e, why, a);
        maxEllipsis = std::max(maxEllipsis, e);
        for (size_t j = 0; j < ops[k].labels.size(); ++j) {
            const int l = ops[k].labels[j];
            const int64_t d = ops[k].dims[j];
            if (sizes.count(l) && sizes[l] != d && sizes[l] != 1 && d != 1)
                a.fail(why + ": label " + labelText(l) + " is " + std::to_string(sizes[l]) + " in one operand and "
                    + std::to_string(d) + " in the other (numpy broadcasts only a size of 1)");
            sizes[l] = std::max(sizes.count(l) ? sizes[l] : 0, d);
            ++count[l];
        }
    }
    const auto has = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
    std::vector<int> out;
    if (arrow == std::string::npos) { // numpy's implicit output: the "..." axes, then the labels seen once, sorted
        for (int64_t k = maxEllipsis; k-- > 0;)
            out.push_back(kEllipsis + int(k));
        for (const auto& [l, c] : count)
            if (l < kEllipsis && c == 1)
                out.push_back(l);
    } else {
        int64_t unused = 0;
        const std::vector<int> terms = parseTerm(eq.substr(arrow + 2), -1, unused, why, a);
        if (maxEllipsis > 0 && !has(terms, -1))
            a.fail(why + ": the inputs' \"...\" stands for " + std::to_string(maxEllipsis)
                + " axes that the output does not name (numpy refuses it too)");
        for (int l : terms)
            if (l == -1)
                for (int64_t k = maxEllipsis; k-- > 0;)
                    out.push_back(kEllipsis + int(k));
            else if (!sizes.count(l))
                a.fail(why + ": the output's '" + labelText(l) + "' is in no input");
            else
                out.push_back(l);
    }
    if (out.size() > 6)
        refuse(n, a, why + ": an output of " + std::to_string(out.size()) + " axes (ConvScope's tensors have 1 to 6)");
    // numpy's broadcast of a label of size 1 in one operand against n in the other: that axis is the operand's own,
    // summed away (a sum over one element: exact), so the label is the other operand's alone.
    int privateLabel = 2 * kEllipsis;
    for (Operand& o : ops)
        for (size_t j = 0; j < o.labels.size(); ++j)
            if (o.dims[j] == 1 && sizes[o.labels[j]] > 1) {
                o.labels[j] = privateLabel++;
                sizes[o.labels[j]] = 1;
            }
    Builder b { g, n, name, a };
    std::vector<int64_t> outDims;
    for (int l : out)
        outDims.push_back(sizes[l]);
    if (ops.size() == 1) {
        Operand& x = ops[0];
        b.keepOnly(x, out, "a");
        if (b.steps == 0)
            return g.addLayer(name, Identity {}, { x.tensor }, n.output(0), a);
        g.activations[n.output(0)] = g.activation(x.tensor, a);
        return;
    }
    Operand &x = ops[0], &y = ops[1];
    std::vector<int> batch, contracted, left, right;
    for (int l : x.labels)
        if (has(y.labels, l))
            (has(out, l) ? batch : contracted).push_back(l);
        else if (has(out, l))
            left.push_back(l);
    for (int l : y.labels)
        if (!has(x.labels, l) && has(out, l))
            right.push_back(l);
    // Batch labels in the output's order (so that the last transpose is often none), free ones too.
    const auto byOutput = [&](std::vector<int>& v) {
        std::stable_sort(v.begin(), v.end(),
            [&](int p, int q) { return std::find(out.begin(), out.end(), p) < std::find(out.begin(), out.end(), q); });
    };
    byOutput(batch);
    byOutput(left);
    byOutput(right);
    const auto dimsOf = [&](const std::vector<int>& v) {
        std::vector<int64_t> d;
        for (int l : v)
            d.push_back(sizes[l]);
        return d;
    };
    const int64_t bt = product(dimsOf(batch)), m = product(dimsOf(left)), k = product(dimsOf(contracted)),
                  nn = product(dimsOf(right));
    std::vector<int> xOrder = batch, yOrder = batch;
    xOrder.insert(xOrder.end(), left.begin(), left.end());
    xOrder.insert(xOrder.end(), contracted.begin(), contracted.end());
    yOrder.insert(yOrder.end(), contracted.begin(), contracted.end());
    yOrder.insert(yOrder.end(), right.begin(), right.end());
    b.keepOnly(x, xOrder, "a");
    b.keepOnly(y, yOrder, "b");
    b.reshapeTo(x, { bt, m, k }, "a_rows");
    b.reshapeTo(y, { bt, k, nn }, "b_rows");
    Matmul mm;
    std::vector<std::string> inputs;
    for (Operand* o : { &x, &y })
        if (o->tensor.empty()) {
            if (!o->c.isFloat)
                a.fail(why + ": a constant operand must be float");
            mm.constant = o->c.f;
            mm.constant_shape = o->dims;
            mm.constant_first = o == &x;
        } else
            inputs.push_back(o->tensor);
    const std::string product3 = n.output(0) + "#product";
    g.addLayer(name, mm, inputs, product3, a);
    Operand r;
    r.tensor = product3;
    r.dims = { bt, m, nn };
    r.labels = batch;
    r.labels.insert(r.labels.end(), left.begin(), left.end());
    r.labels.insert(r.labels.end(), right.begin(), right.end());
    b.reshapeTo(r, r.labels.empty() ? std::vector<int64_t> { 1 } : dimsOf(r.labels), "unrows");
    r.dims = dimsOf(r.labels);
    b.keepOnly(r, out, "out");
    g.activations[n.output(0)] = g.activation(r.tensor, a);
}

} // namespace convscope::onnx::convert
