// Our CUDA kernels of the normalization kinds (layer_norm, group_norm, instance_norm): compute/normalization.h's plan,
// `rows` contiguous rows of `rowLength` FP32 elements, each normalised by its own mean and biased variance and then
// scaled and shifted by its elements' parameters. Compiled into the cuda and the cudnn modules (cuDNN has no call for
// any of the three).
#pragma once

#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::cuda {

struct NormGeometry {
    long long rows = 0, rowLength = 0;
    long long groups = 1,
              inner = 1; // parameter of element j of row r: (r mod groups) · (rowLength / inner) + j / inner
    float eps = 1e-5f;
};

// Device scratch the layer needs (the per-chunk statistics of the split-row path; 0 for the other paths).
size_t normalizationScratchBytes(const NormGeometry& g, int sms);
// y = (x − mean) / √(var + eps) · weight[p] + bias[p], FP32 in and out, FP32 sums.
void normalization(const NormGeometry& g, const float* x, const float* weight, const float* bias, float* y,
    void* scratch, int sms, cudaStream_t st);
// In a session's storage format: x and y channels-last [n, positions, channels] in `type` (FP32, FP16, BF16; the
// plan's rows are those of the NCHW order, each element found at its channels-last place), loads widened to FP32, FP32
// sums, one rounding per stored value. A warp per row up to 2048 elements, else a block per row.
void normalizationStored(const NormGeometry& g, long long channels, long long positions, DType type, const void* x,
    const float* weight, const float* bias, void* y, cudaStream_t st);
// Which path runs the layer, for the layer note.
std::string normalizationNote(const NormGeometry& g, int sms);

} // namespace convscope::cuda
