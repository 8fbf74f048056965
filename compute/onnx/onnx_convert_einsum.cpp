// ONNX Einsum (numpy.einsum's semantics) of any number of operands, turned at import into existing layer kinds
// (MaxViT's attention writes it; issue 30):
//   - the equation: letters a–z and A–Z, at most one "..." per term (its axes broadcast from the right; one operand's
//     "..." may be longer than another's), with or without "->" (without: the output is the "..." axes, then the
//     letters that appear once in the whole equation, in ASCII order, as numpy does). A letter repeated in the output
//     term and a letter of the output that no input has are refused naming the equation; so is a label whose sizes
//     differ between the operands unless one is 1 (numpy broadcasts that one), and a label repeated in one input
//     term whose axes there differ in size.
//   - a letter repeated inside one input term takes that operand's diagonal (numpy's "ii->i", the trace "ii->"):
//     the operand's axes grouped by label (a transpose when a label's axes are not already together), each group
//     merged into one axis of n^r elements (reshape) and a gather of 0, s, 2s, … (s = 1 + n + … + n^(r−1)) along
//     it, so that afterwards the operand names each label once; then the operand goes on as any other.
//   - one operand: a reduce sum over the labels the output lacks, then a transpose to the output's order;
//   - two or more operands: contracted left to right, pairwise (operand 0 with 1, then that result with 2, …), each
//     intermediate keeping exactly the labels that a later operand or the output still names. In each pair a label is
//     batch (both and still needed), contracted (both, not needed), left or right free (one of them, needed); a label
//     only one of them has and nothing needs is summed first (reduce sum). A becomes [batch…, left…, contracted…] →
//     [Bt, M, K] and B [batch…, contracted…, right…] → [Bt, K, N] (transpose, reshape), one matmul gives [Bt, M, N],
//     reshaped to [batch…, left…, right…]; the last pair's is transposed to the output's order. Either operand of a
//     pair may be a constant (matmul holds it; its diagonal, transpose and sums are computed here, in double, rounded
//     once to float); a pair of two constants is contracted here likewise. A scalar result is held as [1], as the
//     reduce kind holds one; an intermediate of more than 6 axes is refused.
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

    // One term's labels, its "..." expanded to `rank` axes (ellipsisAxes: how many it stands for; -1 when none). An
    // input term may repeat a letter (a diagonal); the output (rank −1) may not.
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
                if (rank < 0 && std::find(letters.begin(), letters.end(), int(ch)) != letters.end())
                    a.fail(
                        why + ": the output \"" + t + "\" repeats '" + std::string(1, ch) + "' (numpy refuses it too)");
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

    // Row-major strides of d.
    std::vector<int64_t> stridesOf(const std::vector<int64_t>& d)
    {
        std::vector<int64_t> s(d.size(), 1);
        for (size_t k = d.size(); k-- > 1;)
            s[k - 1] = s[k] * d[k];
        return s;
    }

    bool has(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

    // Steps to the next index of pos over dims (the last fastest), moving each offset by its stride along the axis that
    // advances; false after the last index.
    bool advance(std::vector<int64_t>& pos, const std::vector<int64_t>& dims,
        std::vector<std::pair<int64_t*, const std::vector<int64_t>*>> offsets)
    {
        for (size_t k = pos.size(); k-- > 0;) {
            for (auto& [o, st] : offsets)
                *o += (*st)[k];
            if (++pos[k] < dims[k])
                return true;
            for (auto& [o, st] : offsets)
                *o -= (*st)[k] * dims[k];
            pos[k] = 0;
        }
        return false;
    }

    // Operand k's name in its layers' names: a, b, then op2, op3, ….
    std::string sideName(size_t k) { return k == 0 ? "a" : k == 1 ? "b" : "op" + std::to_string(k); }

    struct Builder {
        GraphBuilder& g;
        const ::onnx::NodeProto& n;
        const std::string& name;
        const Attributes& a;
        const std::string& why;
        std::map<int, int64_t>& sizes;
        int steps = 0;

        std::vector<int64_t> dimsOf(const std::vector<int>& labels) const
        {
            std::vector<int64_t> d;
            for (int l : labels)
                d.push_back(sizes.at(l));
            return d;
        }

        // op's diagonal along each label it names more than once (numpy's "ii->i"): afterwards it names each label
        // once, in the order of their first axes.
        void diagonal(Operand& op, const std::string& side)
        {
            std::vector<int> distinct;
            std::vector<std::vector<size_t>> axes; // each distinct label's axes
            for (size_t k = 0; k < op.labels.size(); ++k) {
                const auto at = std::find(distinct.begin(), distinct.end(), op.labels[k]);
                if (at == distinct.end()) {
                    distinct.push_back(op.labels[k]);
                    axes.push_back({ k });
                } else
                    axes[size_t(at - distinct.begin())].push_back(k);
            }
            if (distinct.size() == op.labels.size())
                return;
            std::vector<int64_t> dims;
            for (const auto& ax : axes)
                dims.push_back(op.dims[ax[0]]);
            if (op.tensor.empty()) { // a constant: its diagonal taken here (exact)
                const std::vector<int64_t> st = stridesOf(op.dims);
                std::vector<int64_t> step(distinct.size(), 0); // the source's stride along each kept label
                for (size_t d = 0; d < axes.size(); ++d)
                    for (size_t k : axes[d])
                        step[d] += st[k];
                ConstTensor c;
                c.dims = dims;
                c.isFloat = op.c.isFloat;
                std::vector<int64_t> pos(dims.size(), 0);
                int64_t src = 0;
                do {
                    if (c.isFloat)
                        c.f.push_back(op.c.f[size_t(src)]);
                    else
                        c.i.push_back(op.c.i[size_t(src)]);
                } while (advance(pos, dims, { { &src, &step } }));
                op.c = std::move(c);
            } else {
                Transpose t;
                t.dims.clear();
                std::vector<int64_t> merged;
                for (const auto& ax : axes) {
                    int64_t m = 1;
                    for (size_t k : ax) {
                        t.dims.push_back(int64_t(k));
                        m *= op.dims[k];
                    }
                    merged.push_back(m);
                }
                if (!std::is_sorted(t.dims.begin(), t.dims.end()))
                    layer(op, side + "_diag_perm", t);
                layer(op, side + "_diag_rows", Reshape { merged });
                for (size_t d = 0; d < axes.size(); ++d) {
                    if (axes[d].size() < 2)
                        continue;
                    int64_t stride = 0; // 1 + n + … + n^(r−1): from (k, k, …, k) to (k + 1, k + 1, …, k + 1)
                    for (size_t r = 0, p = 1; r < axes[d].size(); ++r, p *= size_t(dims[d]))
                        stride += int64_t(p);
                    Gather diag;
                    diag.axis = int64_t(d);
                    diag.indices.clear();
                    for (int64_t k = 0; k < dims[d]; ++k)
                        diag.indices.push_back(k * stride);
                    diag.indices_shape = { dims[d] };
                    layer(op, side + "_diag_" + labelText(distinct[d]), diag);
                }
            }
            op.labels = distinct;
            op.dims = dims;
        }

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

        // Two constants contracted here, in double, rounded once to float: the result names `keep`.
        Operand foldPair(const Operand& x, const Operand& y, const std::vector<int>& keep)
        {
            std::vector<int> all = x.labels;
            for (int l : y.labels)
                if (!has(all, l))
                    all.push_back(l);
            const std::vector<int64_t> dims = dimsOf(all);
            if (product(dims) > (int64_t(1) << 30))
                refuse(n, a,
                    why + ": a product of two constants over " + npyDimsText(dims) + " (too large to fold at import)");
            const auto stepsAlongAll = [&](const std::vector<int>& labels, const std::vector<int64_t>& d) {
                const std::vector<int64_t> st = stridesOf(d);
                std::vector<int64_t> s(all.size(), 0);
                for (size_t k = 0; k < labels.size(); ++k)
                    s[size_t(std::find(all.begin(), all.end(), labels[k]) - all.begin())] = st[k];
                return s;
            };
            Operand r;
            r.labels = keep;
            r.dims = dimsOf(keep);
            const std::vector<int64_t> sx = stepsAlongAll(x.labels, x.dims), sy = stepsAlongAll(y.labels, y.dims),
                                       so = stepsAlongAll(keep, r.dims);
            std::vector<double> acc(size_t(product(r.dims)), 0.0);
            std::vector<int64_t> pos(all.size(), 0);
            int64_t ox = 0, oy = 0, oo = 0;
            do {
                acc[size_t(oo)] += x.c.at(size_t(ox)) * y.c.at(size_t(oy));
            } while (advance(pos, dims, { { &ox, &sx }, { &oy, &sy }, { &oo, &so } }));
            r.c.dims = r.dims;
            r.c.f.assign(acc.begin(), acc.end());
            return r;
        }

        // x (the product of operands 0 to k − 1) and y (operand k) contracted, their product summed over the labels
        // `needed` lacks: the result names the labels of `needed` that x or y has, as [batch…, left…, right…], each
        // group in `out`'s order where out names them. The last step's matmul is named after the node, an earlier
        // one's "<node>_product<k>".
        Operand contract(
            Operand& x, Operand& y, size_t step, bool last, const std::vector<int>& needed, const std::vector<int>& out)
        {
            const std::string xs = step == 1 ? "a" : "t" + std::to_string(step - 1), ys = sideName(step),
                              suffix = last ? "" : std::to_string(step);
            std::vector<int> batch, contracted, left, right;
            for (int l : x.labels)
                if (has(y.labels, l))
                    (has(needed, l) ? batch : contracted).push_back(l);
                else if (has(needed, l))
                    left.push_back(l);
            for (int l : y.labels)
                if (!has(x.labels, l) && has(needed, l))
                    right.push_back(l);
            // Batch labels in the output's order (so that the last transpose is often none), free ones too.
            for (std::vector<int>* v : { &batch, &left, &right })
                std::stable_sort(v->begin(), v->end(), [&](int p, int q) {
                    return std::find(out.begin(), out.end(), p) < std::find(out.begin(), out.end(), q);
                });
            std::vector<int> labels = batch;
            labels.insert(labels.end(), left.begin(), left.end());
            labels.insert(labels.end(), right.begin(), right.end());
            if (labels.size() > 6)
                refuse(n, a,
                    why + ": the product of operands 0 to " + std::to_string(step) + " has "
                        + std::to_string(labels.size()) + " axes (ConvScope's tensors have 1 to 6)");
            if (x.tensor.empty() && y.tensor.empty())
                return foldPair(x, y, labels);
            const int64_t bt = product(dimsOf(batch)), m = product(dimsOf(left)), k = product(dimsOf(contracted)),
                          nn = product(dimsOf(right));
            std::vector<int> xOrder = batch, yOrder = batch;
            xOrder.insert(xOrder.end(), left.begin(), left.end());
            xOrder.insert(xOrder.end(), contracted.begin(), contracted.end());
            yOrder.insert(yOrder.end(), contracted.begin(), contracted.end());
            yOrder.insert(yOrder.end(), right.begin(), right.end());
            keepOnly(x, xOrder, xs);
            keepOnly(y, yOrder, ys);
            reshapeTo(x, { bt, m, k }, xs + "_rows");
            reshapeTo(y, { bt, k, nn }, ys + "_rows");
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
            Operand r;
            r.tensor = n.output(0) + "#product" + suffix;
            g.addLayer(suffix.empty() ? name : name + "_product" + suffix, mm, inputs, r.tensor, a);
            r.dims = { bt, m, nn };
            r.labels = labels;
            reshapeTo(r, labels.empty() ? std::vector<int64_t> { 1 } : dimsOf(labels), "unrows" + suffix);
            r.dims = dimsOf(labels);
            return r;
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
    if (n.input_size() < 1)
        a.fail(why + " has no operand");
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
        std::map<int, int64_t> own; // this operand's sizes: a repeated label's axes must agree exactly
        for (size_t j = 0; j < ops[k].labels.size(); ++j) {
            const int l = ops[k].labels[j];
            const int64_t d = ops[k].dims[j];
            if (own.count(l) && own[l] != d)
                a.fail(why + ": label " + labelText(l) + " is repeated in operand " + std::to_string(k) + " with sizes "
                    + std::to_string(own[l]) + " and " + std::to_string(d)
                    + " (a diagonal needs one size; numpy refuses it too)");
            own[l] = d;
            ++count[l];
        }
        for (const auto& [l, d] : own) {
            if (sizes.count(l) && sizes[l] != d && sizes[l] != 1 && d != 1)
                a.fail(why + ": label " + labelText(l) + " is " + std::to_string(sizes[l]) + " in one operand and "
                    + std::to_string(d) + " in operand " + std::to_string(k) + " (numpy broadcasts only a size of 1)");
            sizes[l] = std::max(sizes.count(l) ? sizes[l] : 0, d);
        }
    }
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
    Builder b { g, n, name, a, why, sizes };
    for (size_t k = 0; k < ops.size(); ++k)
        b.diagonal(ops[k], sideName(k));
    // numpy's broadcast of a label of size 1 in one operand against n in another: that axis is the operand's own,
    // summed away (a sum over one element: exact), so the label is the others' alone.
    int privateLabel = 2 * kEllipsis;
    for (Operand& o : ops)
        for (size_t j = 0; j < o.labels.size(); ++j)
            if (o.dims[j] == 1 && sizes[o.labels[j]] > 1) {
                o.labels[j] = privateLabel++;
                sizes[o.labels[j]] = 1;
            }
    Operand r = std::move(ops[0]);
    for (size_t k = 1; k < ops.size(); ++k) { // left to right: the product so far with operand k
        const bool last = k + 1 == ops.size();
        std::vector<int> needed = out;
        for (size_t j = k + 1; j < ops.size(); ++j)
            for (int l : ops[j].labels)
                if (!has(needed, l))
                    needed.push_back(l);
        r = b.contract(r, ops[k], k, last, needed, out);
    }
    b.keepOnly(r, out, ops.size() == 1 ? "a" : "out");
    if (ops.size() == 1 && b.steps == 0)
        return g.addLayer(name, Identity {}, { r.tensor }, n.output(0), a);
    g.activations[n.output(0)] = g.activation(r.tensor, a);
}

} // namespace convscope::onnx::convert
