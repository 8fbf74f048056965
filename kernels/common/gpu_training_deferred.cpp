// The GPU sessions' phased step read once (training.h: deferReads, labelLoss, backwardPassFromLoss, collectPasses),
// which the DCGAN loop drives on a GPU pair: each pass queues its work and records its own events; the loss's gradient
// is made on the device from the output where it lies; nothing waits until collectPasses. Per pass the host used to
// wait for the GPU (the scores came down for the loss, the times were read, the flags checked): on one GPU the step's
// wall clock ran 20 % over its GPU time, and across GPUs every wait lined the ranks up.
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/gpu_training_session.h"
#include "kernels/common/loss_kernels.cuh"
#include "kernels/common/training_kernels.cuh"

#include <algorithm>

namespace convscope::gpu {

namespace {
    // Backward passes and updates between two collects (the DCGAN loop makes 4 on D, 2 on G).
    constexpr size_t kFlagSlots = 32;
} // namespace

bool GpuTrainingSessionBase::deferReads(bool on)
{
    if (!m_prepared)
        throw Error(m_prefix + ": deferReads before prepare()");
    if (!on && !m_pending.empty())
        throw Error(m_prefix + ": deferReads(false) with passes not collected");
    makeCurrent();
    if (on && !m_passFlags.get())
        m_passFlags = DeviceBuffer(kFlagSlots * (layerCount() + 1) * sizeof(int), "train: the deferred passes' flags");
    m_deferred = on;
    return on;
}

size_t GpuTrainingSessionBase::takeEvents()
{
    while (m_eventPool.size() < m_eventsUsed + 2)
        m_eventPool.emplace_back();
    m_eventsUsed += 2;
    return m_eventsUsed - 2;
}

GpuTrainingSessionBase::PendingPass& GpuTrainingSessionBase::pendingPass(DeferredPass::Kind kind)
{
    m_pending.push_back({});
    m_pending.back().kind = kind;
    return m_pending.back();
}

size_t GpuTrainingSessionBase::takeFlagSlot()
{
    if (m_flagSlotsUsed == kFlagSlots)
        throw Error(m_prefix + ": more than " + std::to_string(kFlagSlots)
            + " backward passes and updates between collectPasses");
    return m_flagSlotsUsed++;
}

int* GpuTrainingSessionBase::flagSlot(size_t slot) const
{
    return static_cast<int*>(m_passFlags.get()) + slot * (layerCount() + 1);
}

void GpuTrainingSessionBase::labelLoss(float label)
{
    if (!m_deferred)
        throw Error(m_prefix + ": labelLoss outside deferReads(true)");
    if (m_train.loss != LossKind::BCEWithLogits)
        throw Error(m_prefix + ": labelLoss needs the session's loss to be BCE-with-logits");
    makeCurrent();
    const cudaStream_t st = m_stream->get();
    const Shape& out = m_shapes.layers.back().out;
    const size_t last = layerCount() - 1;
    auto target = std::find_if(m_labels.begin(), m_labels.end(), [&](const auto& l) { return l.first == label; });
    if (target == m_labels.end()) { // once per value (the loop's 1 and 0)
        Tensor host(out);
        std::fill(host.data(), host.data() + host.numel(), label);
        m_labels.emplace_back(label, DeviceBuffer(size_t(out.numel()) * sizeof(float), "train: a loss's labels"));
        target = m_labels.end() - 1;
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
            target->second.get(), host.data(), size_t(out.numel()) * sizeof(float), cudaMemcpyHostToDevice, st));
        CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st)); // `host` goes out of scope
    }
    PendingPass& p = pendingPass(DeferredPass::Kind::Loss);
    if (m_logitPool.size() == m_logitsUsed)
        m_logitPool.emplace_back(size_t(out.numel()) * sizeof(float), "train: a loss's logits");
    p.logits = m_logitsUsed++;
    p.lossEvents = takeEvents();
    m_eventPool[p.lossEvents].record(st);
    train::convertScaled(m_out[last], m_outputType, m_logitPool[p.logits].get(), DType::F32, out.numel(), 1.0f, st);
    // The gradient, times the loop's loss scale under FP16 (scaler.scale(loss).backward()); the loss itself is
    // recomputed on the host from the logits after the collect, as the per-pass loop computes it.
    char* scratch = static_cast<char*>(m_lossScratch.get());
    train::deviceLoss(LossKind::BCEWithLogits, m_out[last], target->second.floats(), out.numel(), out.n, m_grad[last],
        reinterpret_cast<double*>(scratch), deviceLoss(), lossFlag(), st, m_outputType,
        lossScaled() ? m_stepScale : 1.0);
    m_eventPool[p.lossEvents + 1].record(st);
}

void GpuTrainingSessionBase::backwardPassFromLoss(int64_t step, std::vector<LayerPhaseMs>& times)
{
    if (!m_deferred || m_pending.empty() || m_pending.back().kind != DeferredPass::Kind::Loss)
        throw Error(m_prefix + ": backwardPassFromLoss must follow labelLoss");
    ensureSums();
    beginPass();
    phasedBackward(step, times);
}

std::vector<DeferredPass> GpuTrainingSessionBase::collectPasses(int64_t step)
{
    if (!m_deferred)
        throw Error(m_prefix + ": collectPasses outside deferReads(true)");
    makeCurrent();
    const cudaStream_t st = m_stream->get();
    awaitDeferredCommunication(step); // a rank that does not answer: InputError within the timeout, never a hang
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
    std::vector<int> flags(m_flagSlotsUsed * (layerCount() + 1));
    if (!flags.empty())
        CONVSCOPE_CUDA_CHECK(
            cudaMemcpy(flags.data(), m_passFlags.get(), flags.size() * sizeof(int), cudaMemcpyDeviceToHost));
    const std::vector<PendingPass> pending = std::move(m_pending);
    m_pending.clear();
    m_eventsUsed = m_logitsUsed = m_flagSlotsUsed = 0;
    std::vector<DeferredPass> out(pending.size());
    const Shape& logitShape = m_shapes.layers.back().out;
    for (size_t k = 0; k < pending.size(); ++k) {
        const PendingPass& p = pending[k];
        DeferredPass& r = out[k];
        r.kind = p.kind;
        if (p.kind == DeferredPass::Kind::Loss) {
            r.logits = Tensor(logitShape);
            CONVSCOPE_CUDA_CHECK(cudaMemcpy(r.logits.data(), m_logitPool[p.logits].get(),
                size_t(logitShape.numel()) * sizeof(float), cudaMemcpyDeviceToHost));
            r.lossMs = elapsedMs(m_eventPool[p.lossEvents], m_eventPool[p.lossEvents + 1]);
            continue;
        }
        r.times.assign(layerCount(), { -1, -1, -1, -1 }); // -1: the phase did not run, as readTimes says it
        for (const auto& [layer, phase, e] : p.timed) {
            double& ms = phase == 0 ? r.times[layer].forward
                : phase == 1        ? r.times[layer].backwardData
                : phase == 2        ? r.times[layer].backwardWeights
                                    : r.times[layer].update;
            ms = elapsedMs(m_eventPool[e], m_eventPool[e + 1]);
        }
        if (p.kind == DeferredPass::Kind::Update) {
            r.skipped = flags[p.flagSlot * (layerCount() + 1)] != 0;
            if (!r.skipped)
                ++m_updatesDone;
        }
    }
    // The last averaged pass's all-reduces (their events are the data-parallel session's, one set a pass).
    for (size_t k = pending.size(); k-- > 0;)
        if (pending[k].averaged) {
            out[k].buckets = averagedPassBuckets();
            break;
        }
    // A gradient that was not finite, in the order the per-pass calls would have found it (the update it reached
    // was skipped on the device); FP16's overflows are skips instead (r.skipped).
    for (const PendingPass& p : pending)
        if (p.kind == DeferredPass::Kind::Backward && p.flagSlot != SIZE_MAX)
            throwIfFlagged(step,
                std::vector<int>(flags.begin() + std::ptrdiff_t(p.flagSlot * (layerCount() + 1)),
                    flags.begin() + std::ptrdiff_t((p.flagSlot + 1) * (layerCount() + 1))));
    return out;
}

} // namespace convscope::gpu
