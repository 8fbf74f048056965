// The cuda training session's product layers (convolutions and linear), what their launches share beyond one kind
// (cuda_training_layers.cpp has the kinds): the inference Tensor Core kernel's plan and launches on channels-last
// copies (cuda.tensor_core), the buffers planned after every layer (mixed precision's rounded output gradient, the
// kernel's copies, the Winograd weight gradient's tiles), mixed precision's rounding points, and the implicit GEMM's
// launch with its weights remade.
#include "compute/training/mixed_products.h"
#include "kernels/common/storage_convert.cuh"
#include "kernels/common/training_kernels.cuh"
#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/training/channels_last_copies.cuh"
#include "kernels/cuda/training/conv2d_winograd_wgrad.cuh"
#include "kernels/cuda/training/cuda_training_session.h"
#include "kernels/cuda/training/training_geometry.h"

#include <algorithm>
#include <variant>

namespace convscope::cuda {

void CudaTrainingSession::planTensorCoreKernel(size_t i)
{
    CudaTrainLayer& t = m_layers[i];
    const auto scratchFor = [&](const ConvGeometry& g, const char* what) {
        return gpu::DeviceBuffer(conv2dTensorCoreScratchBytes(g, tcType(), m_tcOptions, m_tcDevice), what);
    };
    if (std::holds_alternative<ConvTranspose2d>(m_net.layers[i].spec)) {
        // Its backward-data is conv2d's forward of dy with the same weight (t.data); its forward keeps the phases.
        ConvGeometry d = t.data;
        d.tf32 = 0;
        if (!conv2dTensorCoreRefusal(d).empty())
            return;
        t.tcData = true;
        t.tcDataGeometry = d;
        t.tcDataScratch = scratchFor(d, "train: the Tensor Core kernel's packed weights and split-K sums");
        return;
    }
    ConvGeometry g = t.fwd;
    g.tf32 = 0; // the inference kernel's math is its storage type's
    if (!conv2dTensorCoreRefusal(g).empty())
        return; // grouped: the pipelined implicit GEMM
    t.tcFwd = true;
    t.tcFwdGeometry = g;
    t.tcFwdScratch = scratchFor(g, "train: the Tensor Core kernel's packed weights and split-K sums");
    // A stride-1 layer's data gradient is the forward convolution of dy with the weight flipped and transposed, the
    // padding dil·(R−1) − pad (the taps past the output gradient's edge read zeros, as the forward's do). Strided
    // layers keep the stride phases' GEMMs.
    const int padTop = g.dilH * (g.r - 1) - g.padTop, padLeft = g.dilW * (g.s - 1) - g.padLeft;
    if (g.strideH != 1 || g.strideW != 1 || padTop < 0 || padLeft < 0)
        return;
    ConvGeometry d = transposedOf(g);
    d.padTop = padTop, d.padLeft = padLeft;
    t.tcData = true;
    t.tcDataGeometry = d;
    t.tcDataScratch = scratchFor(d, "train: the Tensor Core kernel's packed weights and split-K sums (backward-data)");
}

void CudaTrainingSession::afterPlanning()
{
    // Freed first: a second prepare() must not hold the old buffers while it makes the new ones.
    m_roundedGrad.reset(), m_tcIn.reset(), m_tcOut.reset(), m_tcWeight.reset(), m_winogradWgradScratch.reset();
    m_roundedGradOf = SIZE_MAX;
    int64_t largest = 0; // the largest rounding layer's output
    int64_t largestCopy = 0, largestWeight = 0; // the Tensor Core kernel's layers: tensors and weights
    size_t winogradBytes = 0; // the Winograd weight gradient's largest tiles
    for (size_t i = 0; i < layerCount(); ++i) {
        const CudaTrainLayer& t = m_layers[i];
        const LayerShape& s = m_shapes.layers[i];
        if (rounds(i))
            largest = std::max(largest, s.out.numel());
        if (t.tcFwd || t.tcData) {
            largestCopy = std::max({ largestCopy, s.in.numel(), s.out.numel() });
            largestWeight = std::max(largestWeight, t.weightCount);
        }
        if (t.wgradWinograd)
            winogradBytes = std::max(winogradBytes, train::conv2dWinogradWgradScratchBytes(t.wgrad));
    }
    if (largest > 0)
        m_roundedGrad
            = gpu::DeviceBuffer(size_t(largest) * sizeof(float), "train: a product's rounded output gradient");
    if (largestCopy > 0) {
        const size_t bytes = dtypeBytes(tcType());
        m_tcIn = gpu::DeviceBuffer(size_t(largestCopy) * bytes, "train: a convolution's channels-last input copy");
        m_tcOut = gpu::DeviceBuffer(size_t(largestCopy) * bytes, "train: a convolution's channels-last output");
        m_tcWeight = gpu::DeviceBuffer(size_t(largestWeight) * bytes, "train: a convolution's weight for its kernel");
    }
    if (winogradBytes > 0)
        m_winogradWgradScratch = gpu::DeviceBuffer(winogradBytes, "train: the Winograd weight gradient's tiles");
}

void CudaTrainingSession::onTensorCores(const ConvGeometry& g, void* scratch, const float* x, const Shape& in,
    float* rounded, const void* w, const float* bias, float* y, const Shape& out)
{
    const cudaStream_t st = m_stream->get();
    const DType type = tcType();
    train::packChannelsLast(x, in.n, in.c, in.h * in.w, type, m_tcIn.get(), rounded, st);
    conv2dTensorCorePrepare(g, type, m_tcOptions, m_tcDevice, w, scratch, st);
    conv2dTensorCore(g, type, m_tcOptions, m_tcDevice, m_tcIn.get(), bias, m_tcOut.get(), scratch, st);
    // In fp16 / bf16 the kernel rounded its FP32 sums (and the bias) to the half type: the output is the rounded one,
    // widened exactly.
    train::unpackChannelsLast(m_tcOut.get(), out.n, out.c, out.h * out.w, type, y, st);
}

const void* CudaTrainingSession::tensorCoreWeight(const CudaTrainLayer& t)
{
    if (tcType() == DType::F32) // tf32: the packing rounds it
        return t.weight.get();
    gpu::convertValues(t.weight.floats(), m_tcWeight.get(), t.weightCount, tcType(), m_stream->get());
    return m_tcWeight.get();
}

void CudaTrainingSession::tensorCoreForward(size_t i)
{
    CudaTrainLayer& t = m_layers[i];
    const LayerShape& s = m_shapes.layers[i];
    // The input into the kernel's channels-last copy: in fp16 / bf16 rounded, and in the same pass into roundedIn
    // (the weight gradient's operand); in tf32 as it is (the kernel rounds its operands to TF32). The strided layers'
    // backward-data (stride phases) reads the FP32 rounded weight in fp16 / bf16.
    const bool rounded = rounds(i);
    if (rounded && !t.tcData)
        gpu::train::roundThrough(t.weight.floats(), t.roundedWeight.floats(), t.weightCount, tcType(), m_stream->get());
    onTensorCores(t.tcFwdGeometry, t.tcFwdScratch.get(), static_cast<const float*>(in(i, 0)), s.in,
        rounded ? t.roundedIn.floats() : nullptr, tensorCoreWeight(t), t.bias.get() ? t.bias.floats() : nullptr,
        static_cast<float*>(m_out[i]), s.out);
}

void CudaTrainingSession::tensorCoreBackwardData(size_t k, float* gx)
{
    CudaTrainLayer& t = m_layers[k];
    const LayerShape& s = m_shapes.layers[k];
    // conv2d: the weight flipped and transposed; conv_transpose2d: its own weight is conv2d's of the adjoint.
    const void* w = nullptr;
    if (std::holds_alternative<Conv2d>(m_net.layers[k].spec)) {
        const ConvGeometry& g = t.fwd;
        train::flippedTransposedWeight(
            t.weight.floats(), g.k, g.c, g.r, g.s, tcType(), m_tcWeight.get(), m_stream->get());
        w = m_tcWeight.get();
    } else {
        w = tensorCoreWeight(t);
    }
    // dy into the kernel's copy; in fp16 / bf16 rounded, and into m_roundedGrad, which the weight gradient reads.
    const bool rounded = rounds(k);
    onTensorCores(t.tcDataGeometry, t.tcDataScratch.get(), static_cast<const float*>(m_grad[k]), s.out,
        rounded ? m_roundedGrad.floats() : nullptr, w, nullptr, gx, s.in);
    if (rounded)
        m_roundedGradOf = k;
}

bool CudaTrainingSession::rounds(size_t i) const
{
    return roundsProducts() && cpu_training::isProductLayer(m_net.layers[i].spec);
}

const float* CudaTrainingSession::roundedGradient(size_t k)
{
    if (m_roundedGradOf != k) {
        gpu::train::roundThrough(static_cast<const float*>(m_grad[k]), m_roundedGrad.floats(),
            m_shapes.layers[k].out.numel(), halfType(), m_stream->get());
        m_roundedGradOf = k;
    }
    return m_roundedGrad.floats();
}

void CudaTrainingSession::gemmRun(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, void* scratch)
{
    const cudaStream_t st = m_stream->get();
    if (conv2dImplicitGemmPreparesWeights(g, m_sms)) // the pipelined tiles read this pass's weights, transposed
        conv2dImplicitGemmPrepare(g, w, scratch, m_sms, st);
    conv2dImplicitGemm(g, x, w, bias, y, scratch, m_sms, st);
}

} // namespace convscope::cuda
