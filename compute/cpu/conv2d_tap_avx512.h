// Internal to compute/cpu: the AVX-512 register tile of cpu.tap_gemm (conv2d_tap_avx512.cpp).
#pragma once

#include <cstdint>

namespace convscope::cpu::fast::avx512 {

inline constexpr int64_t kTilePixels = 12; // padded-grid pixels per register tile
inline constexpr int64_t kTileChannels = 32; // output channels per register tile (two zmm)

bool haveAvx512();

// For the 12 output pixels i and the 32 output channels j of one block:
//   out[i·32 + j] = Σ_t Σ_ic band[i·pixelStride + tapOffsets[t]·channels + ic] · packedW[(t·channels + ic)·32 + j]
// with `band` pointing at pixel i = 0's first input (channels-minor layout: pixelStride = channels for stride 1,
// stride·channels otherwise) and out 12 × 32 contiguous. Only when haveAvx512().
void tapTile12x32(const float* packedW, const float* band, const int64_t* tapOffsets, int64_t taps, int64_t channels,
    int64_t pixelStride, float* out);

// dst[j·dstStride + i] = src[i·srcStride + j] (+ add[j] when add is not null), i, j < 16. Only when haveAvx512().
void transpose16x16(const float* src, int64_t srcStride, float* dst, int64_t dstStride, const float* add);

} // namespace convscope::cpu::fast::avx512
