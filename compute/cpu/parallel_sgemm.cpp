// detail::parallelSgemm (op_common.h): a row-major sgemm split across the OpenMP team, each part one single-threaded
// OpenBLAS call on its own block of C (cpu_threads.h says why OpenBLAS never threads by itself).
#include "compute/cpu/op_common.h"

#include "compute/cpu_threads.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>

namespace convscope::cpu::detail {

namespace {

    // Below this many multiply-adds a product runs on the calling thread (a LeNet layer, a batch-1 classifier head
    // of a small network): waking the team would cost more than it saves.
    constexpr int64_t kMinParallelMacs = int64_t(1) << 18;

} // namespace

void parallelSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
    const float* b, int64_t ldb, float beta, float* c, int64_t ldc)
{
    keepBlasOnCallingThread();
    const auto part = [&](int64_t m0, int64_t mCount, int64_t n0, int64_t nCount) {
        if (mCount <= 0 || nCount <= 0)
            return;
        const float* aPart = a + (transA ? m0 : m0 * lda);
        const float* bPart = b + (transB ? n0 * ldb : n0);
        if (mCount == 1 && !transA) {
            // One row of C: a matrix-vector product over B's columns (a classifier at batch 1), bandwidth-bound.
            cblas_sgemv(CblasRowMajor, transB ? CblasNoTrans : CblasTrans, blasint(transB ? nCount : k),
                blasint(transB ? k : nCount), 1.0f, bPart, blasint(ldb), aPart, 1, beta, c + m0 * ldc + n0, 1);
            return;
        }
        cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
            blasint(mCount), blasint(nCount), blasint(k), 1.0f, aPart, blasint(lda), bPart, blasint(ldb), beta,
            c + m0 * ldc + n0, blasint(ldc));
    };
    const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (threads <= 1 || m * n * k < kMinParallelMacs) {
        part(0, m, 0, n);
        return;
    }
    // Split the longer side of C into blocks of whole 16-float vectors, several per thread so that uneven blocks
    // even out; the shorter side stays whole, so every part still reads all of K at once.
    const bool splitColumns = n >= m;
    const int64_t extent = splitColumns ? n : m;
    const int64_t blocks = std::min<int64_t>(int64_t(threads) * 4, std::max<int64_t>(1, extent / 16));
    const int64_t step = ((extent + blocks - 1) / blocks + 15) / 16 * 16;
    const int64_t parts = (extent + step - 1) / step;
#pragma omp parallel for schedule(dynamic) num_threads(int(std::min <int64_t>(threads, parts)))
    for (int64_t p = 0; p < parts; ++p) {
        const int64_t first = p * step, count = std::min(step, extent - first);
        if (splitColumns)
            part(0, m, first, count);
        else
            part(first, count, 0, n);
    }
}

} // namespace convscope::cpu::detail
