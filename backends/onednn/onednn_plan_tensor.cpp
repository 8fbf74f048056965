// The oneDNN plans of the general tensor kinds of issue 30 (onednn_plan.h): matmul on oneDNN's matmul primitive, which
// broadcasts the batch axes itself; gather, which oneDNN 2.6 has no primitive for, as reorders of strided views.
#include "backends/onednn/onednn_plan.h"

#include "compute/error.h"
#include "compute/gather.h"
#include "compute/matmul.h"

#include <algorithm>

namespace convscope::onednn {

// torch.matmul as oneDNN's matmul: src [batch…, M, K], weights [batch…, K, N], dst [batch…, M, N] on plain strides,
// every descriptor of one rank (a 1-D operand is [1, K] or [K, 1], an operand of fewer batch axes is padded with 1s,
// which oneDNN broadcasts); the output's own dims lay out the same elements. Both inputs are bound per pass (SRC,
// WEIGHTS).
void planTensorKind(
    const Matmul& l, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan)
{
    if (!l.constant.empty())
        throw UnsupportedError("onednn: matmul by a constant operand is not planned here (the multi-input plan binds "
                               "activations only); it runs on the cpu.* selections");
    if (shape.ins.size() != 2)
        throw UnsupportedError("onednn: matmul needs the shapes of its two inputs");
    const std::vector<int64_t> a = shape.ins[0].dims(), b = shape.ins[1].dims();
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

void planTensorKind(
    const Gather& g, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan)
{
    const std::vector<int64_t> data = shape.in.dims();
    const int64_t axis = gatherAxis(g, int(data.size()));
    const std::vector<int64_t> idx = gatherWrappedIndices(g, data);
    int64_t outer = 1, inner = 1;
    for (size_t a = 0; a < data.size(); ++a) {
        if (int64_t(a) < axis)
            outer *= data[a];
        else if (int64_t(a) > axis)
            inner *= data[a];
    }
    const int64_t size = data[size_t(axis)], count = int64_t(idx.size());
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
    std::string listed;
    for (const Run& r : runs) {
        memory::desc from({ outer, r.count, inner }, act, Dims { size * inner, r.step * inner, 1 });
        from.data.offset0 = r.start * inner;
        memory::desc to({ outer, r.count, inner }, act, Dims { count * inner, inner, 1 });
        to.data.offset0 = r.at * inner;
        const dnnl::reorder::primitive_desc pd(eng, from, eng, to);
        plan.copies.push_back({ from, to, dnnl::reorder(pd) });
        if (plan.copies.size() <= 8)
            listed += std::string(listed.empty() ? "" : ", ") + std::to_string(r.start)
                + (r.count > 1 ? " step " + std::to_string(r.step) + " ×" + std::to_string(r.count) : "");
        else if (plan.copies.size() == 9)
            listed += ", …";
        if (plan.copiesNote.empty())
            plan.copiesNote = pd.impl_info_str();
    }
    plan.copiesNote = "gather as " + std::to_string(runs.size()) + " reorder" + (runs.size() == 1 ? "" : "s")
        + " of strided views (" + plan.copiesNote
        + "), one per run of evenly spaced indices (start step ×count): " + listed;
}

} // namespace convscope::onednn
