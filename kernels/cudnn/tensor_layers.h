// matmul and gather on the cudnn backend (issue 30). cuDNN has neither; matmul runs on cuBLAS
// (cublasGemmStridedBatchedEx, FP32 operands and sums, TF32 Tensor Cores only under math tf32) where each operand's
// batch matrices lie at one stride (a whole batch, or one matrix broadcast over it), and on our batched GEMM
// (kernels/cuda/matmul.cu) for the other broadcasts; gather runs our copy kernel. Both on FP32 NCHW data (in a
// storage format, on the session's FP32 copies). The layer note says which ran.
#pragma once

#include "compute/backend.h"
#include "compute/layer_spec.h"
#include "compute/shape_inference.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

namespace convscope::cudnn {

// Untimed, at prepare: gather's indices into `scratch` (kernels/cuda/tensor_kinds.h); the layer note.
std::string prepareTensorLayer(
    const LayerSpec& spec, const LayerShape& s, MathMode math, void* scratch, cudaStream_t st);
// One pass on FP32 tensors: x the first input, x2 the second (null for gather and a matmul by a constant), `constant`
// matmul's constant operand (the layer's weight).
void runTensorLayer(cublasHandle_t h, MathMode math, const LayerSpec& spec, const LayerShape& s, const float* x,
    const float* x2, const float* constant, const void* scratch, float* y, cudaStream_t st);

// The cudnn training session's refusal of these kinds and of linear on the last axis of rank 3 and up (no backward on
// cudnn yet; training_layers.cpp); empty for every other layer.
std::string tensorTrainingRefusal(const LayerSpec& spec, const LayerShape& s);

} // namespace convscope::cudnn
