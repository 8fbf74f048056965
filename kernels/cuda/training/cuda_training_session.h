// The cuda backend's TrainingSession (issue 33): the training step on our own kernels — no cuDNN, no cuBLAS. The
// flow (prepare, step, the phased step the DCGAN loop drives, the timing, the flags, reset) is the one both GPU
// sessions share (kernels/common/gpu_training_session.h, gpu::GpuTrainingSession); this class supplies what runs per
// layer kind. NVTX ranges "cuda.implicit_gemm · train · L3 conv2d c1 · backward-data". FP32 math (Winograd's
// transforms under cuda.winograd are FP32 too, with its own rounding; TF32 and the half types: "Math" below); the
// tensors NCHW FP32 on the device.
//
// What each kind runs (cuda_training_layers.cpp; the forward kernels are the inference path's, kernels/cuda/):
//   conv2d            forward conv2dDirect (cuda.direct) or the implicit GEMM (every other algorithm, the launcher's
//                     tiles and split-K; the pipelined tiles' transposed weights remade before each launch), or under
//                     cuda.winograd Winograd F(m×m, 3×3) on 3×3 stride-1 ungrouped layers; backward-data = the
//                     transposed convolution of dy with the same weight: one stride-1 implicit GEMM per stride phase
//                     (training/transposed_phase_gemm.cuh; Winograd again for a 3×3 stride-1 layer under
//                     cuda.winograd), the older stride-phase or gather kernel (conv_transpose2d.cuh) where the plan
//                     does not apply or on cuda.direct; backward-weights an implicit GEMM over N·P·Q with split-K
//                     (training/conv2d_backward_weights.cuh); the bias gradient a per-channel sum
//                     (training/channel_reduce.cuh; the same engine as batch norm's).
//   conv_transpose2d  forward the gather / phase kernel; backward-data the conv2d forward of dy (the transposed
//                     convolution's adjoint, same weight); backward-weights conv2d's with the roles swapped (dy as the
//                     convolution's input, x as its output gradient).
//   linear            a 1×1 convolution on [N, in, 1, 1]: forward linear.cuh's GEMM, backward-data the 1×1 transposed
//                     gather, backward-weights the implicit GEMM over the batch.
//   batchnorm2d       batch statistics, running averages (momentum, unbiased variance) and the backward in
//                     training/batchnorm_training.cuh: per-channel reductions cut into runs across the GPU
//                     (training/channel_reduce_kernels.cuh, the partials in the session workspace) and one element-wise
//                     pass each way; dx, dγ, dβ in one call, timed as backward-data (or as backward-weights when no
//                     input gradient is needed), as the cudnn session.
//   activations       forward activation.cu / parametric_activation.cu; backward kernels/common/training_kernels.cuh
//                     (prelu's slope gradient: training/channel_reduce.cuh, the per-channel engine).
//   pools             training/pool2d_backward.cuh (max, avg, global): the forward's windows exactly.
//   softmax           training/softmax_backward.cuh. pad: training/pad_backward.cuh.
//   add, concat, slice  copies (cudaMemcpy2DAsync for the channel windows); mul (a broadcast gate too) by merge.cuh's
//                     mulTensors and the gate's per-plane sums; channel_shuffle's backward is the inverse shuffle
//                     (groups C/g); dropout the CPU's mask exactly (drawn on the host), y = x·mask, gx = gy·mask.
//   flatten, identity views (the output is the input's buffer).
// Math: FP32 on every algorithm but cuda.tensor_core, which takes --math tf32: the same kernels, the convolutions'
// pipelined implicit GEMM tiles (forward, the backward-data's phases) and the weight gradient's cp.async tiles
// multiplying on TF32 Tensor Cores (kernels/cuda/tf32_mma.cuh); linear and the layers the pipelined tiles do not take
// stay FP32. FP16 and BF16 (every algorithm) are the CPU's mixed precision (compute/training/mixed_products.h), on FP32
// tensors: a convolution's or linear layer's forward reads its input and weight rounded to the half type (copies kept
// for its backward) and rounds its output in place; its backward reads the output gradient rounded (one copy for both
// phases) and rounds the input gradient in place; the weight and bias gradients, every other layer, the loss and the
// update stay FP32; fp16 scales the loss as GradScaler (the base's step). The kernels are the FP32 ones: their
// products of rounded operands are exact in FP32, and in TF32 on cuda.tensor_core, whose pipelined tiles multiply them
// in the half type itself (m16n8k16, kernels/cuda/half_mma.cuh; exact too), so the sums are what differ from the
// CPU's. cuda.tensor_core (tf32, fp16, bf16) runs an ungrouped conv2d's forward and stride-1 backward-data, and a
// conv_transpose2d's backward-data, on the inference Tensor Core kernel instead (conv2d_tensor_core.cuh, wgmma on
// sm_90) over channels-last copies of the FP32 tensors in the mode's type (training/channels_last_copies.cuh), whose
// output rounding is the mixed semantics' (--option train_tiles=pipelined keeps the pipelined tiles). cuda.winograd
// (from 16 channels) and cuda.tensor_core in tf32 (from 128) take a 3×3 stride-1 layer's weight gradient as Winograd
// F(3×3, 2×2) (training/conv2d_winograd_wgrad.cuh; --option winograd_wgrad=off keeps the implicit GEMM).
// Refused in prepare with the layer and kind named: resize, the volume kinds, a fused activation, tensors of more than
// 2^31 elements.
#pragma once

#include "compute/training/training.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/gpu_training_session.h"
#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/conv2d_tensor_core.cuh"
#include "kernels/cuda/transposed_phase_gemm.cuh"

#include <cstdint>
#include <memory>
#include <string>

namespace convscope::cuda {

// Why the cuda session cannot train layer i (empty: it can).
std::string cudaTrainingRefusal(const Network& net, const ShapeReport& shapes, size_t i);

// Throws UnsupportedError for an unknown algorithm, a math mode the algorithm does not train in (FP32; TF32 on
// cuda.tensor_core), or an unusable device.
std::unique_ptr<TrainingSession> makeTrainingSession(const std::string& algorithm, const SessionOptions& options);

// One layer's plan; its parameters, gradients, optimizer state, masks and timing are gpu::TrainLayerState's
// (saveMean / saveInvStd: batch norm's batch mean and 1/std in double).
struct CudaTrainLayer : gpu::TrainLayerState {
    // Convolutions: the forward's, the backward-data's and the weight gradient's geometry (see the table above), and
    // the implicit GEMM tables or linear's split-K sums of the forward and backward-data.
    ConvGeometry fwd {}, data {}, wgrad {};
    bool fwdGemm = false, dataGemm = false;
    int fwdWinograd = 0; // cuda.winograd on a 3×3 stride-1 ungrouped conv2d: the forward's Winograd tile m (else 0)
    gpu::DeviceBuffer fwdScratch, dataScratch;
    // The transposed convolution (conv2d's backward-data, conv_transpose2d's forward) as one stride-1 implicit GEMM
    // per stride phase (transposed_phase_gemm.cuh), with its gathered weights (remade at every pass), GEMM scratch
    // and staging; linear keeps its transposed weight in phaseWeights.
    TransposedPhaseGemm phases;
    bool phaseGemm = false;
    gpu::DeviceBuffer phaseWeights, phaseScratch, phaseTemp;
    // Mixed precision on a convolution or linear layer: its input and weight rounded by the forward, which the
    // backward reads too (the update comes after both).
    gpu::DeviceBuffer roundedIn, roundedWeight;
    // cuda.tensor_core: a conv2d's forward, and a stride-1 conv2d's backward-data (the forward convolution of the
    // output gradient with the weight flipped and transposed), on the inference Tensor Core kernel
    // (conv2d_tensor_core.cuh) over channels-last copies in the math mode's storage type (FP32 in tf32;
    // training/channels_last_copies.cuh), each with the kernel's scratch (packed weights, remade at every pass;
    // split-K sums).
    bool tcFwd = false, tcData = false;
    ConvGeometry tcFwdGeometry {}, tcDataGeometry {};
    gpu::DeviceBuffer tcFwdScratch, tcDataScratch;
    // A 3×3 stride-1 ungrouped conv2d on cuda.winograd (16 or more channels) or cuda.tensor_core in tf32 (128 or
    // more): the weight gradient by Winograd F(3×3, 2×2) (training/conv2d_winograd_wgrad.cuh), its transformed tiles
    // in the session's m_winogradWgradScratch.
    bool wgradWinograd = false;
};

class CudaTrainingSession final : public gpu::GpuTrainingSession<CudaTrainLayer> {
public:
    CudaTrainingSession(std::string algorithm, SessionOptions options);

private:
    // cuda_training_session.cpp
    std::string refusal(const Network& net, const ShapeReport& shapes, size_t i) const override;
    void prepareLayer(size_t i) override; // batch norm's saved statistics
    void extraMetadata(std::map<std::string, std::string>& m) const override;
    std::string workspaceWhat() const override;

    // cuda_training_layers.cpp
    void planLayer(size_t i) override; // geometries, tables, masks (untimed)
    void forward(size_t i) override;
    void backwardData(size_t k, size_t j, void* gxStorage) override;
    void backwardWeights(size_t k) override;
    void batchNormBackward(size_t k, void* gxStorage) override;

    // cuda_training_products.cpp
    // The session buffers one layer uses at a time: mixed precision's rounded output gradient, the inference Tensor
    // Core kernel's copies, the Winograd weight gradient's tiles.
    void afterPlanning() override;
    // Mixed precision: does layer i round its tensors (a convolution or linear layer, in fp16 / bf16)?
    bool rounds(size_t i) const;
    DType halfType() const { return m_options.math == MathMode::FP16 ? DType::F16 : DType::BF16; }
    // The inference Tensor Core kernel's storage type: the half type, or FP32 (TF32 math) in tf32.
    DType tcType() const { return roundsProducts() ? halfType() : DType::F32; }
    // ConvGeometry::tf32 of the convolutions: 0 FFMA; on cuda.tensor_core 1 (TF32), or 2 / 3 in fp16 / bf16, whose
    // rounded operands the pipelined tiles multiply in that type (conv2d.cuh).
    int tensorCoreMode() const { return !m_tf32 ? 0 : !roundsProducts() ? 1 : halfType() == DType::F16 ? 2 : 3; }
    // Layer k's output gradient rounded into m_roundedGrad, once for its two backward phases: backward-data rounds it,
    // backward-weights reads that (or rounds it itself when no data gradient ran) and then lets it go.
    const float* roundedGradient(size_t k);

    bool gemmFamily() const { return m_algorithm != "direct"; }
    // conv2dImplicitGemm of g, first remaking the pipelined tiles' transposed weights from w when it runs them.
    void gemmRun(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, void* scratch);
    // The inference Tensor Core kernel on layer i's channels-last copies (CudaTrainLayer::tcFwd, tcData): plans them
    // in planLayer, runs the forward (in fp16 / bf16 writing the rounded input copy the weight gradient reads) and the
    // stride-1 backward-data (in fp16 / bf16 writing the rounded output gradient the weight gradient reads).
    void planTensorCoreKernel(size_t i);
    void tensorCoreForward(size_t i);
    void tensorCoreBackwardData(size_t k, float* gx);
    // One launch of the kernel of geometry g: x (FP32 NCHW of shape `in`) into the channels-last copy (and, where
    // `rounded` is not null, its rounded FP32 values there), the weight w (in tcType(), [K, C, R, S]) packed into
    // `scratch`, the kernel, its output widened into y (FP32 NCHW of shape `out`).
    void onTensorCores(const ConvGeometry& g, void* scratch, const float* x, const Shape& in, float* rounded,
        const void* w, const float* bias, float* y, const Shape& out);
    // Layer t's weight in tcType(): converted into m_tcWeight, or the FP32 weight itself in tf32.
    const void* tensorCoreWeight(const CudaTrainLayer& t);

    int m_sms = 1;
    // cuda.tensor_core (--math tf32, fp16 or bf16): the convolutions' implicit GEMMs multiply on Tensor Cores
    // (ConvGeometry::tf32, tensorCoreMode); everything else runs as under cuda.implicit_gemm.
    bool m_tf32 = false;
    // cuda.winograd: the Winograd tile (--option winograd_tile, 4 by default) for the 3×3 stride-1 convolutions of
    // the forward and the backward-data, read once at construction; 0 on every other algorithm.
    int m_winogradTile = 0;
    // cuda.winograd, and cuda.tensor_core in tf32: whether the 3×3 stride-1 layers' weight gradient runs Winograd
    // F(3×3, 2×2) (--option winograd_wgrad=on, the default; off keeps the implicit GEMM), and the transformed tiles
    // one layer uses at a time, sized for the largest.
    bool m_winogradWgrad = false;
    gpu::DeviceBuffer m_winogradWgradScratch;
    // Mixed precision: the rounded output gradient of the layer m_roundedGradOf (SIZE_MAX: none), sized for the
    // largest product layer's output (one layer's two backward phases use it at a time).
    gpu::DeviceBuffer m_roundedGrad;
    size_t m_roundedGradOf = SIZE_MAX;
    // cuda.tensor_core: whether the convolutions take the inference Tensor Core kernel (--option
    // train_tiles=inference, the default; pipelined keeps them on the pipelined implicit GEMM), its options (tc_tile,
    // tc_kernel, ... as in inference) and device, and the channels-last copies one layer uses at a time in tcType():
    // its input (or output gradient), its output (or input gradient) and its weight, sized for the largest such layer.
    bool m_tcKernel = false;
    TensorCoreOptions m_tcOptions;
    TensorCoreDevice m_tcDevice {};
    gpu::DeviceBuffer m_tcIn, m_tcOut, m_tcWeight;
};

} // namespace convscope::cuda
