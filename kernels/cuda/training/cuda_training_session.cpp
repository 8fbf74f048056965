// The cuda TrainingSession's own part (cuda_training_session.h has the kinds; kernels/common/gpu_training_session.h
// the flow both GPU sessions share): the algorithms it accepts, batch norm's saved statistics, and its metadata.
#include "kernels/cuda/training/cuda_training_session.h"
#include "kernels/cuda/cuda_options.h"

#include "compute/error.h"
#include "compute/training/mixed_products.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_info.h"

namespace convscope::cuda {

CudaTrainingSession::CudaTrainingSession(std::string algorithm, SessionOptions options)
    : GpuTrainingSession("cuda", std::move(algorithm), std::move(options))
{
    if (m_algorithm != "direct" && m_algorithm != "tiled" && m_algorithm != "implicit_gemm" && m_algorithm != "winograd"
        && m_algorithm != "fft" && m_algorithm != "tensor_core")
        throw UnsupportedError(
            m_prefix + ": unknown algorithm (direct, tiled, implicit_gemm, winograd, fft, tensor_core)");
    // cuda.tensor_core multiplies on Tensor Cores: in TF32, or in fp16 / bf16 on operands rounded to the half type
    // (the inference kernel or the pipelined tiles in that type, the weight gradient's in TF32, which holds those
    // products exactly too). It takes every mode requireMath lets through but FP32, which the next check refuses.
    m_tf32 = m_algorithm == "tensor_core";
    if (m_tf32) {
        requireMath(true, HalfMath::RoundedProducts, "it trains tf32, fp16 and bf16");
        if (m_options.math == MathMode::FP32)
            throw UnsupportedError(m_prefix
                + ": training on Tensor Cores needs --math tf32, fp16 or bf16 (fp32 trains on cuda.implicit_gemm)");
    } else {
        requireMath(false, HalfMath::RoundedProducts,
            "these training kernels are FP32 FFMA: train --math tf32 on cuda.tensor_core");
    }
    m_winogradTile = m_algorithm == "winograd" ? winogradTileOf(m_options) : 0; // a bad winograd_tile fails here
    // The Winograd weight gradient (cuda.winograd; cuda.tensor_core in tf32) and, on cuda.tensor_core, the
    // convolutions on the inference Tensor Core kernel: on unless the run turns them off to measure the other path.
    m_winogradWgrad = winogradWeightGradientOf(m_options)
        && (m_algorithm == "winograd" || (m_tf32 && m_options.math == MathMode::TF32));
    m_tcKernel = trainsOnInferenceKernel(m_options) && m_tf32;
    m_tcOptions = conv2dTensorCoreParseOptions(m_options.extra); // a bad tc_* option fails here
    openDevice();
    CONVSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&m_sms, cudaDevAttrMultiProcessorCount, m_device));
    int major = 0, minor = 0;
    CONVSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, m_device));
    CONVSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, m_device));
    m_tcDevice = { m_sms, major * 10 + minor };
}

std::string CudaTrainingSession::refusal(const Network& net, const ShapeReport& shapes, size_t i) const
{
    return cudaTrainingRefusal(net, shapes, i);
}

void CudaTrainingSession::prepareLayer(size_t i)
{
    if (!std::holds_alternative<BatchNorm2d>(m_net.layers[i].spec))
        return;
    const Shape& in = m_shapes.layers[i].in;
    if (in.n * in.h * in.w <= 1)
        throw InputError(trainingLayerLabel(m_net, i) + ": expected more than 1 value per channel when training, got "
            + "input " + in.str() + " (PyTorch refuses it too)");
    CudaTrainLayer& t = m_layers[i];
    t.saveMean = gpu::DeviceBuffer(size_t(in.c) * sizeof(double), "train: batch norm's saved mean");
    t.saveInvStd = gpu::DeviceBuffer(size_t(in.c) * sizeof(double), "train: batch norm's saved 1/std");
}

std::string CudaTrainingSession::workspaceWhat() const
{
    return "train: the weight gradients' split-K partial sums and the per-channel reductions' partials";
}

void CudaTrainingSession::extraMetadata(std::map<std::string, std::string>& m) const
{
    if (roundsProducts())
        m["math"] = cpu_training::mixedTrainingMath(m_options.math, "the convolutions and linear layers",
            m_tcKernel ? "exact products on Tensor Cores: the convolutions' forward and stride-1 backward-data on the "
                         "inference Tensor Core kernel over channels-last "
                    + mathModeName(m_options.math)
                    + " copies, the strided ones' backward-data on the pipelined tiles in "
                    + mathModeName(m_options.math)
                    + " (mma.sync m16n8k16), the weight gradient's in TF32; linear FMA; FP32 sums"
                : m_tf32
                ? "exact products on Tensor Cores where the pipelined implicit GEMM takes the layer (its tiles in "
                    + mathModeName(m_options.math)
                    + " on mma.sync m16n8k16, the weight gradient's in TF32), FMA "
                      "elsewhere; FP32 sums"
                : std::string("exact products, FP32 sums"),
            lossScaled() ? initialLossScale() : 0, "as the CPU's (PyTorch's CPU autocast lists), on our kernels");
    else
        m["math"] = m_tcKernel
            ? "tf32 (our kernels: the convolutions' forward and stride-1 backward-data on the inference Tensor Core "
              "kernel over channels-last FP32 copies, operands rounded to TF32 (to nearest even), the strided layers' "
              "backward-data and every weight gradient on TF32 mma.sync m16n8k8 (operands rounded to nearest), FP32 "
              "sums; linear, batch norm, activations, the loss and the update in FP32)"
            : m_tf32 ? "tf32 (our kernels: the convolutions' forward, backward-data and backward-weights on TF32 "
                       "Tensor Cores, mma.sync m16n8k8, FP32 sums, where the pipelined implicit GEMM takes the layer; "
                       "linear, batch norm, activations, the loss and the update in FP32)"
                     : "fp32 (our kernels; no cuDNN, no cuBLAS, no TF32)";
    m["workspace"] = gpu::mib(m_workspaceBytes)
        + " (the weight gradients' split-K partial sums; batch norm's and the bias and gate gradients' per-channel "
          "partial sums)";
    if (m_algorithm == "winograd")
        m["training_kernels"] = m_prefix + " trains the 3x3 stride-1 ungrouped convolutions' forward and backward-data "
            + "on Winograd F(" + std::to_string(m_winogradTile) + "x" + std::to_string(m_winogradTile) + ",3x3)"
            + (m_winogradWgrad ? " and, from 16 channels, their weight gradient on Winograd F(3x3,2x2)" : "")
            + ", everything else with cuda.implicit_gemm's kernels (the weight gradient is the split-K GEMM)";
    else if (m_tcKernel)
        m["training_kernels"] = m_prefix
            + " trains the convolutions' forward and stride-1 backward-data on the inference Tensor Core kernel "
              "(channels-last "
            + dtypeName(tcType())
            + " copies of the FP32 tensors), everything else with cuda.implicit_gemm's kernels (the strided layers' "
              "backward-data on the pipelined tiles in "
            + mathModeName(m_options.math) + ", the weight gradient's cp.async tiles in TF32"
            + (m_winogradWgrad ? "; a 3x3 stride-1 layer's of 128 or more channels as Winograd F(3x3,2x2) on them" : "")
            + ")";
    else if (m_tf32)
        m["training_kernels"] = m_prefix
            + " trains with cuda.implicit_gemm's kernels, their pipelined tiles and the weight gradient's cp.async "
              "tiles multiplying on Tensor Cores ("
            + (roundsProducts()
                    ? "the pipelined tiles in " + mathModeName(m_options.math) + ", the weight gradient's in TF32"
                    : std::string("TF32"))
            + ")";
    else if (m_algorithm != "direct" && m_algorithm != "implicit_gemm")
        m["training_kernels"] = m_prefix
            + " trains with cuda.implicit_gemm's kernels (the forward's implicit GEMM, "
              "the backward's phase-form data gradient and split-K weight gradient)";
}

std::unique_ptr<TrainingSession> makeTrainingSession(const std::string& algorithm, const SessionOptions& options)
{
    return std::make_unique<CudaTrainingSession>(algorithm, options);
}

} // namespace convscope::cuda
