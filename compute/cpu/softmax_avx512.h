// Internal to compute/cpu: AVX-512 exponentials for softmax's fast path (softmax_avx512.cpp). Only when
// avx512::haveAvx512() (conv2d_tap_avx512.h).
#pragma once

#include <cstdint>

namespace convscope::cpu::fast::avx512 {

// One softmax (log: log_softmax) of n contiguous values x into y (x may be y), in float; `stream`: y's aligned
// vectors are written with non-temporal stores (an output larger than the caches, streamOutput()).
void softmaxRow(const float* x, float* y, int64_t n, bool log, bool stream);
// Softmax (log: log_softmax) along a strided axis for n neighbouring positions: x[c · stride + p] for c < size and
// p < n, into y at the same offsets (x may be y). Two passes over the size × n values: the maximum and the sum of
// exponentials together (the online softmax: the sum is rescaled when the maximum grows), then the outputs.
// scratch: 2 · (n rounded up to 16) floats. `stream` as for softmaxRow.
void softmaxColumns(
    const float* x, float* y, int64_t size, int64_t stride, int64_t n, bool log, bool stream, float* scratch);

} // namespace convscope::cpu::fast::avx512
