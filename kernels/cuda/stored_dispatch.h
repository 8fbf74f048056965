// The cuda backend's dispatch of the layers that run in a session's storage format themselves (FP32 channels-last in
// tf32, FP16 or BF16 channels-last in fp16 and bf16; compute/storage_format.h): every non-convolution 2-D kind. The
// session (cuda_backend.cpp) answers runsInStorage with runsNativelyInStorage and hands such a layer's tensors here;
// the kernels are in stored_layers.cuh and linear.cuh. Convolutions are dispatched by the session itself.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "compute/storage_format.h"

#include <cuda_runtime_api.h>

#include <vector>

namespace convscope::cuda {

struct StoredLayerCall {
    DType type = DType::F32;
    std::vector<const void*> inputs; // in the order the layer names them, in `type`, channels-last
    void* output = nullptr;
    const float* weight = nullptr; // FP32: prelu's slopes
    const void* weightData = nullptr; // in `type`: linear's W [out, in]
    const float* bias = nullptr; // FP32
    void* scratch = nullptr; // batch norm's folded [scale(C), shift(C)]; linear's split-K partial sums
    int sms = 1;
};

// True for the kinds with a storage-format kernel here: the activations, hardtanh, prelu, batchnorm2d, the 2-D
// pools, add, mul, concat, pad, softmax and linear.
bool runsNativelyInStorage(const LayerSpec& spec);
// Enqueues layer `spec` of shape `shape` on `st` (only for kinds runsNativelyInStorage accepts).
void runStoredLayer(const LayerSpec& spec, const LayerShape& shape, const StoredLayerCall& call, cudaStream_t st);

} // namespace convscope::cuda
