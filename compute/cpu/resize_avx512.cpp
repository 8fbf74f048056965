// AVX-512 rows of resize (resize_avx512.h). The scalar path reads each output's taps one float at a time (a 2×
// bilinear upsampling ran at 43% of the copy bandwidth on 16 cores); here 16 outputs at a time: their taps, within 32
// inputs of the block's first for an upsampling, are picked from two loaded vectors with one permutation per tap, and
// the output vector is stored past the caches when the tensor is large.
#include "compute/cpu/resize_avx512.h"

#include <algorithm>

// The same bits as the scalar path (resize_test.cpp checks): a product and a sum stay two roundings.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

// GCC 12 warns "__Y is used uninitialized" inside its own avx512fintrin.h when the intrinsics are inlined under a
// target attribute; the intrinsics are correct (as in gemv_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace convscope::cpu::fast::avx512 {

namespace {

    // The first `left` lanes (none when left ≤ 0).
    __attribute__((target("avx512f"))) inline __mmask16 resizeLanes(int64_t left)
    {
        return left >= 16 ? __mmask16(0xFFFF) : (left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1));
    }

} // namespace

ResizeColumns resizeColumns(const int64_t* idx, const float* w, int taps, int64_t width, int64_t inWidth)
{
    ResizeColumns c;
    c.taps = taps;
    c.width = width;
    c.inWidth = inWidth;
    const int64_t blocks = (width + 15) / 16;
    c.base.resize(size_t(blocks));
    c.window.resize(size_t(blocks));
    c.offset.assign(size_t(blocks * taps * 16), 0);
    c.weight.assign(size_t(blocks * taps * 16), 0.0f);
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t x0 = b * 16, x1 = std::min(width, x0 + 16);
        int64_t lo = idx[x0 * taps], hi = lo;
        for (int64_t i = x0 * taps; i < x1 * taps; ++i) {
            lo = std::min(lo, idx[i]);
            hi = std::max(hi, idx[i]);
        }
        const bool window = hi - lo < 32;
        c.base[size_t(b)] = window ? lo : 0;
        c.window[size_t(b)] = window ? 1 : 0;
        for (int64_t x = x0; x < x1; ++x)
            for (int t = 0; t < taps; ++t) {
                const size_t at = size_t((b * taps + t) * 16 + (x - x0));
                c.offset[at] = int32_t(idx[x * taps + t] - c.base[size_t(b)]);
                c.weight[at] = w[x * taps + t];
            }
    }
    return c;
}

__attribute__((target("avx512f"))) void resizeLine(const ResizeColumns& c, const float* src, const float* next, float* line, bool stream)
{
    const int taps = c.taps;
    for (int64_t b = 0, x = 0; x < c.width; ++b, x += 16) {
        const __mmask16 k = resizeLanes(c.width - x);
        const int32_t* off = c.offset.data() + b * taps * 16;
        const float* w = c.weight.data() + b * taps * 16;
        __m512 acc = _mm512_setzero_ps();
        if (c.window[size_t(b)]) {
            const int64_t base = c.base[size_t(b)];
            if (next)
                _mm_prefetch(reinterpret_cast<const char*>(next + base), _MM_HINT_T0);
            const __m512 lo = _mm512_maskz_loadu_ps(resizeLanes(c.inWidth - base), src + base);
            const __m512 hi = _mm512_maskz_loadu_ps(resizeLanes(c.inWidth - base - 16), src + base + 16);
            for (int t = 0; t < taps; ++t) {
                const __m512 v = _mm512_permutex2var_ps(lo, _mm512_loadu_si512(off + t * 16), hi);
                acc = taps == 1 ? v : _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(w + t * 16), v));
            }
        } else {
            for (int t = 0; t < taps; ++t) {
                const __m512 v
                    = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, _mm512_loadu_si512(off + t * 16), src, 4);
                acc = taps == 1 ? v : _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(w + t * 16), v));
            }
        }
        if (stream && k == 0xFFFF && (reinterpret_cast<uintptr_t>(line + x) & 63) == 0)
            _mm512_stream_ps(line + x, acc);
        else
            _mm512_mask_storeu_ps(line + x, k, acc);
    }
}

__attribute__((target("avx512f"))) void blendRows(
    const float* const* rows, const float* weight, int count, int64_t n, float* out)
{
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = resizeLanes(n - i);
        _mm_prefetch(reinterpret_cast<const char*>(rows[count - 1] + n + i), _MM_HINT_T0); // the next input row
        __m512 acc = _mm512_mul_ps(_mm512_set1_ps(weight[0]), _mm512_maskz_loadu_ps(k, rows[0] + i));
        for (int r = 1; r < count; ++r)
            acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(weight[r]), _mm512_maskz_loadu_ps(k, rows[r] + i)));
        _mm512_mask_storeu_ps(out + i, k, acc);
    }
}

} // namespace convscope::cpu::fast::avx512
