// The CPU backward of matmul and gather (issue 30; cpu_backward_ops.h), autograd's formulas, each input gradient summed
// in double: matmul's dA = dC · Bᵀ and dB = Aᵀ · dC per batch matrix, summed over the batch matrices a broadcast
// operand served; gather's dx is dy scattered back by the indices, a repeated index summing its outputs.
#include "compute/cpu/op_common.h"
#include "compute/gather.h"
#include "compute/matmul.h"
#include "compute/training/cpu_backward_ops.h"

#include <vector>

namespace convscope::cpu::grad {

void matmulInput(const Tensor& gy, const Tensor& a, const Tensor& b, size_t which, Tensor& g)
{
    const MatmulPlan p = makeMatmulPlan(a.shape().dims(), false, b.shape().dims(), false, false);
    detail::require(gy.numel() == p.batch * p.m * p.n && g.numel() == (which == 0 ? a.numel() : b.numel()),
        "matmul backward", "the gradients do not fit the operands");
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
                            * double(b.data()[p.b.at(coord, p.batchRank, k, j)]);
                    acc[size_t(p.a.at(coord, p.batchRank, i, k))] += s;
                } else { // dB[k, j] += A[i, k] · dC[i, j]
                    const double av = a.data()[p.a.at(coord, p.batchRank, i, k)];
                    for (int64_t j = 0; j < p.n; ++j)
                        acc[size_t(p.b.at(coord, p.batchRank, k, j))]
                            += av * double(gy.data()[p.c.at(coord, p.batchRank, i, j)]);
                }
            }
    }
    for (size_t e = 0; e < acc.size(); ++e)
        g.data()[e] = static_cast<float>(acc[e]);
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
