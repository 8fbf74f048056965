// A batch-1 linear layer is a matrix-vector product: every weight is read once and used once, so it runs at the
// memory's speed or not at all (VGG-16's fc1 reads 411 MB). OpenBLAS's sgemv on a CPU its Debian build does not know
// runs its generic SSE3 kernel (the GPU machine's Xeon: "Prescott"), a fraction of one core's share of the bandwidth.
// Here four rows go at a time, each with two 16-wide accumulators, so one pass over x serves four rows and eight
// independent FMA chains hide the FMA latency; the loads stream through the rows in order for the prefetchers.
#include "compute/cpu/gemv_avx512.h"

#include "compute/cpu/avx512_intrinsics.h"

namespace convscope::cpu::fast::avx512 {

namespace {

    __attribute__((target("avx512f,fma"))) float rowTail(const float* w, const float* x, int64_t from, int64_t k)
    {
        float s = 0.0f;
        for (int64_t i = from; i < k; ++i)
            s += w[i] * x[i];
        return s;
    }

} // namespace

__attribute__((target("avx512f,fma"))) void gemvRows(
    const float* w, int64_t rows, int64_t k, const float* x, const float* init, float* y)
{
    const int64_t full = k / 32 * 32;
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const float* w0 = w + r * k;
        const float* w1 = w0 + k;
        const float* w2 = w1 + k;
        const float* w3 = w2 + k;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
        __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps(), b2 = _mm512_setzero_ps(), b3 = _mm512_setzero_ps();
        for (int64_t i = 0; i < full; i += 32) {
            const __m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
            a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i), x0, a0);
            b0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i + 16), x1, b0);
            a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + i), x0, a1);
            b1 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + i + 16), x1, b1);
            a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + i), x0, a2);
            b2 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + i + 16), x1, b2);
            a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + i), x0, a3);
            b3 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + i + 16), x1, b3);
        }
        const float* rowsOf[4] = { w0, w1, w2, w3 };
        const float sums[4]
            = { _mm512_reduce_add_ps(_mm512_add_ps(a0, b0)), _mm512_reduce_add_ps(_mm512_add_ps(a1, b1)),
                  _mm512_reduce_add_ps(_mm512_add_ps(a2, b2)), _mm512_reduce_add_ps(_mm512_add_ps(a3, b3)) };
        for (int j = 0; j < 4; ++j)
            y[r + j] = (init ? init[r + j] : 0.0f) + sums[j] + rowTail(rowsOf[j], x, full, k);
    }
    for (; r < rows; ++r) {
        const float* wr = w + r * k;
        __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
        for (int64_t i = 0; i < full; i += 32) {
            a = _mm512_fmadd_ps(_mm512_loadu_ps(wr + i), _mm512_loadu_ps(x + i), a);
            b = _mm512_fmadd_ps(_mm512_loadu_ps(wr + i + 16), _mm512_loadu_ps(x + i + 16), b);
        }
        y[r] = (init ? init[r] : 0.0f) + _mm512_reduce_add_ps(_mm512_add_ps(a, b)) + rowTail(wr, x, full, k);
    }
}

} // namespace convscope::cpu::fast::avx512
