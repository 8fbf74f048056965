// AVX-512 exponentials for softmax's fast path (softmax_avx512.h). glibc's vector expf is declared only under
// -ffast-math, so std::exp in a loop stays scalar (about 10 ns an element: 0.67 s for a 256 MiB softmax on 2 cores,
// 8× oneDNN's). Here e^x is Cephes' expf in 16 lanes: x = n·ln 2 + r with |r| ≤ ln 2 / 2 (ln 2 split in two for an
// exact product), e^r a degree-7 polynomial, 2^n built in the exponent bits; within 2 ulp of expf over
// [−87.3, 88.7], 0 below (where e^x is under FLT_MIN, −inf included: softmax's terms vanish beside the maximum's 1),
// and NaN in, NaN out (the clamps keep a NaN operand: MAXPS/MINPS return their second operand when one is NaN).
#include "compute/cpu/softmax_avx512.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "compute/cpu/avx512_intrinsics.h"

namespace convscope::cpu::fast::avx512 {

namespace {

    __attribute__((target("avx512f,fma"))) inline __m512 exp16(__m512 x)
    {
        const __m512 lo = _mm512_set1_ps(-87.3365447505531f), hi = _mm512_set1_ps(88.7228391116729f);
        const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ); // e^x below FLT_MIN (−inf too): 0
        x = _mm512_min_ps(hi, _mm512_max_ps(lo, x)); // x second: a NaN stays
        const __m512 n = _mm512_roundscale_ps(
            _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
        r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
        __m512 p = _mm512_set1_ps(1.9875691500e-4f);
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
        p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
        // 2^n: n in [−126, 128] after the clamp; 2^128 is split as 2^127 · 2 so no exponent field overflows.
        const __m512i ni = _mm512_cvtps_epi32(n);
        const __m512i half = _mm512_srai_epi32(ni, 1);
        const __m512 a = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(half, _mm512_set1_epi32(127)), 23));
        const __m512 b = _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_add_epi32(_mm512_sub_epi32(ni, half), _mm512_set1_epi32(127)), 23));
        return _mm512_mask_mov_ps(_mm512_mul_ps(_mm512_mul_ps(p, a), b), under, _mm512_setzero_ps());
    }

    __attribute__((target("avx512f"))) inline __mmask16 tail(int64_t left)
    {
        return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    }

    // A store of the lanes k of v at y: non-temporal (past the caches, no read for ownership) when `stream` asks and
    // the vector is whole and aligned, else an ordinary masked store.
    __attribute__((target("avx512f"))) inline void put(float* y, __m512 v, __mmask16 k, bool stream)
    {
        if (stream && k == 0xFFFF && (reinterpret_cast<uintptr_t>(y) & 63) == 0)
            _mm512_stream_ps(y, v);
        else
            _mm512_mask_storeu_ps(y, k, v);
    }

} // namespace

__attribute__((target("avx512f,fma"))) void softmaxRow(const float* x, float* y, int64_t n, bool log, bool stream)
{
    __m512 mv = _mm512_set1_ps(-INFINITY);
    __mmask16 nan = 0;
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail(n - i);
        // 4 KiB ahead, the next page (the hardware prefetchers stop at each; past the row it is the next row, or past
        // the tensor, harmless): 22 → 34 GB/s of CPU time for [8192, 8192] on 2 cores.
        _mm_prefetch(reinterpret_cast<const char*>(x + i + 1024), _MM_HINT_T0);
        const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        mv = _mm512_mask_max_ps(mv, k, mv, v);
        nan |= _mm512_mask_cmp_ps_mask(k, v, v, _CMP_UNORD_Q);
    }
    // A NaN anywhere makes the row NaN (every e^(x − NaN) is), as the scalar paths and PyTorch do.
    const float m = nan ? std::numeric_limits<float>::quiet_NaN() : _mm512_reduce_max_ps(mv);
    const __m512 mb = _mm512_set1_ps(m);
    __m512 sv = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail(n - i);
        const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mb));
        sv = _mm512_add_ps(sv, _mm512_maskz_mov_ps(k, e));
        if (!log)
            _mm512_mask_storeu_ps(y + i, k, e);
    }
    const float sum = _mm512_reduce_add_ps(sv);
    if (log) { // (x − m) − log Σ, PyTorch's order
        const __m512 ls = _mm512_set1_ps(std::log(sum));
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 k = tail(n - i);
            put(y + i, _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mb), ls), k, stream);
        }
    } else {
        const __m512 inv = _mm512_set1_ps(1.0f / sum);
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 k = tail(n - i);
            put(y + i, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + i), inv), k, stream);
        }
    }
    if (stream)
        _mm_sfence();
}

__attribute__((target("avx512f,fma"))) void softmaxColumns(
    const float* x, float* y, int64_t size, int64_t stride, int64_t n, bool log, bool stream, float* scratch)
{
    float* m = scratch; // the running maximum of each position
    float* s = scratch + ((n + 15) & ~int64_t(15)); // Σ e^(x − m) with that maximum
    for (int64_t p = 0; p < n; p += 16) {
        const __mmask16 k = tail(n - p);
        _mm512_mask_storeu_ps(m + p, k, _mm512_maskz_loadu_ps(k, x + p));
        _mm512_mask_storeu_ps(s + p, k, _mm512_set1_ps(1.0f));
    }
    // Each pass asks for the row kAhead rows on while it reads one: without, the loads waited on memory half the time
    // (the hardware prefetchers do not follow a block's strided rows far enough ahead; 2 cores: 2× faster).
    constexpr int64_t kAhead = 2;
    // One pass for both (the online softmax): a value v above the maximum m rescales the sum, s · e^(m − v) + 1,
    // any other adds e^(v − m) — one exponential of −|v − m| either way. v = m adds 1 exactly, also where both are
    // −inf (whose difference is NaN); a NaN makes the sum NaN, which stays.
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t c = 1; c < size; ++c) {
        const float* row = x + c * stride;
        const float* ahead = x + std::min(c + kAhead, size - 1) * stride;
        for (int64_t p = 0; p < n; p += 16) {
            const __mmask16 k = tail(n - p);
            _mm_prefetch(reinterpret_cast<const char*>(ahead + p), _MM_HINT_T0);
            const __m512 v = _mm512_maskz_loadu_ps(k, row + p), mv = _mm512_maskz_loadu_ps(k, m + p);
            const __m512 sv = _mm512_maskz_loadu_ps(k, s + p);
            const __mmask16 above = _mm512_cmp_ps_mask(v, mv, _CMP_GT_OQ);
            const __mmask16 equal = _mm512_cmp_ps_mask(v, mv, _CMP_EQ_OQ);
            const __m512 d = _mm512_mask_sub_ps(_mm512_sub_ps(v, mv), above, mv, v);
            const __m512 t = _mm512_mask_mov_ps(exp16(d), equal, one);
            const __m512 rescaled = _mm512_fmadd_ps(sv, t, one), added = _mm512_add_ps(sv, t);
            _mm512_mask_storeu_ps(s + p, k, _mm512_mask_mov_ps(added, above, rescaled));
            _mm512_mask_storeu_ps(m + p, k, _mm512_mask_mov_ps(mv, above, v));
        }
    }
    // A maximum of +inf gives e^(inf − inf) = NaN in PyTorch's sum: every output of that position is NaN.
    for (int64_t p = 0; p < n; ++p) {
        const float sum = m[p] == INFINITY ? std::numeric_limits<float>::quiet_NaN() : s[p];
        s[p] = log ? std::log(sum) : 1.0f / sum;
    }
    for (int64_t c = 0; c < size; ++c) {
        const float* row = x + c * stride;
        const float* ahead = x + std::min(c + kAhead, size - 1) * stride;
        float* out = y + c * stride;
        for (int64_t p = 0; p < n; p += 16) {
            const __mmask16 k = tail(n - p);
            _mm_prefetch(reinterpret_cast<const char*>(ahead + p), _MM_HINT_T0);
            const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + p), _mm512_maskz_loadu_ps(k, m + p));
            const __m512 sv = _mm512_maskz_loadu_ps(k, s + p);
            put(out + p, log ? _mm512_sub_ps(d, sv) : _mm512_mul_ps(exp16(d), sv), k, stream);
        }
    }
    if (stream)
        _mm_sfence();
}

} // namespace convscope::cpu::fast::avx512
