// Data parallel in the shared flow (gpu_training_session.h): the communicator and buckets (data_parallel.h) made at
// prepare, the step with the all-reduces overlapping the backward, and the phased step's hooks that the DCGAN loop
// across GPUs drives. Every GPU training session takes it — cudnn's and our kernels' alike — since a layer's
// gradients are only ever written through TrainLayerState's gW / gB (a window of a bucket here) and widened into
// reducedW / reducedB under mixed precision. What is one session's own (cudnn: every rank running rank 0's
// algorithms) is its afterPlanning.
#include "kernels/common/data_parallel.h"
#include "kernels/common/gpu_training_session.h"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/training_kernels.cuh"

#include "convscope_config.h"

#include <cmath>

namespace convscope::gpu {

void GpuTrainingSessionBase::setUpDataParallel()
{
    if (m_train.group && m_train.group->worldSize() > 1) {
        prepareDataParallel(); // the gradients move into the buckets' flat buffers (or widen into them)
    } else {
        m_ddp.reset();
        m_ddpGroup = nullptr;
        m_bucketsAfter.assign(layerCount(), {});
    }
}

void GpuTrainingSessionBase::endDataParallel() noexcept { m_ddp.reset(); }

bool GpuTrainingSessionBase::averagesGradients() const { return m_ddp != nullptr; }

void GpuTrainingSessionBase::gradientsReady(size_t k, const std::vector<char>& has, bool fold)
{
    bucketsReadyAfter(k, fold ? &has : nullptr);
}

StepResult GpuTrainingSessionBase::step(const Tensor& input, const Tensor& target, int64_t step)
{
    return m_ddp ? stepDataParallel(input, target, step) : stepOnOneGpu(input, target, step);
}

bool GpuTrainingSessionBase::dataParallel() const { return CONVSCOPE_WITH_NCCL != 0; }

void GpuTrainingSessionBase::prepareDataParallel()
{
    if (!m_ddp || m_ddpGroup != m_train.group.get()) {
        m_ddp.reset();
        m_ddp = std::make_unique<DataParallel>(*m_train.group, m_device, m_train.collectiveTimeoutSeconds);
        m_ddpGroup = m_train.group.get();
    }
    // Each parameter's window starts on a 256-byte boundary (cuDNN's and NCCL's fast paths like aligned pointers);
    // the padding is averaged with the rest and read by nobody.
    const auto padded = [](int64_t n) { return (n + 63) / 64 * 64; };
    const size_t count = layerCount();
    std::vector<int64_t> bytes(count, 0);
    for (size_t k = 0; k < count; ++k) {
        const TrainLayerState& t = layerState(k);
        bytes[k] = int64_t(sizeof(float))
            * ((t.trainWeight ? padded(t.weightCount) : 0) + (t.trainBias ? padded(t.biasCount) : 0));
    }
    m_ddp->setBuckets(assignBuckets(bytes));
    m_bucketsAfter.assign(count, {});
    const std::vector<GradientBucket>& plans = m_ddp->plans();
    for (size_t b = 0; b < plans.size(); ++b) {
        float* at = m_ddp->bucketData(b);
        for (size_t k : plans[b].layers) {
            TrainLayerState& t = layerState(k);
            // FP32 gradients are written into the bucket; half ones (mixed precision) where they were, then widened
            // into the bucket (widenGradients) for an FP32 all-reduce, as PyTorch DDP under autocast does.
            const bool direct = t.gradType == DType::F32;
            const auto place = [&](bool on, DeviceBuffer& own, void*& g, float*& reduced, int64_t n) {
                if (!on)
                    return;
                if (direct) {
                    own = DeviceBuffer();
                    g = at;
                } else {
                    reduced = at;
                }
                at += padded(n);
            };
            place(t.trainWeight, t.gradWeight, t.gW, t.reducedW, t.weightCount);
            place(t.trainBias, t.gradBias, t.gB, t.reducedB, t.biasCount);
        }
        m_bucketsAfter[plans[b].readyAfter()].push_back(b);
    }
}

void GpuTrainingSessionBase::bucketsReadyAfter(size_t k, const std::vector<char>* has)
{
    if (!m_ddp)
        return;
    widenGradients(k);
    for (size_t b : m_bucketsAfter.at(k)) {
        if (has)
            foldSumsInto(b, *has);
        m_ddp->launch(b, m_stream->get());
    }
}

void GpuTrainingSessionBase::foldSumsInto(size_t bucket, const std::vector<char>& has)
{
    const cudaStream_t st = m_stream->get();
    for (size_t k : m_ddp->plans()[bucket].layers) {
        TrainLayerState& t = layerState(k);
        const auto fold = [&](bool on, float* window, DeviceBuffer& sum, int64_t n) {
            if (!on)
                return;
            if (!has[k]) // a stale gradient of an earlier pass lies there
                CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(window, 0, size_t(n) * sizeof(float), st));
            train::addInto(window, sum.get(), DType::F32, n, st);
            CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(sum.get(), 0, sum.bytes(), st));
        };
        // The FP32 window of each gradient in the bucket: the gradient itself, or its widened copy (mixed precision).
        fold(t.trainWeight, t.reducedW ? t.reducedW : static_cast<float*>(t.gW), t.sumW, t.weightCount);
        fold(t.trainBias, t.reducedB ? t.reducedB : static_cast<float*>(t.gB), t.sumB, t.biasCount);
    }
}

void GpuTrainingSessionBase::waitAllBuckets()
{
    for (size_t b = 0; b < m_ddp->plans().size(); ++b)
        m_ddp->waitBucket(b, m_stream->get());
}

void GpuTrainingSessionBase::passBackwardStarts() { m_ddp->backwardStarts(m_stream->get()); }

void GpuTrainingSessionBase::finishAveragedPass(const std::vector<char>& has, const std::function<void(size_t)>& addSum,
    int* flags, size_t count, int64_t step, bool fold)
{
    const cudaStream_t st = m_stream->get();
    m_ddp->backwardEnds(st);
    // Folded: the window of a layer with a gradient in this pass or an earlier one holds the average of both.
    std::vector<char> summed = has;
    if (fold)
        for (size_t k = 0; k < summed.size(); ++k)
            summed[k] = char(has[k] || layerState(k).summed);
    afterEachBucket(summed, addSum);
    m_ddp->finishPass(flags, count, st, step, !readsDeferred());
}

void GpuTrainingSessionBase::awaitDeferredCommunication(int64_t step)
{
    if (m_ddp)
        m_ddp->awaitCommunication(step);
}

std::vector<BucketTiming> GpuTrainingSessionBase::averagedPassBuckets() const
{
    return m_ddp ? m_ddp->timings() : std::vector<BucketTiming> {};
}

std::vector<BucketTiming> GpuTrainingSessionBase::passBuckets() const
{
    return m_ddp && !lastPassLocal() ? m_ddp->timings() : std::vector<BucketTiming> {};
}

void GpuTrainingSessionBase::afterEachBucket(const std::vector<char>& has, const std::function<void(size_t)>& work)
{
    const std::vector<GradientBucket>& plans = m_ddp->plans();
    for (size_t b = 0; b < plans.size(); ++b) {
        m_ddp->waitBucket(b, m_stream->get());
        for (size_t k : plans[b].layers)
            if (has[k] && trains(k))
                work(k);
    }
}

// The shared step with the all-reduces: the loss on the device as on one GPU, each bucket launched as soon as the
// backward has written its gradients, the updates after the averages. Finiteness as on one GPU (the updates flag a
// parameter gradient that is not finite, the input gradient gets one check), with the flags and the loss all-reduced
// so that every rank reaches the same verdict after the same collectives: none throws before the others are done.
StepResult GpuTrainingSessionBase::stepDataParallel(const Tensor& input, const Tensor& target, int64_t step)
{
    beginStep(input);
    const cudaStream_t st = m_stream->get();
    const size_t count = layerCount();
    StepResult r;
    r.layers.assign(count, {});
    uploadAndForward(input, step);
    lossOnDevice(target);
    std::vector<char> has(count, 0);
    has[count - 1] = 1;
    char inputHas = 0;
    int* anyFlag = static_cast<int*>(m_flags.get()) + count;
    m_ddp->backwardStarts(st);
    for (size_t k = count; k-- > 0;) {
        if (has[k]) // else nothing downstream read this output
            backwardLayer(k, has, inputHas, false);
        bucketsReadyAfter(k); // the update waits for the bucket's average (below)
    }
    m_inputHas = inputHas != 0;
    m_ddp->backwardEnds(st);
    if (lossScaled()) {
        // GradScaler under DDP: every averaged gradient checked (the same on every rank) and the loss's flags made
        // the ranks' maximum before any update, so all ranks skip the same steps; then the updates, unscaling.
        int* overflow = lossFlag();
        waitAllBuckets();
        for (size_t k = count; k-- > 0;)
            if (has[k] && trains(k))
                flagParameterGradients(k, overflow);
        m_ddp->allReduceMax(overflow, 1, st);
        updatesLossScaled(has);
    } else {
        if (m_inputHas)
            train::flagNonFinite(m_inputGrad.get(), m_shapes.input.numel(), anyFlag, st, m_storage);
        afterEachBucket(has, [&](size_t k) { timedPhase(k, 3, [&] { update(k, step, lossBad(), anyFlag); }); });
    }
    // Every rank's flags (the layers' and the step's any) become their maximum, the loss the ranks' mean.
    const double mean = m_ddp->finishStep(static_cast<int*>(m_flags.get()), count + 1, deviceLoss(), st, step);
    readDeviceLoss(r); // this rank's loss and its kernels' time
    r.loss = mean;
    if (!std::isfinite(r.loss))
        throwLossNotFinite(step, r.loss, "the loss (the mean over the ranks)");
    r.buckets = m_ddp->timings();
    r.backwardMs = m_ddp->backwardMs();
    if (lossScaled()) {
        recordLossScaledStep(r, stepFlags()[count] != 0); // a gradient that overflowed skips the step
        readTimes(r.layers);
        return r;
    }
    if (stepFlags()[count]) // a parameter gradient (averaged: the same on every rank) or some rank's input gradient
        throwFirstNonFiniteGradient(step, has, inputHas != 0);
    readTimes(r.layers);
    return r;
}

} // namespace convscope::gpu
