// The cudnn training session's class (training_session.h), shared by its two sources: training_session.cpp (prepare,
// the step's flow, timing, reset, the host copies) and training_layers.cpp (per layer kind: the refusal, the plan —
// descriptors, algorithms — and the forward, backward-data and backward-weights calls).
//
// What each kind runs (FP32 NCHW tensors, FP32 math: CUDNN_FMA_MATH and cuBLAS's pedantic math, never TF32):
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
//   prelu             forward by kernels/cuda/parametric_activation.cu; gx and the slopes' gradient (summed in double,
//                     one block per slope) by our kernels.
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
#include "kernels/common/training_kernels.cuh"
#include "kernels/cudnn/cudnn_support.h"
#include "kernels/cudnn/training_distributed.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace convscope::cudnn {

// The shared training kernels (kernels/common/training_kernels.cuh) under the name this module's sources use.
namespace train = gpu::train;

// "layer 3 (c1, conv2d)".
std::string trainLayerLabel(const Network& net, size_t i);
// Why the cudnn session cannot train layer i (empty: it can).
std::string cudnnTrainingRefusal(const Network& net, const ShapeReport& shapes, size_t i);

struct TrainLayer {
    // The session's parameters, running statistics, gradients and optimizer state, on the device.
    gpu::DeviceBuffer weight, bias, mean, var, gradWeight, gradBias;
    // Where the gradients are written: gradWeight / gradBias, or under data parallel a window of the bucket's flat
    // buffer (training_distributed.h), so the all-reduce needs no copy.
    float *gW = nullptr, *gB = nullptr;
    gpu::DeviceBuffer firstW, secondW, firstB, secondB; // SGD: momentum buffer in first; Adam: exp_avg, exp_avg_sq
    int64_t weightCount = 0, biasCount = 0;
    bool trainWeight = false, trainBias = false;
    bool started = false; // the optimizer has stepped (SGD's momentum buffer is set)
    // The phased step (training_phased.cpp): the gradients summed over backwardPass calls since zeroGradients.
    gpu::DeviceBuffer sumW, sumB;
    bool summed = false;
    // batch norm: the forward's batch mean and 1/std (cuDNN's saved results), and dγ, dβ of a non-affine layer
    gpu::DeviceBuffer saveMean, saveInvStd, dummyScale, dummyBias;
    gpu::DeviceBuffer mask; // dropout: this step's mask (0 or 1 / (1 − p)), drawn on the host
    std::vector<float> hostMask;
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
    std::string note; // what runs, for metadata
    std::array<std::string, 4> ranges; // NVTX names of the four phases
    std::array<gpu::CudaEvent, 8> events; // start and stop of each phase
    std::array<bool, 4> timed {}; // which phases ran this step
};

class CudnnTrainingSession final : public TrainingSession {
public:
    CudnnTrainingSession(std::string algorithm, SessionOptions options);
    ~CudnnTrainingSession() override;

    void prepare(const Network& net, const ShapeReport& shapes, const TrainingOptions& options) override;
    StepResult step(const Tensor& input, const Tensor& target, int64_t step) override;
    void reset() override;
    Network trainedNetwork() const override;
    Tensor parameterGradient(const ParameterRef& ref) const override;
    Tensor inputGradient() const override;
    std::vector<ParameterRef> parameters() const override;
    std::map<std::string, std::string> metadata() const override;
    bool dataParallel() const override;
    // training_phased.cpp: the phased step (training.h) for loops such as the DCGAN pair's; one GPU only.
    Tensor forwardPass(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times) override;
    void zeroGradients() override;
    void backwardPass(const Tensor& outputGradient, int64_t step, std::vector<LayerPhaseMs>& times) override;
    void updateParameters(int64_t step, std::vector<LayerPhaseMs>& times) override;

private:
    // training_distributed.cpp: the communicator (once), the buckets, and the gradients moved into them.
    void prepareDataParallel();
    // After layer k's backward: launch the buckets it completes.
    void bucketsReadyAfter(size_t k);
    // After the backward: each bucket's layers' updates, each waiting for its bucket's average.
    void updatesAfterBuckets(const std::vector<char>& has, int64_t step, const std::function<void(size_t)>& update);

    // training_layers.cpp
    void planLayer(size_t i, cudnnHandle_t h); // descriptors, algorithms (untimed)
    void forward(size_t i, const Handles& h);
    // The gradient of layer k's input j into `gx` (every element written).
    void backwardData(size_t k, size_t j, float* gx, const Handles& h);
    // dW and db of layer k (batch norm: also dx into `gx`, null when the input gradient is not needed).
    void backwardWeights(size_t k, const Handles& h);
    void batchNormBackward(size_t k, float* gx, const Handles& h);
    void chooseConvAlgorithms(size_t i, cudnnHandle_t h);

    // training_session.cpp
    // One phase (0 forward, 1 backward-data, 2 backward-weights, 3 update) of layer i between its two events, inside
    // its NVTX range.
    void timedPhase(size_t i, int p, const std::function<void()>& work);
    // Layer k's backward-data and backward-weights phases and its finiteness flags; `has` / `inputHas` say which
    // gradients hold a value already (a second reader's is added on through a scratch buffer).
    void backwardLayer(size_t k, std::vector<char>& has, char& inputHas, const Handles& h);
    void readTimes(std::vector<LayerPhaseMs>& times) const; // the phases timed since `timed` was cleared
    // Synchronises; throws InputError naming the step and the first layer (in backward order) whose flag is set.
    void throwIfGradientFlagged(int64_t step) const;
    // training_phased.cpp: the stream on the handles, `timed` cleared.
    Handles& beginPass();
    const float* in(size_t i, size_t j) const; // layer i's j-th input (the network's input or an earlier output)
    bool batchNormGivesData(size_t k) const; // the backward-data phase of batch norm k runs cuDNN's call
    void upload(gpu::DeviceBuffer& dst, const std::shared_ptr<const Tensor>& src, const char* what);
    void update(size_t k, int64_t step);
    void flagGradients(size_t k, const std::vector<char>& has, bool inputHas);
    void makeCurrent() const;
    std::unique_ptr<Tensor> download(const gpu::DeviceBuffer& src, const Shape& shape) const;

    std::string m_algorithm, m_prefix; // "auto", "cudnn.auto"
    SessionOptions m_options;
    std::optional<cudnnConvolutionFwdAlgo_t> m_pinned;
    size_t m_workspaceLimit = 0;
    int m_device = 0;
    std::unique_ptr<gpu::CudaStream> m_stream;
    Network m_net, m_initial;
    ShapeReport m_shapes;
    TrainingOptions m_train;
    std::vector<TrainLayer> m_layers;
    std::vector<gpu::DeviceBuffer> m_outBuf, m_gradBuf, m_scratchBuf; // owned storage (empty for views)
    std::vector<float*> m_out, m_grad, m_scratch; // layer i's output, output gradient and scratch (views resolved)
    std::vector<int> m_readers;
    std::vector<char> m_gradAlias; // layer i's gradient is its source's buffer (a view with one reader)
    gpu::DeviceBuffer m_input, m_inputGrad, m_inputScratch, m_workspace, m_flags;
    size_t m_workspaceBytes = 0;
    Tensor m_hostOutput, m_hostGrad;
    bool m_inputHas = false;
    int64_t m_step = 0; // the step being run (dropout's seed)
    bool m_prepared = false;
    std::unique_ptr<DataParallel> m_ddp; // data parallel only
    const ProcessGroup* m_ddpGroup = nullptr; // the group m_ddp was made for
    std::vector<std::vector<size_t>> m_bucketsAfter; // layer k → the buckets its backward completes
};

} // namespace convscope::cudnn
