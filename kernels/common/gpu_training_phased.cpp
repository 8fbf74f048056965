// The GPU training sessions' phased step (training.h: forwardPass, zeroGradients, backwardPass, updateParameters),
// which the DCGAN loop (compute/training/gan_run.h) drives on cuda and cudnn alike: the same forward, per-layer
// backward (backwardLayer) and optimizer kernels as step(), with the update deferred and each parameter's gradient
// added into a FP32 sum buffer (allocated at the first zeroGradients) after every backward pass. Under data parallel
// (any GPU session, built with NCCL; gpu_training_parallel.cpp) every backward pass averages its gradients across the
// ranks in buckets that overlap with the rest of the pass, as PyTorch DDP does at every backward(), and the averages
// are what is summed; the sums, and so the updates and FP16's skips, are then the same on every rank. Mixed precision:
// the input and the output gradient converted on the device, the output converted back. FP16 scales the loss with the
// loop's GradScaler (setLossScale; one scaler spans the loop's two optimizers): the output gradients come scaled, the
// backward runs whole without a per-layer check (an overflow is expected there, and is not an error), and
// updateParameters checks the sums, then divides them by the scale as the optimizer reads them or, where one is not
// finite, skips the update on the device and reports it.
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/gpu_training_session.h"
#include "kernels/common/training_kernels.cuh"

#include <cmath>

namespace convscope::gpu {

namespace {
    size_t floatBytes(int64_t count) { return size_t(count) * sizeof(float); }
} // namespace

void GpuTrainingSessionBase::beginPass()
{
    if (!m_prepared)
        throw Error(m_prefix + ": the phased step before prepare()");
    makeCurrent();
    passStarts();
    for (size_t i = 0; i < layerCount(); ++i)
        layerState(i).timed = {};
}

void GpuTrainingSessionBase::phasedForward(int64_t step, std::vector<LayerPhaseMs>& times)
{
    m_inputResident = false; // the phased loops pass a different input each time (real, then fake images)
    m_step = step;
    if (m_deferred)
        pendingPass(DeferredPass::Kind::Forward);
    for (size_t i = 0; i < layerCount(); ++i)
        timedPhase(i, 0, [&] { forward(i); });
    if (m_deferred) {
        times.clear();
        return;
    }
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(m_stream->get())); // the events, before they are read
    readTimes(times);
}

void GpuTrainingSessionBase::forwardPassResident(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times)
{
    beginPass();
    const Shape& want = m_shapes.input;
    if (input.shape().numel() != want.numel() || input.shape().n != want.n)
        throw InputError("train: the input is " + input.shape().str() + " but the network expects " + want.str());
    uploadInput(input);
    phasedForward(step, times);
}

Tensor GpuTrainingSessionBase::forwardPass(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times)
{
    forwardPassResident(input, step, times);
    return m_deferred ? Tensor() : lastOutput();
}

Tensor GpuTrainingSessionBase::lastOutput() const
{
    if (!m_prepared)
        throw Error(m_prefix + ": lastOutput() before prepare()");
    makeCurrent();
    return downloadAs(m_out[layerCount() - 1], m_outputType, m_hostOutput.shape(), 1.0f);
}

bool GpuTrainingSessionBase::handsOffTo(const TrainingSession& other) const
{
    const auto* peer = dynamic_cast<const GpuTrainingSessionBase*>(&other);
    return peer && peer != this && m_prepared && peer->m_prepared && peer->m_backend == m_backend
        && peer->m_device == m_device && peer->m_storage == m_storage;
}

const GpuTrainingSessionBase& GpuTrainingSessionBase::handOffPeer(const TrainingSession& other, const char* what) const
{
    if (!handsOffTo(other))
        throw Error(m_prefix + ": " + what
            + " needs a prepared GPU session of the same backend, device and storage type (handsOffTo)");
    return static_cast<const GpuTrainingSessionBase&>(other);
}

void GpuTrainingSessionBase::copyFromPeer(
    const GpuTrainingSessionBase& peer, const void* src, DType srcType, void* dst, DType dstType, int64_t count)
{
    const cudaStream_t st = m_stream->get();
    peer.m_handOff.record(peer.m_stream->get()); // after the peer's queued work, which wrote `src`
    CONVSCOPE_CUDA_CHECK(cudaStreamWaitEvent(st, peer.m_handOff.get(), 0));
    if (srcType == dstType)
        CONVSCOPE_CUDA_CHECK(
            cudaMemcpyAsync(dst, src, size_t(count) * dtypeBytes(srcType), cudaMemcpyDeviceToDevice, st));
    else
        train::convertScaled(src, srcType, dst, dstType, count, 1.0f, st);
    // The peer's next write of `src` waits for this copy (without the host between them: deferred reads).
    m_copyDone.record(st);
    CONVSCOPE_CUDA_CHECK(cudaStreamWaitEvent(peer.m_stream->get(), m_copyDone.get(), 0));
}

Tensor GpuTrainingSessionBase::forwardPassOn(
    const TrainingSession& producer, int64_t step, std::vector<LayerPhaseMs>& times)
{
    const GpuTrainingSessionBase& peer = handOffPeer(producer, "forwardPassOn");
    beginPass();
    const size_t last = peer.layerCount() - 1;
    const Shape& given = peer.m_shapes.layers[last].out;
    if (given.numel() != m_shapes.input.numel() || given.n != m_shapes.input.n)
        throw InputError("train: the input is " + given.str() + " but the network expects " + m_shapes.input.str());
    copyFromPeer(peer, peer.m_out[last], peer.m_outputType, m_input.get(), m_storage, given.numel());
    phasedForward(step, times);
    return m_deferred ? Tensor() : lastOutput();
}

void GpuTrainingSessionBase::backwardPassOn(
    const TrainingSession& consumer, int64_t step, std::vector<LayerPhaseMs>& times)
{
    const GpuTrainingSessionBase& peer = handOffPeer(consumer, "backwardPassOn");
    if (!peer.m_train.inputGradient || !peer.m_inputHas)
        throw Error(m_prefix + ": backwardPassOn needs the consumer's input gradient (TrainingOptions::inputGradient)");
    if (peer.m_stepScale != m_stepScale)
        throw Error(m_prefix + ": backwardPassOn between sessions with different loss scales");
    if (peer.m_shapes.input.numel() != m_hostGrad.numel())
        throw InputError("train: the output gradient is " + peer.m_shapes.input.str() + " but the network's output is "
            + m_hostGrad.shape().str());
    ensureSums();
    beginPass();
    copyFromPeer(
        peer, peer.m_inputGrad.get(), peer.m_storage, m_grad[layerCount() - 1], m_outputType, m_hostGrad.numel());
    phasedBackward(step, times);
}

void GpuTrainingSessionBase::zeroGradients()
{
    beginPass();
    const cudaStream_t st = m_stream->get();
    for (size_t i = 0; i < layerCount(); ++i) {
        TrainLayerState& t = layerState(i);
        const auto zero = [&](DeviceBuffer& sum, bool trains, int64_t count, const char* what) {
            if (!trains)
                return;
            if (!sum.get())
                sum = DeviceBuffer(floatBytes(count), what);
            CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(sum.get(), 0, sum.bytes(), st));
        };
        zero(t.sumW, t.trainWeight, t.weightCount, "train: a weight gradient's sum");
        zero(t.sumB, t.trainBias, t.biasCount, "train: a bias gradient's sum");
        t.summed = false;
    }
    m_sumsLocal = false;
    // No synchronisation: everything that reads the sums runs on the same stream, after the clears.
}

void GpuTrainingSessionBase::ensureSums()
{
    for (size_t i = 0; i < layerCount(); ++i) {
        const TrainLayerState& t = layerState(i);
        if ((t.trainWeight && !t.sumW.get()) || (t.trainBias && !t.sumB.get())) {
            zeroGradients();
            return;
        }
    }
}

void GpuTrainingSessionBase::backwardPass(const Tensor& outputGradient, int64_t step, std::vector<LayerPhaseMs>& times)
{
    if (!m_prepared)
        throw Error(m_prefix + ": the phased step before prepare()");
    if (outputGradient.numel() != m_hostGrad.numel())
        throw InputError("train: the output gradient is " + outputGradient.shape().str()
            + " but the network's output is " + m_hostGrad.shape().str());
    ensureSums();
    beginPass();
    uploadStorage(
        outputGradient, m_grad[layerCount() - 1], m_outputType, m_gradStage, "train: the FP32 output gradient");
    phasedBackward(step, times);
}

void GpuTrainingSessionBase::phasedBackward(int64_t step, std::vector<LayerPhaseMs>& times)
{
    const cudaStream_t st = m_stream->get();
    const size_t count = layerCount(), last = count - 1;
    CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(m_flags.get(), 0, count * sizeof(int), st));
    std::vector<char> has(count, 0);
    has[last] = 1;
    char inputHas = 0;
    // Layer k's gradients (as the update reads them: averaged under data parallel) added into its sums.
    const auto addSum = [&](size_t k) {
        TrainLayerState& t = layerState(k);
        if (t.trainWeight)
            train::addInto(t.sumW.floats(), t.gradWeightRead(), t.gradReadType(), t.weightCount, st);
        if (t.trainBias)
            train::addInto(t.sumB.floats(), t.gradBiasRead(), t.gradReadType(), t.biasCount, st);
        t.summed = t.summed || t.trainWeight || t.trainBias;
    };
    // Data parallel: averaged across the ranks, or (setGradientSync(false)) this rank's own gradients summed here.
    const bool averaged = averagesGradients() && m_gradientSync, local = averagesGradients() && !m_gradientSync;
    const bool fold = averaged && m_sumsLocal;
    if (m_deferred)
        pendingPass(DeferredPass::Kind::Backward).averaged = averaged;
    if (averaged)
        passBackwardStarts();
    for (size_t k = count; k-- > 0;) {
        if (has[k]) {
            backwardLayer(k, has, inputHas, !lossScaled());
            if (local)
                widenGradients(k); // mixed precision: the FP32 window addSum reads (the bucket's, not sent)
            if (!averaged)
                addSum(k);
        }
        if (averaged)
            gradientsReady(k, has, fold); // launches the buckets this layer completes, while the backward goes on
    }
    if (averaged) // the same flags on every rank after this (a rank's own input gradient's included)
        finishAveragedPass(has, addSum, static_cast<int*>(m_flags.get()), count, step, fold);
    m_sumsLocal = local || (m_sumsLocal && !averaged);
    m_lastPassLocal = local;
    m_inputHas = inputHas != 0;
    if (m_deferred) { // the flags kept for collectPasses (overflows under FP16 are updateParameters' to find)
        if (!lossScaled()) {
            const size_t slot = takeFlagSlot();
            m_pending.back().flagSlot = slot;
            CONVSCOPE_CUDA_CHECK(
                cudaMemcpyAsync(flagSlot(slot), m_flags.get(), count * sizeof(int), cudaMemcpyDeviceToDevice, st));
        }
        times.clear();
        return;
    }
    if (lossScaled())
        CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st)); // overflows are updateParameters' to find
    else
        throwIfGradientFlagged(step);
    readTimes(times);
}

bool GpuTrainingSessionBase::updateParameters(int64_t step, std::vector<LayerPhaseMs>& times)
{
    beginPass();
    const cudaStream_t st = m_stream->get();
    // FP16: GradScaler's step — every sum checked into one flag, which the optimizer kernels read (skip on the device);
    // Adam counts the updates done, not the loop's steps. Deferred reads check the sums so in every mode: a gradient
    // that is not finite is found at collectPasses, after the update it would have spoilt was skipped.
    int* overflow = nullptr;
    if (m_deferred) {
        for (const PendingPass& p : m_pending)
            if (lossScaled() && p.kind == DeferredPass::Kind::Update)
                throw Error(m_prefix + ": two FP16 updates between collectPasses (the first's skip is not known yet)");
        pendingPass(DeferredPass::Kind::Update);
    }
    if (lossScaled() || m_deferred) {
        overflow = lossFlag();
        clearLossFlag();
        for (size_t k = 0; k < layerCount(); ++k)
            if (layerState(k).summed)
                flagParameterGradients(k, overflow, true);
    }
    const int64_t optimizerStep = lossScaled() ? m_updatesDone + 1 : step;
    for (size_t k = 0; k < layerCount(); ++k) {
        TrainLayerState& t = layerState(k);
        if (!t.summed)
            continue; // no gradient reached it: PyTorch's optimizer skips a parameter whose grad is None
        timedPhase(k, 3, [&] { update(k, optimizerStep, overflow, nullptr, true); }); // reads the FP32 sums
    }
    if (m_deferred) { // the skip flag kept for collectPasses, which counts the update if it ran
        const size_t slot = takeFlagSlot();
        m_pending.back().flagSlot = slot;
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(flagSlot(slot), overflow, sizeof(int), cudaMemcpyDeviceToDevice, st));
        times.clear();
        return true;
    }
    int overflowed = 0;
    if (overflow)
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(&overflowed, overflow, sizeof(int), cudaMemcpyDeviceToHost, st));
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
    readTimes(times);
    if (overflowed)
        return false;
    ++m_updatesDone;
    return true;
}

void GpuTrainingSessionBase::setLossScale(double scale)
{
    if (!lossScaled())
        return; // no loss scaling in this math mode: gradients are never scaled
    if (!(scale > 0) || !std::isfinite(scale))
        throw InputError(m_prefix + ": a loss scale must be a positive number, got " + std::to_string(scale));
    m_scaler.reset(scale);
    m_stepScale = scale; // parameterGradient and inputGradient divide by it
}

} // namespace convscope::gpu
