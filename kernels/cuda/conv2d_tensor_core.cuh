// conv2d on Tensor Cores (cuda.tensor_core, issue 20): an implicit GEMM on mma.sync for the tf32, fp16 and bf16 math
// modes, reading and writing the session's channels-last storage (compute/storage_format.h). The kernel and the
// reasons for its shape are in conv2d_tensor_core.cu. Host-side launchers only, so cuda_backend.cpp can include this.
#pragma once

#include "compute/storage_format.h"
#include "kernels/cuda/conv2d.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::cuda {

// Empty when the Tensor Core kernel runs this layer (one group); else why not (the layer then runs the FP32 implicit
// GEMM on FP32 copies).
std::string conv2dTensorCoreRefusal(const ConvGeometry& g);
// The layer's scratch: the weights packed for the kernel ([K][R·S·C padded], in the storage type; TF32-rounded in
// tf32 mode) and, when the grid would under-fill the device, the FP32 partial sums of the split reduction.
// `tile`: 0 lets the launcher choose the block shape; conv2dTensorCoreParseTile's answer forces one (--option
// tc_tile=128x64|128x128|128x128w8|256x64). `kBytes`: 0, or 64 / 128 bytes of reduction a k-tile row (--option
// tc_kbytes=64|128). Both for measuring what a shape buys; the parsers throw InputError naming the choices.
int conv2dTensorCoreParseTile(const std::string& text);
int conv2dTensorCoreParseKBytes(const std::string& text);
size_t conv2dTensorCoreScratchBytes(const ConvGeometry& g, DType type, int smCount, int tile, int kBytes);
// Packs `w` ([K, C, R, S] in the storage type, on the device) into the scratch. Once per layer.
void conv2dTensorCorePrepare(const ConvGeometry& g, DType type, int tile, int kBytes, const void* w, void* scratch,
    int smCount, cudaStream_t st);
// Which tile and split the launcher picks ("fp16 mma.sync m16n8k16, 128x128x32 tiles, 4-stage cp.async, split-K 4").
std::string conv2dTensorCoreNote(const ConvGeometry& g, DType type, int smCount, int tile, int kBytes);
// x: [N, H, W, C] and y: [N, P, Q, K] in `type` (channels-last); bias FP32 (or null); scratch as prepared.
void conv2dTensorCore(const ConvGeometry& g, DType type, int tile, int kBytes, const void* x, const float* bias,
    void* y, void* scratch, int smCount, cudaStream_t st);

} // namespace convscope::cuda
