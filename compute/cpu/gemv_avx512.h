// Internal to compute/cpu: the AVX-512 matrix-vector product of a batch-1 linear layer (gemv_avx512.cpp).
#pragma once

#include <cstdint>

namespace convscope::cpu::fast::avx512 {

// y[r] = init[r] + Σ_i W[r·k + i] · x[i] for the `rows` rows given (init may be null: 0). One thread; the caller splits
// the rows across the team. Only when haveAvx512().
void gemvRows(const float* w, int64_t rows, int64_t k, const float* x, const float* init, float* y);

} // namespace convscope::cpu::fast::avx512
