// AVX-512 rows of resize (resize_avx512.h). The scalar path reads each output's taps one float at a time (a 2×
// bilinear upsampling ran at 43% of the copy bandwidth on 16 cores); here 16 outputs at a time: their taps, within 32
// inputs of the block's first for an upsampling, are picked from two loaded vectors with one permutation per tap, and
// the output vector is stored past the caches when the tensor is large.
#include "compute/cpu/resize_avx512.h"

#include "compute/cpu/avx512_intrinsics.h"
#include "compute/cpu/no_fp_contract.h"

#include <algorithm>

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
    c.narrow.resize(size_t(blocks));
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
        c.narrow[size_t(b)] = hi - lo < 16 ? 1 : 0;
        c.windowed = c.windowed && window;
        for (int64_t x = x0; x < x1; ++x)
            for (int t = 0; t < taps; ++t) {
                const size_t at = size_t((b * taps + t) * 16 + (x - x0));
                c.offset[at] = int32_t(idx[x * taps + t] - c.base[size_t(b)]);
                c.weight[at] = w[x * taps + t];
            }
    }
    return c;
}

namespace {

    // 16 inputs from p, the lanes at or past `left` zero (a window at the end of the row).
    __attribute__((target("avx512f"))) inline __m512 resizeLoad(const float* p, int64_t left)
    {
        return left >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(resizeLanes(left), p);
    }

    // The blend of the rows' 16 inputs from `at`: Σ_r weight[r] · rows[r][at + i], added in row order as blendRows
    // (count 1 with weight 1: the row as it is).
    __attribute__((target("avx512f"))) inline __m512 resizeBlend(
        const float* const* rows, const float* weight, int count, bool whole, int64_t at, int64_t left)
    {
        if (whole)
            return resizeLoad(rows[0] + at, left);
        __m512 acc = _mm512_mul_ps(_mm512_set1_ps(weight[0]), resizeLoad(rows[0] + at, left));
        for (int r = 1; r < count; ++r)
            acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(weight[r]), resizeLoad(rows[r] + at, left)));
        return acc;
    }

    __attribute__((target("avx512f"))) inline void resizeStore(float* y, __m512 v, __mmask16 k, bool stream)
    {
        if (stream && k == 0xFFFF && (reinterpret_cast<uintptr_t>(y) & 63) == 0)
            _mm512_stream_ps(y, v);
        else
            _mm512_mask_storeu_ps(y, k, v);
    }

    // Σ_t weight · v_t over the taps of one block (nearest: the one tap as it is).
    template <typename Pick>
    __attribute__((target("avx512f"))) inline __m512 resizeTapsSum(int taps, const float* w, Pick pick)
    {
        if (taps == 1)
            return pick(0);
        __m512 acc = _mm512_setzero_ps();
        for (int t = 0; t < taps; ++t)
            acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(w + t * 16), pick(t)));
        return acc;
    }

} // namespace

__attribute__((target("avx512f"))) void resizeLine(const ResizeColumns& c, const float* const* rows,
    const float* rowWeight, int count, float* blend, float* line, bool stream)
{
    const int taps = c.taps;
    const bool whole = count == 1 && rowWeight[0] == 1.0f;
    const float* next = rows[count - 1] + c.inWidth; // the input row after the last: a later output row reads it
    if (!c.windowed) { // some blocks gather: the rows blended first into `blend`
        const float* src = rows[0];
        if (!whole) {
            blendRows(rows, rowWeight, count, c.inWidth, blend);
            src = blend;
        }
        for (int64_t b = 0, x = 0; x < c.width; ++b, x += 16) {
            const __mmask16 k = resizeLanes(c.width - x);
            const int32_t* off = c.offset.data() + b * taps * 16;
            const int64_t base = c.base[size_t(b)];
            const __m512 lo = resizeLoad(src + base, c.inWidth - base);
            const __m512 hi = resizeLoad(src + base + 16, c.inWidth - base - 16);
            const __m512 acc = resizeTapsSum(taps, c.weight.data() + b * taps * 16, [&](int t) {
                const __m512i o = _mm512_loadu_si512(off + t * 16);
                return c.window[size_t(b)] ? _mm512_permutex2var_ps(lo, o, hi)
                                           : _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, o, src, 4);
            });
            resizeStore(line + x, acc, k, stream);
        }
        return;
    }
    // Every block within a window: each block blends just its window of the rows (no blend row written and read
    // back, whose loads waited on the stores they straddled), one vector where its taps span under 16 inputs.
    for (int64_t b = 0, x = 0; x < c.width; ++b, x += 16) {
        const __mmask16 k = resizeLanes(c.width - x);
        const int32_t* off = c.offset.data() + b * taps * 16;
        const int64_t base = c.base[size_t(b)];
        _mm_prefetch(reinterpret_cast<const char*>(next + base), _MM_HINT_T0);
        const __m512 lo = resizeBlend(rows, rowWeight, count, whole, base, c.inWidth - base);
        __m512 acc;
        if (c.narrow[size_t(b)]) {
            acc = resizeTapsSum(taps, c.weight.data() + b * taps * 16,
                [&](int t) { return _mm512_permutexvar_ps(_mm512_loadu_si512(off + t * 16), lo); });
        } else {
            const __m512 hi = resizeBlend(rows, rowWeight, count, whole, base + 16, c.inWidth - base - 16);
            acc = resizeTapsSum(taps, c.weight.data() + b * taps * 16,
                [&](int t) { return _mm512_permutex2var_ps(lo, _mm512_loadu_si512(off + t * 16), hi); });
        }
        resizeStore(line + x, acc, k, stream);
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
