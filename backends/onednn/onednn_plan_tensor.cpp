// The oneDNN plans of the general tensor kinds of issue 30 (onednn_plan.h): matmul on oneDNN's matmul primitive, which
// broadcasts the batch axes itself; gather and slice, which oneDNN 2.6 has no primitive for, as reorders of strided
// views.
#include "backends/onednn/onednn_plan.h"

#include "compute/error.h"
#include "compute/gather.h"
#include "compute/matmul.h"

#include <algorithm>

namespace convscope::onednn {

// torch.matmul as oneDNN's matmul: src [batch…, M, K], weights [batch…, K, N], dst [batch…, M, N] on plain strides,
// every descriptor of one rank (a 1-D operand is [1, K] or [K, 1], an operand of fewer batch axes is padded with 1s,
// which oneDNN broadcasts); the output's own dims lay out the same elements. The inputs are bound per pass (SRC,
// WEIGHTS); a constant operand (compute/matmul.h's matmulOperands) is the other argument, converted to the
// activations' type once when the session prepares (Plan::constant).
void planTensorKind(
    const Matmul& l, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan)
{
    const MatmulOperands operands = matmulOperands(l, shape.ins.empty() ? std::vector<Shape> { shape.in } : shape.ins);
    const std::vector<int64_t>&a = operands.a, &b = operands.b;
    const MatmulPlan p = makeMatmulPlan(a, false, b, false, false);
    const auto padded = [&](const std::vector<int64_t>& d, int64_t rows, int64_t cols) {
        Dims out(size_t(p.batchRank), 1);
        const int own = std::max(int(d.size()) - 2, 0);
        for (int k = 0; k < own; ++k)
            out[size_t(p.batchRank - own + k)] = d[size_t(k)];
        out.push_back(rows);
        out.push_back(cols);
        return out;
    };
    Dims dst(p.batchDims, p.batchDims + p.batchRank);
    dst.push_back(p.m);
    dst.push_back(p.n);
    const Dims src = padded(a, p.m, p.k), wei = padded(b, p.k, p.n);
    const memory::desc srcD(src, act, plainStrides(src)), weiD(wei, act, plainStrides(wei)),
        dstD(dst, act, plainStrides(dst));
    const dnnl::matmul::desc d(srcD, weiD, dstD);
    const dnnl::matmul::primitive_desc pd(d, eng);
    plan.multi = true;
    plan.multiArgs = { DNNL_ARG_SRC, DNNL_ARG_WEIGHTS };
    plan.multiSrcs = { srcD, weiD };
    if (!l.constant.empty()) { // the input is the other operand
        const bool first = operands.constantSide == 0;
        plan.constant = Plan::Constant { first ? DNNL_ARG_SRC : DNNL_ARG_WEIGHTS, first ? srcD : weiD, &l.constant };
        plan.multiArgs = { first ? DNNL_ARG_WEIGHTS : DNNL_ARG_SRC };
        plan.multiSrcs = { first ? weiD : srcD };
    }
    plan.multiDst = dstD;
    plan.multiPrimitive = dnnl::matmul(pd);
    plan.multiImpl = pd.impl_info_str();
}

// gather along one axis as copies of slices: the input seen as [outer, size, inner] around the axis, the output as
// [outer, K, inner] (K indices, flattened: the indices' axes are adjacent in the output). The wrapped indices
// (compute/gather.h: negative ones already counted from the end) split, greedily from the front, into runs of
// evenly spaced values (start, step ≥ 0, count); each run is one reorder from the input viewed with the axis's
// stride times the step, offset to the run's start, into the output's contiguous block of count positions at the
// run's place. A stepped slice (Swin's patch merging, step 2) is one run, a repeated index a run of step 0; oneDNN
// takes no negative strides, so a descending stretch is runs of one, and no strides that could overlap, so a run
// ends before count × step passes the axis's size. More than kMaxGatherRuns runs are refused (one primitive each).
constexpr size_t kMaxGatherRuns = 64;

namespace {
    struct Axis {
        int64_t outer = 1, size = 1, inner = 1; // the tensor as [outer, size, inner] around the axis
    };
    Axis around(const std::vector<int64_t>& dims, int64_t axis)
    {
        Axis v;
        for (size_t a = 0; a < dims.size(); ++a)
            (int64_t(a) < axis ? v.outer : int64_t(a) > axis ? v.inner : v.size) *= dims[a];
        return v;
    }
    // One reorder: `count` positions of the input's axis from `start`, `step` apart, into the output's positions
    // `at`… of `total`. Returns oneDNN's implementation name.
    std::string addCopy(Plan& plan, const Axis& in, int64_t total, int64_t at, int64_t start, int64_t step,
        int64_t count, memory::data_type act, const dnnl::engine& eng)
    {
        memory::desc from({ in.outer, count, in.inner }, act, Dims { in.size * in.inner, step * in.inner, 1 });
        from.data.offset0 = start * in.inner;
        memory::desc to({ in.outer, count, in.inner }, act, Dims { total * in.inner, in.inner, 1 });
        to.data.offset0 = at * in.inner;
        const dnnl::reorder::primitive_desc pd(eng, from, eng, to);
        plan.copies.push_back({ from, to, dnnl::reorder(pd) });
        return pd.impl_info_str();
    }
} // namespace

void planTensorKind(
    const Gather& g, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan)
{
    const std::vector<int64_t> data = shape.in.dims();
    const int64_t axis = gatherAxis(g, int(data.size()));
    const std::vector<int64_t> idx = gatherWrappedIndices(g, data);
    const Axis view = around(data, axis);
    const int64_t size = view.size, count = int64_t(idx.size());
    struct Run {
        int64_t at, start, step, count;
    };
    std::vector<Run> runs;
    for (int64_t k = 0; k < count; k += runs.back().count) {
        Run r { k, idx[size_t(k)], 0, 1 };
        if (k + 1 < count && idx[size_t(k + 1)] >= idx[size_t(k)]) {
            r.step = idx[size_t(k + 1)] - idx[size_t(k)];
            // oneDNN takes strides that cannot overlap: the outer stride (size) must cover count × step.
            while (k + r.count < count && idx[size_t(k + r.count)] - idx[size_t(k + r.count - 1)] == r.step
                && (r.count + 1) * r.step <= size)
                ++r.count;
        }
        runs.push_back(r);
    }
    if (runs.size() > kMaxGatherRuns)
        throw UnsupportedError("onednn: gather of these " + std::to_string(count) + " indices is "
            + std::to_string(runs.size()) + " runs of evenly spaced indices, one reorder each; more than "
            + std::to_string(kMaxGatherRuns)
            + " are refused (too many primitives for one layer); it runs on the "
              "cpu.* selections");
    std::string listed, impl;
    for (const Run& r : runs) {
        impl = addCopy(plan, view, count, r.at, r.start, r.step, r.count, act, eng);
        if (plan.copies.size() <= 8)
            listed += std::string(listed.empty() ? "" : ", ") + std::to_string(r.start)
                + (r.count > 1 ? " step " + std::to_string(r.step) + " ×" + std::to_string(r.count) : "");
        else if (plan.copies.size() == 9)
            listed += ", …";
    }
    plan.copiesNote = "gather as " + std::to_string(runs.size()) + " reorder" + (runs.size() == 1 ? "" : "s")
        + " of strided views (" + impl + "), one per run of evenly spaced indices (start step ×count): " + listed;
}

// x.narrow(dim, start, end − start) as one reorder: the gather of one run of step 1.
void planTensorKind(const Slice& l, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan)
{
    const std::vector<int64_t> dims = shape.in.dims();
    if (l.dim < 0 || l.dim >= int64_t(dims.size()) || l.start < 0 || l.end > dims[size_t(l.dim)] || l.start >= l.end)
        throw Error("internal error: onednn: slice outside its input (shape inference checks it)");
    const std::string impl
        = addCopy(plan, around(dims, l.dim), l.end - l.start, 0, l.start, 1, l.end - l.start, act, eng);
    plan.copiesNote = "slice as 1 reorder of a strided view (" + impl + ")";
}

} // namespace convscope::onednn
