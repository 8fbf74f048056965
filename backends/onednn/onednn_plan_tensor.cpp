// The oneDNN plans of the general tensor kinds of issue 30 (onednn_plan.h): matmul on oneDNN's matmul primitive, which
// broadcasts the batch axes itself; gather, which oneDNN has no primitive for, refused with the reason.
#include "backends/onednn/onednn_plan.h"

#include "compute/error.h"
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

void planTensorKind(const Gather&, const LayerShape&, memory::data_type, const dnnl::engine&, Plan&)
{
    throw UnsupportedError("onednn: gather has no oneDNN primitive (oneDNN 2.6 has no gather or index_select; a "
                           "reorder per index would be one primitive per slice); it runs on the cpu.* selections");
}

} // namespace convscope::onednn
