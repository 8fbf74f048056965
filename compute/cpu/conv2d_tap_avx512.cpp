// conv2d, the tap GEMM of cpu.tap_gemm with our own AVX-512 register tile instead of OpenBLAS.
//
// cpu.tap_gemm with OpenBLAS called sgemm once per tap with beta = 1: each of the kh·kw products read and wrote
// the accumulator tile again, and OpenBLAS packed both operands on every call. Here a tile of 12 output pixels ×
// 32 output channels (24 zmm accumulators) stays in registers through the whole reduction over every tap and
// every input channel. The band of padded input rows is stored channels-minor (pixel q's C_in/g values are
// contiguous), the weights as [tap][ic][32 output channels], so one step of the reduction is
//
//   w0, w1 = the 32 weights of (tap, ic)                       two aligned-stream loads
//   for the 12 pixels i: x = band[(q0 + i + offset_tap)·C + ic]   one broadcast
//                        acc[i] += x · (w0, w1)                  two FMAs
//
// 24 FMAs (12 cycles on two FMA ports) for 14 loads (three load ports), and the loads walk memory in order:
// consecutive ic are consecutive floats of the same 12 pixels, so they hit L1. (A first version kept the band
// channels-major and broadcast the weights instead; each step then read a new input row per channel, from L2,
// and it ran no faster than OpenBLAS: docs/PERFORMANCE.md.)
#include "compute/cpu/conv2d_tap_avx512.h"

#include "compute/cpu/avx512_intrinsics.h"

namespace convscope::cpu::fast::avx512 {

bool haveAvx512() { return __builtin_cpu_supports("avx512f"); }

__attribute__((target("avx512f,fma"))) void tapTile12x32(const float* packedW, const float* band,
    const int64_t* tapOffsets, int64_t taps, int64_t channels, int64_t pixelStride, float* out)
{
    __m512 c[12][2];
    for (int i = 0; i < 12; ++i)
        c[i][0] = c[i][1] = _mm512_setzero_ps();
    const float* w = packedW;
    for (int64_t t = 0; t < taps; ++t) {
        const float* x = band + tapOffsets[t] * channels;
        for (int64_t ic = 0; ic < channels; ++ic, w += 32) {
            const __m512 w0 = _mm512_loadu_ps(w);
            const __m512 w1 = _mm512_loadu_ps(w + 16);
#pragma GCC unroll 12
            for (int i = 0; i < 12; ++i) {
                const __m512 v = _mm512_set1_ps(x[i * pixelStride + ic]);
                c[i][0] = _mm512_fmadd_ps(v, w0, c[i][0]);
                c[i][1] = _mm512_fmadd_ps(v, w1, c[i][1]);
            }
        }
    }
    for (int i = 0; i < 12; ++i) {
        _mm512_storeu_ps(out + i * 32, c[i][0]);
        _mm512_storeu_ps(out + i * 32 + 16, c[i][1]);
    }
}

// 16 × 16 in registers: unpack pairs, then 4 × 4 inside 128-bit lanes, then the lanes themselves.
__attribute__((target("avx512f"))) void transpose16x16(
    const float* src, int64_t srcStride, float* dst, int64_t dstStride, const float* add)
{
    __m512 r[16], t[16];
    for (int i = 0; i < 16; ++i)
        r[i] = _mm512_loadu_ps(src + i * srcStride);
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; ++i) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
    }
    for (int i = 0; i < 4; ++i) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
        r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xDD);
    }
    for (int j = 0; j < 16; ++j) {
        __m512 v = r[j];
        if (add)
            v = _mm512_add_ps(v, _mm512_set1_ps(add[j]));
        _mm512_storeu_ps(dst + j * dstStride, v);
    }
}

} // namespace convscope::cpu::fast::avx512
