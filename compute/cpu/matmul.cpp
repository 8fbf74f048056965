// matmul (torch.matmul, compute/matmul.h) and gather (compute/gather.h) on the CPU, for contiguous FP32 tensors.
// matmul: direct:: sums each output in double, one thread; fast:: is one row-major sgemm per batch matrix (OpenBLAS,
// single-threaded by the CPU policy): the batch is split across the OpenMP team when it has a matrix for every thread
// and the matrices are small, else each product is split by detail::parallelSgemm's blocks of C. gather: a copy by
// the plan, the same in both (nothing is summed).
#include "compute/matmul.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"
#include "compute/cpu_threads.h"
#include "compute/error.h"
#include "compute/gather.h"

#include <omp.h>

namespace convscope::cpu {

void runMatmul(const Matmul& l, const LayerShape& s, const std::vector<const Tensor*>& ins, const Tensor* constant,
    Tensor& out, bool fast)
{
    const MatmulOperands o = matmulOperands(l, s.ins);
    if (o.constantSide >= 0 && (!constant || constant->numel() != int64_t(l.constant.size())))
        throw Error("matmul: the layer's constant was not materialised");
    size_t next = 0;
    const float* x = o.constantSide == 0 ? constant->data() : ins.at(next++)->data();
    const float* y = o.constantSide == 1 ? constant->data() : ins.at(next++)->data();
    const MatmulPlan p = makeMatmulPlan(o.a, false, o.b, false, false);
    detail::require(out.numel() == p.batch * p.m * p.n, "matmul", "the output does not hold the product's elements");
    float* z = out.data();
    if (!fast) {
        int64_t coord[kMaxMatmulBatchRank] = {};
        for (int64_t bi = 0; bi < p.batch; ++bi) {
            p.coordinates(bi, coord);
            for (int64_t i = 0; i < p.m; ++i)
                for (int64_t j = 0; j < p.n; ++j) {
                    double acc = 0;
                    for (int64_t k = 0; k < p.k; ++k)
                        acc += double(x[p.a.at(coord, p.batchRank, i, k)])
                            * double(y[p.b.at(coord, p.batchRank, k, j)]);
                    z[p.c.at(coord, p.batchRank, i, j)] = static_cast<float>(acc);
                }
        }
        return;
    }
    detail::requireBlasDimensions({ p.m, p.n, p.k }, "matmul");
    // Contiguous operands: A [M, K] row-major (lda K), B [K, N] (ldb N; a 1-D b is [K, 1]), C [M, N] (ldc N).
    const auto product = [&](int64_t bi) {
        int64_t coord[kMaxMatmulBatchRank] = {};
        p.coordinates(bi, coord);
        detail::parallelSgemm(false, false, p.m, p.n, p.k, x + p.a.at(coord, p.batchRank, 0, 0), p.k,
            y + p.b.at(coord, p.batchRank, 0, 0), p.n, 0.0f, z + p.c.at(coord, p.batchRank, 0, 0), p.n);
    };
    // Small products a thread each when there are enough of them and the whole is worth waking the team for (below
    // 2^18 multiply-adds it runs here, as parallelSgemm does); a large one split by parallelSgemm's blocks of C.
    const int64_t macs = p.m * p.n * p.k;
    if (p.batch >= int64_t(cpuThreadCount()) && macs < (int64_t(1) << 20) && p.batch * macs >= (int64_t(1) << 18)) {
#pragma omp parallel for schedule(static)
        for (int64_t bi = 0; bi < p.batch; ++bi)
            product(bi); // inside the team: each one sgemm on its thread
    } else {
        for (int64_t bi = 0; bi < p.batch; ++bi)
            product(bi);
    }
}

void runGather(const Gather& l, const Tensor& in, Tensor& out)
{
    const std::vector<int64_t> idx = gatherWrappedIndices(l, in.shape().dims());
    const GatherPlan p = makeGatherPlan(l, in.shape().dims(), false, false);
    detail::require(out.numel() == p.count, "gather", "the output does not hold the gathered elements");
    const float* x = in.data();
    float* y = out.data();
#pragma omp parallel for schedule(static) if (p.count >= detail::kMinParallelElements)
    for (int64_t i = 0; i < p.count; ++i) {
        int64_t o = 0, s = 0;
        p.locate(i, idx.data(), o, s);
        y[o] = x[s];
    }
}

} // namespace convscope::cpu
