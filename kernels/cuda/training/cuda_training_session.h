// The cuda backend's TrainingSession (issue 33): the training step on our own kernels — no cuDNN, no cuBLAS — with
// the cudnn session's flow and contract (compute/training/training.h): forward in training mode, the loss on the
// host, the backward in reverse layer order with each layer's update right after its gradients, every phase of every
// layer timed with CUDA events inside an NVTX range ("cuda.implicit_gemm · train · L3 conv2d c1 · backward-data").
// FP32 math only; the tensors NCHW FP32 on the device.
//
// What each kind runs (cuda_training_layers.cpp; the forward kernels are the inference path's, kernels/cuda/):
//   conv2d            forward conv2dDirect (cuda.direct) or the implicit GEMM (every other algorithm: its table-driven
//                     tiles, never the pipelined tiles whose transposed weights would go stale at each update);
//                     backward-data = the transposed convolution of dy with the same weight (conv_transpose2d.cuh:
//                     the gather kernel for cuda.direct, the stride-phase form otherwise); backward-weights an
//                     implicit GEMM over N·P·Q with split-K (training/conv2d_backward_weights.cuh); the bias gradient
//                     a per-channel sum (training/channel_reduce.cuh).
//   conv_transpose2d  forward the gather / phase kernel; backward-data the conv2d forward of dy (the transposed
//                     convolution's adjoint, same weight); backward-weights conv2d's with the roles swapped (dy as the
//                     convolution's input, x as its output gradient).
//   linear            a 1×1 convolution on [N, in, 1, 1]: forward linear.cuh's GEMM, backward-data the 1×1 transposed
//                     gather, backward-weights the implicit GEMM over the batch.
//   batchnorm2d       batch statistics, running averages (momentum, unbiased variance) and the backward in
//                     training/batchnorm_training.cuh; dx, dγ, dβ in one kernel, timed as backward-data (or as
//                     backward-weights when no input gradient is needed), as the cudnn session.
//   activations       forward activation.cu / parametric_activation.cu; backward kernels/common/training_kernels.cuh.
//   pools             training/pool2d_backward.cuh (max, avg, global): the forward's windows exactly.
//   softmax           training/softmax_backward.cuh. pad: training/pad_backward.cuh.
//   add, concat, slice  copies (cudaMemcpy2DAsync for the channel windows); mul (a broadcast gate too) by merge.cuh's
//                     mulTensors and the gate's per-plane sums; channel_shuffle's backward is the inverse shuffle
//                     (groups C/g); dropout the CPU's mask exactly (drawn on the host), y = x·mask, gx = gy·mask.
//   flatten, identity views (the output is the input's buffer).
// Refused in prepare with the layer and kind named: resize, the volume kinds, a fused activation, tensors of more than
// 2^31 elements, and every math mode but FP32.
#pragma once

#include "compute/training/training.h"
#include "kernels/common/device_buffer.h"
#include "kernels/cuda/conv2d.cuh"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace convscope::cuda {

// Why the cuda session cannot train layer i (empty: it can).
std::string cudaTrainingRefusal(const Network& net, const ShapeReport& shapes, size_t i);

// Throws UnsupportedError for an unknown algorithm, a math mode other than FP32, or an unusable device.
std::unique_ptr<TrainingSession> makeTrainingSession(const std::string& algorithm, const SessionOptions& options);

struct CudaTrainLayer {
    // The session's parameters, running statistics, gradients and optimizer state, on the device.
    gpu::DeviceBuffer weight, bias, mean, var, gradWeight, gradBias;
    gpu::DeviceBuffer firstW, secondW, firstB, secondB; // SGD: momentum buffer in first; Adam: exp_avg, exp_avg_sq
    int64_t weightCount = 0, biasCount = 0;
    bool trainWeight = false, trainBias = false;
    bool started = false; // the optimizer has stepped
    gpu::DeviceBuffer saveMean, saveInvStd; // batch norm: the batch's mean and 1/std (double)
    gpu::DeviceBuffer mask; // dropout: this step's mask (0 or 1 / (1 − p))
    std::vector<float> hostMask;
    // Convolutions: the forward's, the backward-data's and the weight gradient's geometry (see the table above), and
    // the implicit GEMM tables or linear's split-K sums of the forward and backward-data.
    ConvGeometry fwd {}, data {}, wgrad {};
    bool fwdGemm = false, dataGemm = false;
    gpu::DeviceBuffer fwdScratch, dataScratch;
    std::string note; // what runs, for metadata
    std::array<std::string, 4> ranges; // NVTX names of the four phases
    std::array<gpu::CudaEvent, 8> events; // start and stop of each phase
    std::array<bool, 4> timed {};
};

class CudaTrainingSession final : public TrainingSession {
public:
    CudaTrainingSession(std::string algorithm, SessionOptions options);
    ~CudaTrainingSession() override;

    void prepare(const Network& net, const ShapeReport& shapes, const TrainingOptions& options) override;
    StepResult step(const Tensor& input, const Tensor& target, int64_t step) override;
    void reset() override;
    Network trainedNetwork() const override;
    Tensor parameterGradient(const ParameterRef& ref) const override;
    Tensor inputGradient() const override;
    std::vector<ParameterRef> parameters() const override;
    std::map<std::string, std::string> metadata() const override;

private:
    // cuda_training_layers.cpp
    void planLayer(size_t i); // geometries, tables, masks (untimed)
    void forward(size_t i);
    // The gradient of layer k's input j into `gx` (every element written).
    void backwardData(size_t k, size_t j, float* gx);
    // dW and db of layer k (batch norm: see batchNormBackward).
    void backwardWeights(size_t k);
    // dγ, dβ and (gx not null) dx of batch norm k.
    void batchNormBackward(size_t k, float* gx);

    // cuda_training_session.cpp
    const float* in(size_t i, size_t j) const; // layer i's j-th input (the network's input or an earlier output)
    void upload(gpu::DeviceBuffer& dst, const std::shared_ptr<const Tensor>& src, const char* what);
    void update(size_t k, int64_t step);
    void flagGradients(size_t k, const std::vector<char>& has, bool inputHas);
    void makeCurrent() const;
    std::unique_ptr<Tensor> download(const gpu::DeviceBuffer& src, const Shape& shape) const;
    bool gemmFamily() const { return m_algorithm != "direct"; }

    std::string m_algorithm, m_prefix; // "implicit_gemm", "cuda.implicit_gemm"
    SessionOptions m_options;
    int m_device = 0, m_sms = 1;
    std::unique_ptr<gpu::CudaStream> m_stream;
    Network m_net, m_initial;
    ShapeReport m_shapes;
    TrainingOptions m_train;
    std::vector<CudaTrainLayer> m_layers;
    std::vector<gpu::DeviceBuffer> m_outBuf, m_gradBuf, m_scratchBuf; // owned storage (empty for views)
    std::vector<float*> m_out, m_grad, m_scratch; // layer i's output, output gradient and scratch (views resolved)
    std::vector<int> m_readers;
    std::vector<char> m_gradAlias; // layer i's gradient is its source's buffer (a view with one reader)
    gpu::DeviceBuffer m_input, m_inputGrad, m_inputScratch, m_workspace, m_flags;
    size_t m_workspaceBytes = 0; // the weight gradients' split-K partial sums (the largest layer's)
    Tensor m_hostOutput, m_hostGrad;
    bool m_inputHas = false;
    int64_t m_step = 0; // the step being run (dropout's seed)
    bool m_prepared = false;
};

} // namespace convscope::cuda
