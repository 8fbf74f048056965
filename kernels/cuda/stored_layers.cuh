// The cuda backend's non-convolution layers in a session's storage format (compute/storage_format.h): FP32,
// FP16 or BF16 values (`type`), channels-last (NHWC; a [N, F] tensor is the same in both layouts), loaded as their
// type, computed in FP32, stored as their type. Parameters (slopes, folded batch-norm statistics, biases) stay FP32.
// The FP32 NCHW kernels of the same layers are declared beside their ops (elementwise.cuh, pooling.cuh, ...); each
// function here is defined in its op's .cu file, templated on the storage type with the FP32 kernel where the
// layout does not matter.
#pragma once

#include "compute/storage_format.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/merge.cuh"
#include "kernels/cuda/pooling.cuh"
#include "kernels/cuda/pooling3d.cuh"

#include <cuda_runtime_api.h>

#include <vector>

namespace convscope::cuda {

// activation.cu: y = f(x), element by element (layout-free).
void activationStored(
    ActivationKind kind, float param, long long count, DType type, const void* x, void* y, cudaStream_t st);
// parametric_activation.cu: hardtanh (layout-free); prelu with the channel innermost (c = i mod channels).
void hardtanhStored(float lo, float hi, long long count, DType type, const void* x, void* y, cudaStream_t st);
void preluChannelsLast(const float* slopes, long long slopeCount, long long count, long long channels, DType type,
    const void* x, void* y, cudaStream_t st);
// batchnorm2d.cu: y = x·scale[c] + shift[c], c = i mod channels; `folded` from batchNormFold.
void batchNormChannelsLast(
    long long count, int channels, DType type, const void* x, const float* folded, void* y, cudaStream_t st);
// maxpool2d.cu, avgpool2d.cu: the FP32 kernels' windows and PyTorch's rules, on [n, h, w, c] → [n, p, q, c].
void maxPool2dChannelsLast(const PoolGeometry& g, DType type, const void* x, void* y, cudaStream_t st);
void avgPool2dChannelsLast(const PoolGeometry& g, DType type, const void* x, void* y, cudaStream_t st);
// stored_pool3d.cu: maxpool3d.cu's and avgpool3d.cu's windows and rules on [n, d, h, w, c] → [n, od, oh, ow, c].
void maxPool3dChannelsLast(const Pool3dGeometry& g, DType type, const void* x, void* y, cudaStream_t st);
void avgPool3dChannelsLast(const Pool3dGeometry& g, DType type, const void* x, void* y, cudaStream_t st);
// global_avgpool2d.cu: [n, positions, c] → [n, c] (positions = H·W, or D·H·W for a volume).
void globalAvgPool2dChannelsLast(
    int n, int channels, int positions, DType type, const void* x, void* y, cudaStream_t st);
// merge.cu: add (summed in FP32 in the order given, rounded once per launch of up to 8 inputs), mul (`channels` > 0:
// b is a [n, channels] gate broadcast over the positions of a [n, positions, channels] a; 0: b is as large as a),
// concat along the channels (input k's channels[k] values of each of the `positions` = n·h·w positions go to
// channels offset.. of the output's position) and pad (every mode of pad2d).
void addStored(const std::vector<const void*>& xs, long long count, DType type, void* y, cudaStream_t st);
void mulStored(const void* a, const void* b, long long count, long long channels, long long positions, DType type,
    void* y, cudaStream_t st);
void concatChannelsLast(const std::vector<const void*>& xs, const std::vector<long long>& channels, long long positions,
    DType type, void* y, cudaStream_t st);
void pad2dChannelsLast(const void* x, long long n, long long channels, int h, int w, int top, int left, int oh, int ow,
    PadMode mode, float value, DType type, void* y, cudaStream_t st);

} // namespace convscope::cuda
