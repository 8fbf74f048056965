// The cuda backend's dispatch of the layers that run in a session's storage format themselves (FP32 channels-last in
// tf32, FP16 or BF16 channels-last in fp16 and bf16; compute/storage_format.h): every non-convolution kind, 2-D and
// 3-D, and — under cuda.direct and cuda.tensor_core — the convolutions (conv2d, conv_transpose2d, conv3d,
// conv_transpose3d) on the storage-format gather kernels of stored_conv.cuh. The session (cuda_backend.cpp) answers
// runsInStorage with runsNativelyInStorage and hands such a layer's tensors here; the kernels are in
// stored_layers.cuh, stored_conv.cuh and linear.cuh. cuda.tensor_core's own conv2d kernel is dispatched by the
// session itself, before this (the convolutions here are the layers it refuses: grouped and depthwise ones).
//
// Why only those two algorithms for the convolutions: cuda.tiled, implicit_gemm, winograd and fft name an FP32
// algorithm of the convolution, which a half-precision run keeps (on FP32 copies; the layer note says so) so that it
// can be compared; cuda.direct is the one-thread-per-output family these kernels belong to, and cuda.tensor_core is
// the selection whose whole network runs in the format.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace convscope::cuda {

struct StoredLayerCall {
    DType type = DType::F32;
    std::vector<const void*> inputs; // in the order the layer names them, in `type`, channels-last
    void* output = nullptr;
    const float* weight = nullptr; // FP32: prelu's slopes
    const void* weightData = nullptr; // in `type`: linear's W [out, in]
    const float* bias = nullptr; // FP32
    void* scratch = nullptr; // batch norm's folded [scale(C), shift(C)]; linear's split-K partial sums; a
                             // convolution's prepared weights (prepareStoredConvolution)
    int sms = 1;
};

// True for the kinds with a storage-format kernel here under every algorithm: the activations, hardtanh, prelu, batch
// norm, the pools (2-D and 3-D, global average included), add, mul, concat, pad, resize, softmax and linear.
bool runsNativelyInStorage(const LayerSpec& spec);
// The rule the session asks: the above, and the convolutions under cuda.direct and cuda.tensor_core (see the top).
bool runsNativelyInStorage(const LayerSpec& spec, const std::string& algorithm);
// A convolution (conv2d, conv_transpose2d, conv3d, conv_transpose3d) that runs in storage needs the scratch
// storedConvolutionScratchBytes says, filled once by prepareStoredConvolution, which returns the layer's note.
size_t storedConvolutionScratchBytes(const LayerSpec& spec, const LayerShape& shape);
std::string prepareStoredConvolution(
    const LayerSpec& spec, const LayerShape& shape, DType type, const float* weight, void* scratch, cudaStream_t st);
// Enqueues layer `spec` of shape `shape` on `st` (only for kinds runsNativelyInStorage accepts).
void runStoredLayer(const LayerSpec& spec, const LayerShape& shape, const StoredLayerCall& call, cudaStream_t st);

} // namespace convscope::cuda
