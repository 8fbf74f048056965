// Internal to compute/cpu: AVX-512 rows of resize's fast path (resize_avx512.cpp, used by resize.cpp). Only when
// avx512::haveAvx512() (conv2d_tap_avx512.h).
#pragma once

#include <cstdint>
#include <vector>

namespace convscope::cpu::fast::avx512 {

// The x taps of one resize (resize_math.h's, `taps` per output: 1, 2 or 4) in blocks of 16 neighbouring outputs.
// Block b reads, for tap t, the inputs base[b] + offset[(b · taps + t) · 16 + lane] with weight[same]; where all its
// taps lie within 32 inputs of base[b] (upsampling, mild downsampling) it permutes two loaded vectors
// (window[b] = 1; narrow[b] = 1 where they lie within 16: one vector), else it gathers.
struct ResizeColumns {
    int taps = 1;
    int64_t width = 0, inWidth = 0;
    bool windowed = true; // every block within a window
    std::vector<int64_t> base;
    std::vector<uint8_t> window, narrow;
    std::vector<int32_t> offset;
    std::vector<float> weight;
};
// From the packed taps (idx and w: `taps` per output x < width, each index < inWidth). Only for inWidth < 2^31 − 16
// (canResize).
ResizeColumns resizeColumns(const int64_t* idx, const float* w, int taps, int64_t width, int64_t inWidth);
inline bool canResize(int64_t inWidth) { return inWidth < (int64_t(1) << 31) - 16; }

// One output row: line[x] = Σ_t weight · src[tap] for x < width, where src is the blend of the `count` input rows
// with rowWeight (count 1 with weight 1: the row as it is), the terms added in row and then tap order as the scalar
// path does (nearest: the copy). Where every block is within a window each block blends its own window; else the
// rows are blended into `blend` (inWidth floats) first. The input row after the last is asked for meanwhile (a later
// output row reads it; the hardware prefetchers stop at each 4 KiB page). `stream`: non-temporal stores for the
// aligned vectors (detail::streamOutput); the caller fences.
void resizeLine(const ResizeColumns& c, const float* const* rows, const float* rowWeight, int count, float* blend,
    float* line, bool stream);

// out[i] = Σ_r weight[r] · rows[r][i] for i < n: the input rows one output row reads, blended (and the row after the
// last asked for).
void blendRows(const float* const* rows, const float* weight, int count, int64_t n, float* out);

} // namespace convscope::cpu::fast::avx512
