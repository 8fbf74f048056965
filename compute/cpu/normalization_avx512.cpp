// AVX-512 loops of the normalisations (normalization_avx512.h): with SSE2 only (the generic x86-64 build) the one-pass
// statistics in double ran at about 2 cycles an element, slower than memory on 2 cores and close to it on 16.
#include "compute/cpu/normalization_avx512.h"

#include "compute/cpu/avx512_intrinsics.h"
#include "compute/cpu/no_fp_contract.h"

#include <algorithm>

namespace convscope::cpu::fast::avx512 {

namespace {
    // Both loops ask for the input 4 KiB ahead of what they read (the next page, where the hardware prefetchers
    // stop; a prefetch past the end is harmless).
    constexpr int64_t kNormAhead = 1024;
} // namespace

__attribute__((target("avx512f"))) int64_t normSums(const float* x, int64_t n, double k, double* s1, double* s2)
{
    const __m512d kv = _mm512_set1_pd(k);
    __m512d a = _mm512_loadu_pd(s1), b = _mm512_loadu_pd(s2);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        if (i % 16 == 0)
            _mm_prefetch(reinterpret_cast<const char*>(x + i + kNormAhead), _MM_HINT_T0);
        const __m512d d = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), kv);
        a = _mm512_add_pd(a, d);
        b = _mm512_add_pd(b, _mm512_mul_pd(d, d));
    }
    _mm512_storeu_pd(s1, a);
    _mm512_storeu_pd(s2, b);
    return i;
}

namespace {
    // One vector (lanes k) of normWrite.
    __attribute__((target("avx512f"))) inline void normBlock(const float* x, float* y, const float* w, const float* b,
        __m512 vh, __m512 vl, __m512 vs, __m512 va, __m512 vc, __mmask16 k, bool stream)
    {
        const __m512 d = _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x), vh), vl);
        const __m512 v = w ? _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(d, vs), _mm512_maskz_loadu_ps(k, w)),
                             _mm512_maskz_loadu_ps(k, b))
                           : _mm512_add_ps(_mm512_mul_ps(d, va), vc);
        if (stream && k == 0xFFFF)
            _mm512_stream_ps(y, v);
        else
            _mm512_mask_storeu_ps(y, k, v);
    }
} // namespace

__attribute__((target("avx512f"))) void normWrite(const float* x, float* y, int64_t n, float hi, float lo, float s,
    const float* w, const float* b, float a, float c, bool stream)
{
    const __m512 vh = _mm512_set1_ps(hi), vl = _mm512_set1_ps(lo), vs = _mm512_set1_ps(s), va = _mm512_set1_ps(a),
                 vc = _mm512_set1_ps(c);
    // w and b advance with x and y (layer_norm); null stays null.
    auto at = [](const float* p, int64_t j) { return p ? p + j : p; };
    int64_t j = 0;
    const uintptr_t misaligned = reinterpret_cast<uintptr_t>(y) & 63;
    if (stream && misaligned % sizeof(float) != 0)
        stream = false;
    else if (stream && misaligned != 0) { // up to the first aligned vector of y
        j = std::min<int64_t>(n, int64_t((64 - misaligned) / sizeof(float)));
        normBlock(x, y, w, b, vh, vl, vs, va, vc, __mmask16((1u << j) - 1), false);
    }
    for (; j + 16 <= n; j += 16) {
        _mm_prefetch(reinterpret_cast<const char*>(x + j + kNormAhead), _MM_HINT_T0);
        normBlock(x + j, y + j, at(w, j), at(b, j), vh, vl, vs, va, vc, 0xFFFF, stream);
    }
    if (j < n)
        normBlock(x + j, y + j, at(w, j), at(b, j), vh, vl, vs, va, vc, __mmask16((1u << (n - j)) - 1), false);
}

} // namespace convscope::cpu::fast::avx512
