// The training step's loss on the device (gpu_training_session.h); the data-parallel step averages it across the
// ranks where it lies.
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/gpu_training_session.h"
#include "kernels/common/loss_kernels.cuh"

#include <cmath>
#include <cstring>

namespace convscope::gpu {

namespace {
    size_t floatBytes(int64_t count) { return size_t(count) * sizeof(float); }
    // The device loss scratch: the partial sums, then the loss, then its flag.
    size_t lossOffset(int64_t parts) { return size_t(parts) * sizeof(double); }
    size_t flagOffset(int64_t parts) { return lossOffset(parts) + sizeof(double); }
} // namespace

void GpuTrainingSessionBase::prepareLoss()
{
    const Shape& out = m_shapes.layers.back().out;
    const bool ce = m_train.loss == LossKind::CrossEntropy;
    m_target = DeviceBuffer(floatBytes(ce ? out.n : out.numel()), "train: the target");
    m_lossParts = train::lossPartialCount(m_train.loss, out.numel(), out.n);
    m_lossScratch = DeviceBuffer(flagOffset(m_lossParts) + sizeof(int), "train: the loss's partial sums");
    m_lossHost.reserve(sizeof(double) + sizeof(int));
    m_targetResident = false;
}

void GpuTrainingSessionBase::clearLossFlag()
{
    CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(
        static_cast<char*>(m_lossScratch.get()) + flagOffset(m_lossParts), 0, sizeof(int), m_stream->get()));
}

const int* GpuTrainingSessionBase::lossBad() const { return lossFlag(); }

double* GpuTrainingSessionBase::deviceLoss() const
{
    return reinterpret_cast<double*>(static_cast<char*>(m_lossScratch.get()) + lossOffset(m_lossParts));
}

int* GpuTrainingSessionBase::lossFlag() const
{
    return reinterpret_cast<int*>(static_cast<char*>(m_lossScratch.get()) + flagOffset(m_lossParts));
}

void GpuTrainingSessionBase::lossOnDevice(const Tensor& target)
{
    const cudaStream_t st = m_stream->get();
    const Shape& out = m_shapes.layers.back().out;
    const size_t last = layerCount() - 1;
    if (!m_targetResident) {
        const bool ce = m_train.loss == LossKind::CrossEntropy;
        const int64_t want = ce ? out.n : out.numel();
        if (target.numel() != want)
            throw InputError("train: the target has " + std::to_string(target.numel()) + " values but the loss needs "
                + std::to_string(want) + " for the output " + out.str());
        if (ce)
            checkClassIndices(out, target);
        CONVSCOPE_CUDA_CHECK(
            cudaMemcpyAsync(m_target.get(), target.data(), floatBytes(want), cudaMemcpyHostToDevice, st));
    }
    m_targetResident = m_train.sameInputEveryStep;
    char* scratch = static_cast<char*>(m_lossScratch.get());
    m_lossStart.record(st);
    train::deviceLoss(m_train.loss, m_out[last], m_target.floats(), out.numel(), out.n, m_grad[last],
        reinterpret_cast<double*>(scratch), reinterpret_cast<double*>(scratch + lossOffset(m_lossParts)),
        reinterpret_cast<int*>(scratch + flagOffset(m_lossParts)), st, m_outputType, m_scaler.scale());
    m_lossStop.record(st);
    CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
        m_lossHost.floats(), scratch + lossOffset(m_lossParts), sizeof(double), cudaMemcpyDeviceToHost, st));
}

void GpuTrainingSessionBase::readDeviceLoss(StepResult& r) const
{
    double loss = 0;
    std::memcpy(&loss, m_lossHost.floats(), sizeof(double));
    r.loss = loss;
    r.lossMs = elapsedMs(m_lossStart, m_lossStop);
}

void GpuTrainingSessionBase::throwLossNotFinite(int64_t step, double loss, const char* what) const
{
    throw InputError("step " + std::to_string(step) + ": " + what + " is " + std::to_string(loss)
        + "; the first layer whose gradient is not finite is " + trainingLayerLabel(m_net, layerCount() - 1)
        + " (its output's gradient from the loss)");
}

} // namespace convscope::gpu
