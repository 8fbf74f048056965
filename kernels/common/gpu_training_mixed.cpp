// Mixed precision in the GPU training sessions (gpu_training_session.h; --math fp16 / bf16 on cudnn): the input
// converted on the device, the parameters' storage copies, FP16's loss scale (torch.cuda.amp.GradScaler's rule and
// its step: the whole backward, the check, then the updates), and device tensors of any type read back as FP32.
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/gpu_training_session.h"
#include "kernels/common/storage_convert.cuh"
#include "kernels/common/training_kernels.cuh"

#include <cmath>

namespace convscope::gpu {

namespace {
    size_t floatBytes(int64_t count) { return size_t(count) * sizeof(float); }
} // namespace

void GpuTrainingSessionBase::uploadStorage(
    const Tensor& host, void* dst, DType type, DeviceBuffer& stage, const char* what)
{
    const cudaStream_t st = m_stream->get();
    const int64_t n = host.numel();
    if (type == DType::F32) {
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, host.data(), floatBytes(n), cudaMemcpyHostToDevice, st));
        return;
    }
    if (!stage.get())
        stage = DeviceBuffer(floatBytes(n), what);
    CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(stage.get(), host.data(), floatBytes(n), cudaMemcpyHostToDevice, st));
    convertValues(stage.floats(), dst, n, type, st);
}

void GpuTrainingSessionBase::uploadInput(const Tensor& input)
{
    uploadStorage(input, m_input.get(), m_storage, m_inputStage, "train: the FP32 input (converted on the device)");
}

void GpuTrainingSessionBase::refreshParameterCopies()
{
    for (size_t i = 0; i < layerCount(); ++i) {
        TrainLayerState& t = layerState(i);
        if (t.weightCopy.get())
            convertValues(t.weight.floats(), t.weightCopy.get(), t.weightCount, m_storage, m_stream->get());
        if (t.biasCopy.get())
            convertValues(t.bias.floats(), t.biasCopy.get(), t.biasCount, m_storage, m_stream->get());
    }
}

double GpuTrainingSessionBase::initialLossScale() const
{
    return lossScaled() ? GradScaler::initialScaleFrom(m_options.extra) : 1.0;
}

Tensor GpuTrainingSessionBase::downloadAs(const void* src, DType type, const Shape& shape, float factor) const
{
    Tensor t(shape);
    const cudaStream_t st = m_stream->get();
    // The FP32 copy when the tensor needs converting or scaling, in a buffer kept for the session's life: the phased
    // loops download the network's output and the input's gradient every pass, and a cudaMalloc / cudaFree there
    // synchronises the whole device (under data parallel, with the other ranks' all-reduces too).
    const bool wide = type != DType::F32 || factor != 1.0f;
    if (wide) {
        if (m_downloadStage.bytes() < floatBytes(t.numel()))
            m_downloadStage = DeviceBuffer(floatBytes(t.numel()), "train: a tensor converted to FP32 for the host");
        train::convertScaled(src, type, m_downloadStage.get(), DType::F32, t.numel(), factor, st);
    }
    CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
        t.data(), wide ? m_downloadStage.get() : src, floatBytes(t.numel()), cudaMemcpyDeviceToHost, st));
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
    return t;
}

StepResult GpuTrainingSessionBase::stepLossScaled(int64_t step, std::vector<char>& has, StepResult& r)
{
    // GradScaler's step: the whole backward on the scaled loss, each parameter gradient checked as it is made (into
    // the loss's flag, which the optimizer kernels read), then the updates, which divide by the scale or, if the loss
    // or a gradient is not finite, change nothing. As GradScaler skips optimizer.step(), a skipped step does not count
    // as one of the optimizer's: Adam's bias correction takes the updates done, not the step's number.
    const size_t count = layerCount();
    int* overflow = lossFlag();
    char inputHas = 0;
    for (size_t k = count; k-- > 0;) {
        if (!has[k])
            continue;
        backwardLayer(k, has, inputHas, false);
        flagParameterGradients(k, overflow);
    }
    m_inputHas = inputHas != 0;
    updatesLossScaled(has);
    const bool skipped = stepFlags()[count] != 0; // the step's one synchronisation
    readDeviceLoss(r);
    if (!std::isfinite(r.loss)) // the loss itself (FP32 from the FP16 output) is not finite: no scale makes it so
        throwLossNotFinite(step, r.loss, "the loss");
    recordLossScaledStep(r, skipped);
    readTimes(r.layers);
    return r;
}

void GpuTrainingSessionBase::updatesLossScaled(const std::vector<char>& has)
{
    int* overflow = lossFlag();
    for (size_t k = layerCount(); k-- > 0;)
        if (has[k] && trains(k))
            timedPhase(k, 3, [&] { update(k, m_updatesDone + 1, overflow, nullptr); });
    int* anyFlag = static_cast<int*>(m_flags.get()) + layerCount();
    CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(anyFlag, overflow, sizeof(int), cudaMemcpyDeviceToDevice, m_stream->get()));
}

void GpuTrainingSessionBase::recordLossScaledStep(StepResult& r, bool skipped)
{
    r.lossScale = m_scaler.scale();
    r.skipped = skipped;
    m_stepScale = m_scaler.scale(); // what the gradients now in their buffers are scaled by
    m_scaler.update(skipped);
    if (!skipped)
        ++m_updatesDone;
}

void GpuTrainingSessionBase::widenGradients(size_t k)
{
    const TrainLayerState& t = layerState(k);
    if (t.trainWeight && t.reducedW)
        train::convertScaled(t.gW, t.gradType, t.reducedW, DType::F32, t.weightCount, 1.0f, m_stream->get());
    if (t.trainBias && t.reducedB)
        train::convertScaled(t.gB, t.gradType, t.reducedB, DType::F32, t.biasCount, 1.0f, m_stream->get());
}

} // namespace convscope::gpu
