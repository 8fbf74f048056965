// The training step's loss on the device (loss_kernels.cuh): per-block partial sums in double, then one block adds
// them in a fixed order.
#include "kernels/common/cuda_check.h"
#include "kernels/common/loss_kernels.cuh"
#include "kernels/common/storage_types.cuh"

#include <algorithm>

namespace convscope::gpu::train {

namespace {
    constexpr int kThreads = 256;
    constexpr int kWarpsPerBlock = kThreads / 32;
    constexpr int64_t kMaxElementBlocks = 1024;

    // The block's values in `mine` summed as a fixed tree; the result in thread 0.
    __device__ double blockSum(double mine)
    {
        __shared__ double part[kThreads];
        part[threadIdx.x] = mine;
        __syncthreads();
        for (int half = kThreads / 2; half > 0; half /= 2) {
            if (int(threadIdx.x) < half)
                part[threadIdx.x] += part[threadIdx.x + half];
            __syncthreads();
        }
        return part[0];
    }

    // Cross-entropy from logits: one warp per row (sample); the row's loss log Σ exp(x − top) + top − x[t] and its
    // gradient (softmax − one-hot) / batch, in double as computeLoss.
    // T: the output's and the gradient's element type (mixed precision: FP16 or BF16, read widened); `gradScale`
    // multiplies the gradient only (the loss scale of an FP16 step, else 1).
    template <typename T>
    __global__ void crossEntropyKernel(
        const T* x, const float* target, int64_t batch, int64_t classes, T* g, double gradScale, double* partials)
    {
        const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
        const int64_t n = int64_t(blockIdx.x) * kWarpsPerBlock + warp;
        double rowLoss = 0;
        if (n < batch) {
            const T* row = x + n * classes;
            float top = -INFINITY;
            for (int64_t c = lane; c < classes; c += 32)
                top = fmaxf(top, toFloat(row[c]));
            for (int off = 16; off > 0; off /= 2)
                top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, off));
            double sum = 0;
            for (int64_t c = lane; c < classes; c += 32)
                sum += exp(double(toFloat(row[c])) - double(top));
            for (int off = 16; off > 0; off /= 2)
                sum += __shfl_xor_sync(0xffffffffu, sum, off);
            const auto t = static_cast<int64_t>(target[n]);
            for (int64_t c = lane; c < classes; c += 32)
                g[n * classes + c]
                    = fromFloat<T>(float((exp(double(toFloat(row[c])) - double(top)) / sum - (c == t ? 1.0 : 0.0))
                        / double(batch) * gradScale));
            if (lane == 0)
                rowLoss = double(top) + log(sum) - double(toFloat(row[t]));
        }
        // Lane 0 of each warp holds its row's loss (the others 0): the block's partial.
        const double total = blockSum(rowLoss);
        if (threadIdx.x == 0)
            partials[blockIdx.x] = total;
    }

    // MSE ((x − y)², gradient 2(x − y)/count) or BCE with logits (max(x, 0) − x·y + log1p(e^−|x|), gradient
    // (σ(x) − y)/count), each thread over a grid-stride run, in double.
    template <bool Bce, typename T>
    __global__ void elementLossKernel(
        const T* x, const float* y, int64_t count, T* g, double gradScale, double* partials)
    {
        double mine = 0;
        const double scale = gradScale / double(count);
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
             i += int64_t(gridDim.x) * blockDim.x) {
            const double v = toFloat(x[i]), t = y[i];
            if constexpr (Bce) {
                mine += fmax(v, 0.0) - v * t + log1p(exp(-fabs(v)));
                g[i] = fromFloat<T>(float((1.0 / (1.0 + exp(-v)) - t) * scale));
            } else {
                const double d = v - t;
                mine += d * d;
                g[i] = fromFloat<T>(float(2 * d * scale));
            }
        }
        const double total = blockSum(mine);
        if (threadIdx.x == 0)
            partials[blockIdx.x] = total;
    }

    // One block: the partials in a fixed order, divided; `bad` set when the loss is not finite.
    __global__ void finishLossKernel(const double* partials, int64_t parts, double divisor, double* loss, int* bad)
    {
        double mine = 0;
        for (int64_t i = threadIdx.x; i < parts; i += kThreads)
            mine += partials[i];
        const double total = blockSum(mine);
        if (threadIdx.x == 0) {
            const double value = total / divisor;
            *loss = value;
            if (!isfinite(value))
                *bad = 1;
        }
    }

    int64_t elementBlocks(int64_t count)
    {
        return std::max<int64_t>(1, std::min<int64_t>((count + kThreads - 1) / kThreads, kMaxElementBlocks));
    }
} // namespace

int64_t lossPartialCount(LossKind kind, int64_t count, int64_t batch)
{
    return kind == LossKind::CrossEntropy ? (batch + kWarpsPerBlock - 1) / kWarpsPerBlock : elementBlocks(count);
}

void deviceLoss(LossKind kind, const void* output, const float* target, int64_t count, int64_t batch, void* gradient,
    double* partials, double* loss, int* bad, cudaStream_t stream, DType type, double gradScale)
{
    const int64_t parts = lossPartialCount(kind, count, batch);
    const double divisor = kind == LossKind::CrossEntropy ? double(batch) : double(count);
    withStorageType(type, [&](auto v) {
        using T = decltype(v);
        const auto* x = static_cast<const T*>(output);
        auto* g = static_cast<T*>(gradient);
        switch (kind) {
        case LossKind::CrossEntropy:
            crossEntropyKernel<<<unsigned(parts), kThreads, 0, stream>>>(
                x, target, batch, count / batch, g, gradScale, partials);
            break;
        case LossKind::MSE:
            elementLossKernel<false>
                <<<unsigned(parts), kThreads, 0, stream>>>(x, target, count, g, gradScale, partials);
            break;
        case LossKind::BCEWithLogits:
            elementLossKernel<true><<<unsigned(parts), kThreads, 0, stream>>>(x, target, count, g, gradScale, partials);
            break;
        }
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::lossKernel");
    finishLossKernel<<<1, kThreads, 0, stream>>>(partials, parts, divisor, loss, bad);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::finishLossKernel");
}

} // namespace convscope::gpu::train
