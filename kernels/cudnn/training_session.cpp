// The cudnn TrainingSession's own part (training_layers.h has the kinds; kernels/common/gpu_training_session.h the
// flow both GPU sessions share): its algorithms and workspace limit, this thread's cuDNN and cuBLAS handles on the
// session's stream, batch norm's buffers. Data parallel is the shared flow's
// (kernels/common/gpu_training_parallel.cpp); what is the cudnn session's own there — every rank running rank 0's
// algorithms — is in training_distributed.cpp.
#include "kernels/cudnn/training_session.h"

#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_info.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/training_layers.h"

#include <cmath>

namespace convscope::cudnn {

namespace {
    size_t floatBytes(int64_t count) { return size_t(count) * sizeof(float); }
} // namespace

std::string trainLayerLabel(const Network& net, size_t i) { return trainingLayerLabel(net, i); }

CudnnTrainingSession::CudnnTrainingSession(std::string algorithm, SessionOptions options)
    : GpuTrainingSession("cudnn", std::move(algorithm), std::move(options))
    , m_pinned(algorithmFromName(m_algorithm))
{
    if (m_algorithm != "auto" && !m_pinned)
        throw UnsupportedError(m_prefix + ": unknown algorithm");
    requireMath(true, HalfMath::HalfStorage, "it trains in fp32, tf32, fp16 and bf16");
    m_workspaceLimit = kDefaultWorkspaceLimit;
    if (const auto it = m_options.extra.find("workspace_limit"); it != m_options.extra.end()) {
        try {
            m_workspaceLimit = size_t(std::stoull(it->second));
        } catch (const std::exception&) {
            throw InputError("workspace_limit=" + it->second + ": expected a number of bytes");
        }
    }
    if (const auto it = m_options.extra.find("max_pool"); it != m_options.extra.end()) {
        if (it->second != "ours" && it->second != "cudnn")
            throw InputError("max_pool=" + it->second
                + ": maxpool2d trains on ConvScope's kernels (ours, the default, as PyTorch runs its own) or on "
                  "cuDNN's "
                  "pooling (cudnn)");
        m_maxPoolOnCudnn = it->second == "cudnn";
    }
    openDevice();
    CONVSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&m_sms, cudaDevAttrMultiProcessorCount, m_device));
    threadHandles(); // fail here, with cuDNN's reason, rather than in the middle of prepare
}

std::string CudnnTrainingSession::refusal(const Network& net, const ShapeReport& shapes, size_t i) const
{
    if (mixed()) {
        const LayerSpec& spec = net.layers[i].spec;
        if (std::holds_alternative<PReLU>(spec))
            return std::string(
                       "prelu trains in fp32 or tf32 only on cudnn (its slope kernels take FP32; unsupported in ")
                + dtypeName(m_storage) + ")";
    }
    return cudnnTrainingRefusal(net, shapes, i, m_maxPoolOnCudnn);
}

bool CudnnTrainingSession::storageParameters(size_t i) const
{
    const LayerSpec& spec = m_net.layers[i].spec;
    return std::holds_alternative<Conv2d>(spec) || std::holds_alternative<ConvTranspose2d>(spec)
        || std::holds_alternative<Linear>(spec);
}

void CudnnTrainingSession::prepareLayer(size_t i)
{
    if (!std::holds_alternative<BatchNorm2d>(m_net.layers[i].spec))
        return;
    TrainLayer& t = m_layers[i];
    const int64_t c = m_shapes.layers[i].in.c;
    t.saveMean = gpu::DeviceBuffer(floatBytes(c), "train: batch norm's saved mean");
    t.saveInvStd = gpu::DeviceBuffer(floatBytes(c), "train: batch norm's saved 1/std");
    if (!t.trainWeight) {
        t.dummyScale = gpu::DeviceBuffer(floatBytes(c), "train: batch norm's dγ (not affine)");
        t.dummyBias = gpu::DeviceBuffer(floatBytes(c), "train: batch norm's dβ (not affine)");
    }
}

void CudnnTrainingSession::passStarts()
{
    Handles& h = threadHandles();
    CONVSCOPE_CUDNN_CHECK(cudnnSetStream(h.cudnn, m_stream->get()));
    CONVSCOPE_CUBLAS_CHECK(cublasSetStream(h.cublas, m_stream->get()));
    // FP32: pedantic, so cuBLAS never turns FP32 into TF32 through a default; TF32: its Tensor Core GEMMs on FP32
    // data, as PyTorch's allow_tf32.
    // Mixed precision: cublasGemmEx on FP16 / BF16 with FP32 sums, Tensor Cores allowed (the default math).
    CONVSCOPE_CUBLAS_CHECK(cublasSetMathMode(h.cublas,
        mixed()                                ? CUBLAS_DEFAULT_MATH
            : m_options.math == MathMode::TF32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                               : CUBLAS_PEDANTIC_MATH));
    m_handles = &h;
}

std::string CudnnTrainingSession::workspaceWhat() const { return "train: the convolutions' workspace"; }

void CudnnTrainingSession::extraMetadata(std::map<std::string, std::string>& m) const
{
    m["cudnn"] = cudnnVersionString();
    m["cublas"] = cublasVersionString();
    if (mixed())
        m["math"] = std::string(dtypeName(m_storage))
            + " mixed precision, as PyTorch's autocast (convolutions CUDNN_TENSOR_OP_MATH on "
            + cudnnTypeName(m_storage) + " with FP32 sums; cublasGemmEx, CUBLAS_COMPUTE_32F; batch norm on FP32 "
            + "parameters; a final softmax or log_softmax in FP32, as autocast; the loss in double from the "
            + dtypeName(m_outputType) + " output; the update in FP32)";
    else
        m["math"] = m_options.math == MathMode::TF32
            ? "tf32 (convolutions CUDNN_DEFAULT_MATH: TF32 Tensor Cores where cudnnFind picks them; cuBLAS "
              "CUBLAS_TF32_TENSOR_OP_MATH; batch norm, activations, the loss and the update in FP32)"
            : "fp32 (CUDNN_FMA_MATH, CUBLAS_PEDANTIC_MATH: no TF32)";
}

std::unique_ptr<TrainingSession> makeTrainingSession(const std::string& algorithm, const SessionOptions& options)
{
    return std::make_unique<CudnnTrainingSession>(algorithm, options);
}

} // namespace convscope::cudnn
