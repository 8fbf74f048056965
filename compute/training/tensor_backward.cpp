// The CPU backward of matmul and gather (issue 30; cpu_backward_ops.h), autograd's formulas, each input gradient summed
// in double: matmul's dA = dC · Bᵀ and dB = Aᵀ · dC per batch matrix, summed over the batch matrices a broadcast
// operand served; gather's dx is dy scattered back by the indices, a repeated index summing its outputs.
#include "compute/cpu/op_common.h"
#include "compute/error.h"
#include "compute/gather.h"
#include "compute/matmul.h"
#include "compute/training/cpu_backward_ops.h"

#include <vector>

namespace convscope::cpu::grad {

namespace {
    // dA (which 0) or dB (which 1) of C = A · B by the plan, into g of `count` elements.
    void matmulGrad(const Tensor& gy, const float* a, const float* b, const MatmulPlan& p, size_t which, Tensor& g)
    {
        detail::require(gy.numel() == p.batch * p.m * p.n, "matmul backward", "the gradient does not fit the output");
        std::vector<double> acc(size_t(g.numel()), 0.0);
        int64_t coord[kMaxMatmulBatchRank] = {};
        for (int64_t bi = 0; bi < p.batch; ++bi) {
            p.coordinates(bi, coord);
            for (int64_t i = 0; i < p.m; ++i)
                for (int64_t k = 0; k < p.k; ++k) {
                    if (which == 0) { // dA[i, k] += Σ_j dC[i, j] · B[k, j]
                        double s = 0;
                        for (int64_t j = 0; j < p.n; ++j)
                            s += double(gy.data()[p.c.at(coord, p.batchRank, i, j)])
                                * double(b[p.b.at(coord, p.batchRank, k, j)]);
                        acc[size_t(p.a.at(coord, p.batchRank, i, k))] += s;
                    } else { // dB[k, j] += A[i, k] · dC[i, j]
                        const double av = a[p.a.at(coord, p.batchRank, i, k)];
                        for (int64_t j = 0; j < p.n; ++j)
                            acc[size_t(p.b.at(coord, p.batchRank, k, j))]
                                += av * double(gy.data()[p.c.at(coord, p.batchRank, i, j)]);
                    }
                }
        }
        for (size_t e = 0; e < acc.size(); ++e)
            g.data()[e] = static_cast<float>(acc[e]);
    }
} // namespace

void matmulInput(const Tensor& gy, const Tensor& a, const Tensor& b, size_t which, Tensor& g)
{
    const MatmulPlan p = makeMatmulPlan(a.shape().dims(), false, b.shape().dims(), false, false);
    detail::require(
        g.numel() == (which == 0 ? a.numel() : b.numel()), "matmul backward", "the gradient does not fit the operand");
    matmulGrad(gy, a.data(), b.data(), p, which, g);
}

void matmulLayerInput(const Matmul& l, const LayerShape& s, const std::vector<const Tensor*>& ins,
    const Tensor* constant, size_t j, const Tensor& gy, Tensor& gx)
{
    const MatmulOperands o = matmulOperands(l, s.ins);
    if (o.constantSide >= 0 && !constant)
        throw Error("matmul backward: the layer's constant was not materialised");
    size_t next = 0;
    const float* a = o.constantSide == 0 ? constant->data() : ins.at(next++)->data();
    const float* b = o.constantSide == 1 ? constant->data() : ins.at(next++)->data();
    const size_t which = o.constantSide == 0 ? 1 : o.constantSide == 1 ? 0 : j;
    matmulGrad(gy, a, b, makeMatmulPlan(o.a, false, o.b, false, false), which, gx);
}

void gatherInput(const Gather& l, const Tensor& gy, Tensor& gx)
{
    const std::vector<int64_t> dims = gx.shape().dims();
    const std::vector<int64_t> idx = gatherWrappedIndices(l, dims);
    const GatherPlan p = makeGatherPlan(l, dims, false, false);
    detail::require(gy.numel() == p.count, "gather backward", "the gradient does not fit the output");
    std::vector<double> acc(size_t(gx.numel()), 0.0);
    for (int64_t i = 0; i < p.count; ++i) {
        int64_t o = 0, s = 0;
        p.locate(i, idx.data(), o, s);
        acc[size_t(s)] += gy.data()[o];
    }
    for (size_t e = 0; e < acc.size(); ++e)
        gx.data()[e] = static_cast<float>(acc[e]);
}

} // namespace convscope::cpu::grad
