// The cudnn session's phased step (training.h: forwardPass, zeroGradients, backwardPass, updateParameters), which the
// DCGAN loop (compute/training/gan_run.h) drives: the same forward, per-layer backward and optimizer kernels as step(),
// with the update deferred and each parameter's gradient added into a sum buffer (allocated at the first
// zeroGradients) after every backward pass. One GPU only: data parallel averages inside step().
#include "compute/error.h"
#include "compute/nvtx.h"
#include "kernels/common/cuda_check.h"
#include "kernels/cudnn/training_layers.h"

namespace convscope::cudnn {

namespace {
    size_t floatBytes(int64_t count) { return size_t(count) * sizeof(float); }
} // namespace

Handles& CudnnTrainingSession::beginPass()
{
    if (!m_prepared)
        throw Error(m_prefix + ": the phased step before prepare()");
    if (m_ddp)
        throw UnsupportedError(m_prefix + ": the phased training step (a GAN's) is unsupported under data parallel");
    makeCurrent();
    Handles& h = threadHandles();
    const cudaStream_t st = m_stream->get();
    CONVSCOPE_CUDNN_CHECK(cudnnSetStream(h.cudnn, st));
    CONVSCOPE_CUBLAS_CHECK(cublasSetStream(h.cublas, st));
    CONVSCOPE_CUBLAS_CHECK(cublasSetMathMode(h.cublas, CUBLAS_PEDANTIC_MATH));
    for (TrainLayer& t : m_layers)
        t.timed = {};
    return h;
}

Tensor CudnnTrainingSession::forwardPass(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times)
{
    Handles& h = beginPass();
    const Shape& want = m_shapes.input;
    if (input.shape().numel() != want.numel() || input.shape().n != want.n)
        throw InputError("train: the input is " + input.shape().str() + " but the network expects " + want.str());
    const cudaStream_t st = m_stream->get();
    CONVSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(m_input.get(), input.data(), floatBytes(want.numel()), cudaMemcpyHostToDevice, st));
    m_step = step;
    for (size_t i = 0; i < m_layers.size(); ++i)
        timedPhase(i, 0, [&] { forward(i, h); });
    const size_t last = m_layers.size() - 1;
    CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
        m_hostOutput.data(), m_out[last], floatBytes(m_hostOutput.numel()), cudaMemcpyDeviceToHost, st));
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
    readTimes(times);
    return m_hostOutput.clone();
}

void CudnnTrainingSession::zeroGradients()
{
    beginPass();
    const cudaStream_t st = m_stream->get();
    for (TrainLayer& t : m_layers) {
        const auto zero = [&](gpu::DeviceBuffer& sum, bool trains, int64_t count, const char* what) {
            if (!trains)
                return;
            if (!sum.get())
                sum = gpu::DeviceBuffer(floatBytes(count), what);
            CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(sum.get(), 0, sum.bytes(), st));
        };
        zero(t.sumW, t.trainWeight, t.weightCount, "train: a weight gradient's sum");
        zero(t.sumB, t.trainBias, t.biasCount, "train: a bias gradient's sum");
        t.summed = false;
    }
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
}

void CudnnTrainingSession::backwardPass(const Tensor& outputGradient, int64_t step, std::vector<LayerPhaseMs>& times)
{
    const size_t count = m_layers.size(), last = count - 1;
    if (outputGradient.numel() != m_hostGrad.numel())
        throw InputError("train: the output gradient is " + outputGradient.shape().str()
            + " but the network's output is " + m_hostGrad.shape().str());
    for (const TrainLayer& t : m_layers)
        if ((t.trainWeight && !t.sumW.get()) || (t.trainBias && !t.sumB.get())) {
            zeroGradients();
            break;
        }
    Handles& h = beginPass();
    const cudaStream_t st = m_stream->get();
    CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
        m_grad[last], outputGradient.data(), floatBytes(outputGradient.numel()), cudaMemcpyHostToDevice, st));
    CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(m_flags.get(), 0, count * sizeof(int), st));
    std::vector<char> has(count, 0);
    has[last] = 1;
    char inputHas = 0;
    for (size_t k = count; k-- > 0;) {
        if (!has[k])
            continue;
        backwardLayer(k, has, inputHas, h);
        TrainLayer& t = m_layers[k];
        if (t.trainWeight)
            train::accumulate(t.sumW.floats(), t.gW, t.weightCount, st);
        if (t.trainBias)
            train::accumulate(t.sumB.floats(), t.gB, t.biasCount, st);
        t.summed = t.summed || t.trainWeight || t.trainBias;
    }
    m_inputHas = inputHas != 0;
    throwIfGradientFlagged(step);
    readTimes(times);
}

void CudnnTrainingSession::updateParameters(int64_t step, std::vector<LayerPhaseMs>& times)
{
    beginPass();
    const cudaStream_t st = m_stream->get();
    for (size_t k = 0; k < m_layers.size(); ++k) {
        TrainLayer& t = m_layers[k];
        if (!t.summed)
            continue; // no gradient reached it: PyTorch's optimizer skips a parameter whose grad is None
        timedPhase(k, 3, [&] {
            // The optimizer kernel reads the gradient buffers: the sums go there first (device to device).
            if (t.trainWeight)
                CONVSCOPE_CUDA_CHECK(
                    cudaMemcpyAsync(t.gW, t.sumW.get(), floatBytes(t.weightCount), cudaMemcpyDeviceToDevice, st));
            if (t.trainBias)
                CONVSCOPE_CUDA_CHECK(
                    cudaMemcpyAsync(t.gB, t.sumB.get(), floatBytes(t.biasCount), cudaMemcpyDeviceToDevice, st));
            update(k, step);
        });
    }
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
    readTimes(times);
}

} // namespace convscope::cudnn
