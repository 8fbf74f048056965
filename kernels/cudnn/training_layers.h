// The cudnn training session's class (training_session.h), shared by its sources: training_session.cpp (its
// algorithms, batch norm's buffers, the data-parallel step) and training_layers.cpp (per layer kind: the refusal, the
// plan — descriptors, algorithms — and the forward, backward-data and backward-weights calls); the flow (prepare, the
// step, the phased step, timing, flags, reset, the host copies) is gpu::GpuTrainingSession's
// (kernels/common/gpu_training_session.h), shared with the cuda session.
//
// What each kind runs (FP32 NCHW tensors; FP32 math: CUDNN_FMA_MATH and cuBLAS's pedantic math, never TF32 — or,
// with --math tf32, CUDNN_DEFAULT_MATH and CUBLAS_TF32_TENSOR_OP_MATH for the convolutions and GEMMs; with --math fp16
// or bf16, mixed precision as PyTorch's autocast: HALF / BFLOAT16 tensors with FP32 sums, CUDNN_TENSOR_OP_MATH,
// cublasGemmEx, batch norm on FP32 γ, β and statistics, FP32 masters for every parameter (gpu_training_session.h);
// prelu, whose slope kernels take FP32 only, is refused there):
//   conv2d            cudnnConvolutionForward + cudnnAddTensor (bias); cudnnConvolutionBackwardData,
//                     cudnnConvolutionBackwardFilter, cudnnConvolutionBackwardBias. The three algorithms are chosen
//                     once in prepare with cudnnFind*Algorithm (FMA math only, workspace within the limit; a pinned
//                     selection pins the forward), one workspace for the session.
//   linear            cublasSgemm for the forward, backward-data and backward-weights; the bias gradient (Σ over the
//                     batch) by cudnnConvolutionBackwardBias on [N, out, 1, 1].
//   batchnorm2d       cudnnBatchNormalizationForwardTraining (spatial; exponentialAverageFactor = PyTorch's momentum;
//                     cuDNN moves the running variance toward the unbiased batch variance, as PyTorch does) and
//                     cudnnBatchNormalizationBackward, which gives dx, dγ and dβ in one call: timed as backward-data
//                     (backward-weights then reads 0), or as backward-weights when no input gradient is needed.
//   relu, sigmoid, tanh, elu   cudnnActivationForward / cudnnActivationBackward.
//   leaky_relu, relu6, hardswish, hardsigmoid, silu, hardtanh   forward by kernels/cuda/activation.cu (hardtanh:
//                     parametric_activation.cu), backward by our kernel (training_kernels.cuh) with PyTorch's kinks.
//   prelu             forward by kernels/cuda/parametric_activation.cu; gx by training_kernels.cuh; the slopes'
//                     gradient summed in double over runs (kernels/cuda/training/channel_reduce.cuh).
//   maxpool2d, avgpool2d, global_avgpool2d   cudnnPoolingForward / cudnnPoolingBackward (max: the deterministic
//                     mode) where cuDNN's windows are exactly PyTorch's: symmetric padding, no extra ceil_mode window,
//                     no dilation, no divisor_override; the rest is refused.
//   softmax           cudnnSoftmaxForward / cudnnSoftmaxBackward (accurate, over channels).
//   flatten, identity views (the output is the input's buffer); the gradient too when the input has one reader.
//   add               a copy and cudnnAddTensor; the gradient is copied to every input.
//   mul (same shapes) cudnnOpTensor; each factor's gradient gy · the other by cudnnOpTensor.
//   concat            cudaMemcpy2DAsync into / out of each input's channel window (a row per image).
//   conv_transpose2d  the same three algorithms with the roles swapped: cudnnConvolutionBackwardData forward,
//                     cudnnConvolutionForward for backward-data, cudnnConvolutionBackwardFilter with the output's
//                     gradient as cuDNN's x; symmetric padding and an output_padding cuDNN's sizes agree with only.
//   dropout           the CPU's mask exactly (ConvScope's seeded generator on the host, copied up inside the forward);
//                     y = x·mask, gx = gy·mask by cudnnOpTensor.
// Refused in prepare with the layer and kind named: pad, mul with a broadcast gate, the volume kinds, a fused
// activation, asymmetric convolution padding, and the pools cuDNN cannot make PyTorch's (see cudnnTrainingRefusal).
#pragma once

#include "compute/training/training.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/gpu_training_session.h"
#include "kernels/common/training_kernels.cuh"
#include "kernels/cudnn/cudnn_support.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace convscope::cudnn {

// The shared training kernels (kernels/common/training_kernels.cuh) under the name this module's sources use.
namespace train = gpu::train;

// "layer 3 (c1, conv2d)".
std::string trainLayerLabel(const Network& net, size_t i);
// Why the cudnn session cannot train layer i (empty: it can); maxpool2d's windows matter only on cuDNN's pooling.
std::string cudnnTrainingRefusal(const Network& net, const ShapeReport& shapes, size_t i, bool maxPoolOnCudnn);

// The activations that train through cuDNN's activation API, and those on our kernels (PyTorch's kinks).
template <typename T>
inline constexpr bool kCudnnActivation
    = std::is_same_v<T, ReLU> || std::is_same_v<T, Sigmoid> || std::is_same_v<T, Tanh> || std::is_same_v<T, ELU>;
template <typename T>
inline constexpr bool kOurActivation
    = std::is_same_v<T,
          LeakyReLU> || std::is_same_v<T, ReLU6> || std::is_same_v<T, Hardswish> || std::is_same_v<T, Hardsigmoid> || std::is_same_v<T, SiLU> || std::is_same_v<T, Hardtanh>;

// One layer's descriptors and algorithms; its parameters, gradients (gW / gB: a bucket's window under data parallel),
// optimizer state, masks and timing are gpu::TrainLayerState's (saveMean / saveInvStd: cuDNN's saved results, float).
struct TrainLayer : gpu::TrainLayerState {
    gpu::DeviceBuffer dummyScale, dummyBias; // batch norm: dγ, dβ of a non-affine layer
    gpu::DeviceBuffer maskStorage; // dropout in mixed precision: the mask in the storage type
    const void* maskIn() const { return maskStorage.get() ? maskStorage.get() : mask.get(); }
    // descriptors
    std::unique_ptr<TensorDesc> xd, yd, pd;
    std::unique_ptr<FilterDesc> wd;
    std::unique_ptr<ConvDesc> cd;
    std::unique_ptr<PoolDesc> pool;
    std::unique_ptr<ActivationDesc> act;
    std::unique_ptr<OpTensorDesc> op;
    cudnnConvolutionFwdAlgo_t fwdAlgo {};
    cudnnConvolutionBwdDataAlgo_t bwdDataAlgo {};
    cudnnConvolutionBwdFilterAlgo_t bwdFilterAlgo {};
    // The math type cudnnFind measured each algorithm in (its perf result's), set on the descriptor before each call,
    // as PyTorch does: run in another math type, an algorithm may need more workspace than Find reported (cuDNN said
    // so for a backward-data algorithm under --math fp16 under compute-sanitizer on the H200, 2026-11-29).
    cudnnMathType_t fwdMath = CUDNN_FMA_MATH, bwdDataMath = CUDNN_FMA_MATH, bwdFilterMath = CUDNN_FMA_MATH;
};

class CudnnTrainingSession final : public gpu::GpuTrainingSession<TrainLayer> {
public:
    CudnnTrainingSession(std::string algorithm, SessionOptions options);

private:
    // training_layers.cpp
    void planLayer(size_t i, cudnnHandle_t h); // descriptors, algorithms (untimed)
    void forward(size_t i, const Handles& h);
    // The gradient of layer k's input j into `gx` (every element written).
    void backwardData(size_t k, size_t j, void* gx, const Handles& h);
    // dW and db of layer k (not batch norm).
    void backwardWeights(size_t k, const Handles& h);
    // dγ, dβ and (gx not null) dx of batch norm k.
    void batchNormBackward(size_t k, void* gx, const Handles& h);
    // training_conv_algorithms.cpp: the three algorithms of a convolution, by cudnnFind (untimed).
    void chooseConvAlgorithms(size_t i, cudnnHandle_t h);
    // --math tf32: the convolutions may run on TF32 Tensor Cores (CUDNN_DEFAULT_MATH on FP32 data, as PyTorch's
    // allow_tf32) and cuBLAS on CUBLAS_TF32_TENSOR_OP_MATH; everything else stays FP32.
    // --math fp16 / bf16: mixed precision, Tensor Core convolutions (CUDNN_TENSOR_OP_MATH on HALF / BFLOAT16 data).
    bool tf32() const { return m_options.math == MathMode::TF32; }
    bool tensorCores() const { return tf32() || mixed(); }
    cudnnMathType_t convMath() const
    {
        return mixed() ? CUDNN_TENSOR_OP_MATH : tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    }
    std::string mathWords() const
    {
        return mixed() ? std::string(dtypeName(m_storage)) : tf32() ? "FP32 or TF32" : "FP32 (FMA)";
    }

    // The shared flow's hooks (gpu_training_session.h), on this thread's handles (m_handles, set by passStarts).
    void planLayer(size_t i) override { planLayer(i, m_handles->cudnn); }
    void forward(size_t i) override { forward(i, *m_handles); }
    void backwardData(size_t k, size_t j, void* gx) override { backwardData(k, j, gx, *m_handles); }
    void backwardWeights(size_t k) override { backwardWeights(k, *m_handles); }
    void batchNormBackward(size_t k, void* gx) override { batchNormBackward(k, gx, *m_handles); }
    // Mixed precision: the convolutions and linear layers read their parameters in the storage type.
    bool storageParameters(size_t i) const override;
    // training_session.cpp
    std::string refusal(const Network& net, const ShapeReport& shapes, size_t i) const override;
    void prepareLayer(size_t i) override; // batch norm's saved results and a non-affine layer's dγ, dβ
    // Data parallel: rank 0's convolution algorithms on every rank (training_distributed.cpp). Each rank's cudnnFind
    // times its own GPU, and two ranks that pick differently for one layer (bf16's DCGAN: one rank's step 25 % longer
    // in its GPU time) run at the slower one's pace, since every all-reduce waits for both.
    void afterPlanning() override;
    // This thread's handles on the session's stream, cuBLAS in pedantic FP32 (never TF32 through a default) or, with
    // --math tf32, TF32.
    void passStarts() override;
    void extraMetadata(std::map<std::string, std::string>& m) const override;
    std::string workspaceWhat() const override;

    int smCount() const { return m_sms; } // the device's multiprocessors (the per-channel sums' plan)

    std::optional<cudnnConvolutionFwdAlgo_t> m_pinned;
    // maxpool2d on our kernels (the default, --option max_pool=ours), as PyTorch runs its own max_pool2d_with_indices
    // and never cuDNN's pooling: cuDNN's deterministic max-pooling backward took 0.61 ms on ResNet-18's 112² pool at
    // batch 32 (H200), PyTorch's 0.29. --option max_pool=cudnn keeps cudnnPoolingForward / Backward.
    bool m_maxPoolOnCudnn = false;
    int m_sms = 0;
    size_t m_workspaceLimit = 0;
    Handles* m_handles = nullptr;
};

} // namespace convscope::cudnn
