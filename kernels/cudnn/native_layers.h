// The conv2d and linear layers of a cudnn session in a Tensor Core mode (tf32, fp16, bf16), running natively on the
// session's channels-last storage (compute/storage_format.h), beside volume_layers.h's 3-D kinds:
//
//   conv2d  cuDNN reads the input and writes the output where they are, with NHWC descriptors of the storage type
//           (CUDNN_DATA_FLOAT for tf32, HALF, BFLOAT16), an FP32 compute type and tensor-op math, on the legacy
//           API's Find choice or the graph API's fastest engine (cudnn.auto races them, conv_plan.h). The weight is
//           converted once, at plan time, to [K, R, S, C/g] in the storage type. A bias rides in
//           cudnnConvolutionBiasActivationForward (in the storage type, as cuDNN requires for half data) where the
//           legacy algorithm allows it; otherwise the FP32 bias and any fused activation are one pass of ours.
//           Asymmetric padding (which cuDNN's descriptors cannot say) is a pad step into scratch in the storage type
//           (a copy, volume_kernels.cuh), then cuDNN with padding 0 — as the FP32 path does.
// conv_transpose2d and the 3-D kinds run natively the same way in conv_layers.h and volume_layers.h.
//   linear  cublasGemmEx on the storage type with FP32 accumulation (TF32 operands for tf32), no reduced-precision
//           reductions, then the FP32 bias in one pass of ours.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "compute/storage_format.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/cudnn_support.h"
#include "kernels/cudnn/storage_kernels.cuh"

#include <memory>
#include <optional>
#include <string>

namespace convscope::cudnn {

// Scratch for the [K, R, S, C/g] weight and the bias, both in the storage type, and the padded input of the pad step.
size_t nativeConvScratchBytes(const Conv2d& spec, const LayerShape& shape, DType storage);

struct NativeConvPlan {
    ConvLayout layout;
    ConvDescriptors d;
    AlgoChoice choice;
    const void* weight = nullptr; // [K, R, S, C/g] in scratch
    void* padded = nullptr; // the pad step's output in scratch (asymmetric padding only)
    const void* bias = nullptr; // in the storage type, for cuDNN's fused call
    std::unique_ptr<ActivationDesc> act; // the fused call's activation (identity or relu)
    bool fusedBias = false; // cudnnConvolutionBiasActivationForward
    bool pass = false; // our bias/activation pass follows
    EpilogueAct passAct = EpilogueAct::None;
    float actParam = 0;
    std::string note;
};

// Plans the layer: converts the weight (and bias) on `stream`, chooses the algorithm (pinned, or auto: Find and the
// graph API's engines timed on the buffers, whose contents are overwritten). `b` holds the storage-type tensors and
// nativeConvScratchBytes of scratch. `who` names the layer in messages.
std::unique_ptr<NativeConvPlan> planNativeConv(cudnnHandle_t h, const Conv2d& spec, const LayerShape& shape,
    DType storage, const ConvOptions& o, std::optional<cudnnConvolutionFwdAlgo_t> pinned, bool fuseBias,
    const LayerBuffers& b, cudaStream_t stream, const std::string& who);

void runNativeConv(const NativeConvPlan& p, cudnnHandle_t h, const LayerBuffers& b, void* workspace,
    size_t workspaceBytes, cudaStream_t stream);

// y[n, out] = x[n, in] · W[out, in]ᵀ + bias on [N, F] tensors of the storage type.
void runNativeLinear(cublasHandle_t h, const LayerShape& shape, DType storage, MathMode math, const void* w,
    const void* x, void* y, const float* bias, cudaStream_t stream);
std::string nativeLinearNote(DType storage, MathMode math);

} // namespace convscope::cudnn
