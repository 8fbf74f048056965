// Mixed precision in the GPU training sessions (gpu_training_session.h; --math fp16 / bf16 on cudnn): the input
// converted on the device, the parameters' storage copies, FP16's loss scale (torch.cuda.amp.GradScaler's rule and
// its step: the whole backward, the check, then the updates), and device tensors of any type read back as FP32.
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/gpu_training_session.h"
#include "kernels/common/training_kernels.cuh"

#include <cmath>

namespace convscope::gpu {

namespace {
    size_t floatBytes(int64_t count) { return size_t(count) * sizeof(float); }
} // namespace

void GpuTrainingSessionBase::uploadInput(const Tensor& input)
{
    const cudaStream_t st = m_stream->get();
    const int64_t n = m_shapes.input.numel();
    if (!mixed()) {
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(m_input.get(), input.data(), floatBytes(n), cudaMemcpyHostToDevice, st));
        return;
    }
    CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(m_inputStage.get(), input.data(), floatBytes(n), cudaMemcpyHostToDevice, st));
    train::convertScaled(m_inputStage.get(), DType::F32, m_input.get(), m_storage, n, 1.0f, st);
}

void GpuTrainingSessionBase::refreshParameterCopies()
{
    for (size_t i = 0; i < layerCount(); ++i) {
        TrainLayerState& t = layerState(i);
        if (t.weightCopy.get())
            train::convertScaled(
                t.weight.get(), DType::F32, t.weightCopy.get(), m_storage, t.weightCount, 1.0f, m_stream->get());
        if (t.biasCopy.get())
            train::convertScaled(
                t.bias.get(), DType::F32, t.biasCopy.get(), m_storage, t.biasCount, 1.0f, m_stream->get());
    }
}

double GpuTrainingSessionBase::initialLossScale() const
{
    if (!lossScaled())
        return 1.0;
    // GradScaler's init_scale, 65536 unless --option loss_scale=S (its constructor argument).
    const auto it = m_options.extra.find("loss_scale");
    if (it == m_options.extra.end())
        return 65536.0;
    double scale = 0;
    try {
        size_t used = 0;
        scale = std::stod(it->second, &used);
        if (used != it->second.size())
            scale = 0;
    } catch (const std::exception&) {
        scale = 0;
    }
    if (!(scale > 0) || !std::isfinite(scale))
        throw InputError("loss_scale=" + it->second + ": expected a positive number (FP16's initial loss scale)");
    return scale;
}

void GpuTrainingSessionBase::updateLossScale(bool overflowed)
{
    // torch.cuda.amp.GradScaler's defaults: backoff 0.5 at an overflow, growth 2 after 2000 clean steps.
    constexpr int kGrowthInterval = 2000;
    if (overflowed) {
        m_lossScale *= 0.5;
        m_cleanSteps = 0;
    } else if (++m_cleanSteps == kGrowthInterval) {
        m_lossScale *= 2;
        m_cleanSteps = 0;
    }
}

Tensor GpuTrainingSessionBase::downloadAs(const void* src, DType type, const Shape& shape, float factor) const
{
    Tensor t(shape);
    const cudaStream_t st = m_stream->get();
    if (type == DType::F32 && factor == 1.0f) {
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(t.data(), src, floatBytes(t.numel()), cudaMemcpyDeviceToHost, st));
    } else {
        DeviceBuffer wide(floatBytes(t.numel()), "train: a tensor converted to FP32");
        train::convertScaled(src, type, wide.get(), DType::F32, t.numel(), factor, st);
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(t.data(), wide.get(), floatBytes(t.numel()), cudaMemcpyDeviceToHost, st));
        CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st)); // before `wide` goes
    }
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
    const cudaStream_t st = m_stream->get();
    int* overflow = lossFlag();
    char inputHas = 0;
    for (size_t k = count; k-- > 0;) {
        if (!has[k])
            continue;
        backwardLayer(k, has, inputHas, false);
        const TrainLayerState& t = layerState(k);
        if (t.trainWeight)
            train::flagNonFinite(t.gW, t.weightCount, overflow, st, t.gradType);
        if (t.trainBias)
            train::flagNonFinite(t.gB, t.biasCount, overflow, st, t.gradType);
    }
    m_inputHas = inputHas != 0;
    for (size_t k = count; k-- > 0;)
        if (has[k] && trains(k))
            timedPhase(k, 3, [&] { update(k, m_updatesDone + 1, overflow, nullptr); });
    int* anyFlag = static_cast<int*>(m_flags.get()) + count;
    CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(anyFlag, overflow, sizeof(int), cudaMemcpyDeviceToDevice, st));
    const bool skipped = stepFlags()[count] != 0; // the step's one synchronisation
    readDeviceLoss(r);
    if (!std::isfinite(r.loss)) // the loss itself (FP32 from the FP16 output) is not finite: no scale makes it so
        throwLossNotFinite(step, r.loss, "the loss");
    r.lossScale = m_lossScale;
    r.skipped = skipped;
    m_stepScale = m_lossScale; // what the gradients now in their buffers are scaled by
    updateLossScale(r.skipped);
    if (!r.skipped)
        ++m_updatesDone;
    readTimes(r.layers);
    return r;
}

} // namespace convscope::gpu
