// Internal to compute/cpu: AVX-512 exponentials for softmax's fast path (softmax_avx512.cpp). Only when
// avx512::haveAvx512() (conv2d_tap_avx512.h).
#pragma once

#include <cstdint>

namespace convscope::cpu::fast::avx512 {

// One softmax (log: log_softmax) of n contiguous values x into y (x may be y), in float.
void softmaxRow(const float* x, float* y, int64_t n, bool log);
// e[p] = e^(x[p] − m[p]) for p < n (one of softmax's blocks), and sum[p] += e[p].
void expShiftedAdd(const float* x, const float* m, float* e, float* sum, int64_t n);

} // namespace convscope::cpu::fast::avx512
