// Internal to compute/cpu: AVX-512 loops of the normalisations' fast path (normalization_avx512.cpp, used by
// normalization.cpp). Only when avx512::haveAvx512() (conv2d_tap_avx512.h). Both do the scalar loops' operations in
// the same order (no contraction into fused multiply-adds), so the results are the same bits as without AVX-512.
#pragma once

#include <cstdint>

namespace convscope::cpu::fast::avx512 {

// For the first n − n mod 8 elements of x: d = x[i] − k in double, s1[i mod 8] += d and s2[i mod 8] += d · d, in
// order of i (normalization.cpp's chunkMoments). Returns how many elements it took.
int64_t normSums(const float* x, int64_t n, double k, double* s1, double* s2);

// y[j] = ((x[j] − hi) − lo) · s · w[j] + b[j] for j < n where w is not null (layer_norm), else ((x[j] − hi) − lo) · a
// + c; `stream`: the aligned vectors of y with non-temporal stores (the caller fences).
void normWrite(const float* x, float* y, int64_t n, float hi, float lo, float s, const float* w, const float* b,
    float a, float c, bool stream);

} // namespace convscope::cpu::fast::avx512
