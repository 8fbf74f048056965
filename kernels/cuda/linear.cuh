// Our CUDA fully connected layer: a GEMV with split-K for small batches (on Tensor Cores in tf32, fp16 and bf16), a
// tiled SGEMM otherwise.
#pragma once

#include "compute/backend.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::cuda {

// y[n, o] = bias[o] + Σ_i x[n, i] · W[o, i]; x [rows, in], W [out, in], y [rows, out]. `scratch` holds
// linearScratchBytes (the split-K partial sums of a big layer; null runs it unsplit), `sms` the device's SMs.
void linear(int rows, int in, int out, const float* x, const float* w, const float* bias, float* y, void* scratch,
    int sms, cudaStream_t st);
// The same in a session's storage format: x, W and y in `type` (FP32, FP16, BF16), the bias and the sums FP32. FP32
// storage is tf32's (compute/storage_format.h): up to 32 rows run on TF32 Tensor Cores there, as in fp16 and bf16.
void linearStored(int rows, int in, int out, DType type, const void* x, const void* w, const float* bias, void* y,
    void* scratch, int sms, cudaStream_t st);
// Slices of `in` a layer is split into (1: none) in math mode `math`, and the FP32 partial sums they need.
int linearSplits(int rows, int in, int out, int sms, MathMode math = MathMode::FP32);
size_t linearScratchBytes(int rows, int in, int out, int sms, MathMode math = MathMode::FP32);
// "warp per 4 outputs (GEMV), 16-byte loads, split-K over 5 slices of the inputs", "tiled SGEMM 64x64", or the
// Tensor Core path's ("Tensor Cores (mma.sync m16n8k16, FP32 sums), ...") in tf32, fp16 and bf16 at up to 32 rows.
std::string linearNote(int rows, int in, int out, int sms, MathMode math = MathMode::FP32);

} // namespace convscope::cuda
