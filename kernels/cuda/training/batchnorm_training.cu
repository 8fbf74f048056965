// Batch norm's training forward and backward (batchnorm_training.cuh), as the CPU's
// compute/training/norm_activation_backward.cpp computes them.
//
// Algorithm: one block per channel for both. The forward walks the channel's n·plane values three times — the sum
// (the mean), the squared deviations from that mean (the variance, two-pass for accuracy), then the normalised
// output — with block reductions in double between; thread 0 writes the saved statistics and moves the running
// averages (PyTorch: momentum toward the batch mean and the unbiased variance squares/(M − 1)). The backward sums
// Σgy and Σgy·x̂ in one pass, writes dγ and dβ, and a second pass writes gx. A plane at a time with consecutive
// threads on consecutive positions: the loads coalesce. Deterministic (fixed reduction order).
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/training/batchnorm_training.cuh"

namespace convscope::cuda::train {

namespace {
    constexpr int kThreads = 256;

    // The block's sum of each thread's `v` (every thread gets it); `scratch` holds kThreads doubles.
    __device__ double blockSum(double v, double* scratch)
    {
        scratch[threadIdx.x] = v;
        __syncthreads();
        for (int half = kThreads / 2; half > 0; half /= 2) {
            if (int(threadIdx.x) < half)
                scratch[threadIdx.x] += scratch[threadIdx.x + half];
            __syncthreads();
        }
        const double total = scratch[0];
        __syncthreads(); // scratch is reused by the next call
        return total;
    }

    __device__ __forceinline__ long long at(long long e, long long plane, long long channels, long long c)
    {
        const long long img = e / plane;
        return (img * channels + c) * plane + (e - img * plane);
    }

    __global__ void __launch_bounds__(kThreads) forwardKernel(int n, int channels, long long plane,
        const float* __restrict__ x, const float* gamma, const float* beta, double eps, double momentum,
        float* runningMean, float* runningVar, double* saveMean, double* saveInvStd, float* __restrict__ y)
    {
        __shared__ double scratch[kThreads];
        const long long c = blockIdx.x, total = n * plane;
        double sum = 0;
        for (long long e = threadIdx.x; e < total; e += kThreads)
            sum += x[at(e, plane, channels, c)];
        const double mean = blockSum(sum, scratch) / double(total);
        double squares = 0;
        for (long long e = threadIdx.x; e < total; e += kThreads) {
            const double d = double(x[at(e, plane, channels, c)]) - mean;
            squares += d * d;
        }
        squares = blockSum(squares, scratch);
        const double invstd = 1.0 / sqrt(squares / double(total) + eps);
        if (threadIdx.x == 0) {
            saveMean[c] = mean;
            saveInvStd[c] = invstd;
            runningMean[c] = float((1 - momentum) * double(runningMean[c]) + momentum * mean);
            runningVar[c] = float((1 - momentum) * double(runningVar[c]) + momentum * squares / double(total - 1));
        }
        const double w = gamma ? double(gamma[c]) : 1.0, b = beta ? double(beta[c]) : 0.0;
        for (long long e = threadIdx.x; e < total; e += kThreads) {
            const long long i = at(e, plane, channels, c);
            y[i] = float((double(x[i]) - mean) * invstd * w + b);
        }
    }

    __global__ void __launch_bounds__(kThreads) backwardKernel(int n, int channels, long long plane,
        const float* __restrict__ x, const float* __restrict__ gy, const float* gamma, const double* saveMean,
        const double* saveInvStd, float* __restrict__ gx, float* dgamma, float* dbeta)
    {
        __shared__ double scratch[kThreads];
        const long long c = blockIdx.x, total = n * plane;
        const double mean = saveMean[c], invstd = saveInvStd[c];
        double sum = 0, dot = 0;
        for (long long e = threadIdx.x; e < total; e += kThreads) {
            const long long i = at(e, plane, channels, c);
            sum += gy[i];
            dot += double(gy[i]) * (double(x[i]) - mean) * invstd;
        }
        sum = blockSum(sum, scratch);
        dot = blockSum(dot, scratch);
        if (threadIdx.x == 0) {
            if (dgamma)
                dgamma[c] = float(dot);
            if (dbeta)
                dbeta[c] = float(sum);
        }
        if (!gx)
            return;
        const double scale = (gamma ? double(gamma[c]) : 1.0) * invstd, count = double(total);
        for (long long e = threadIdx.x; e < total; e += kThreads) {
            const long long i = at(e, plane, channels, c);
            const double xhat = (double(x[i]) - mean) * invstd;
            gx[i] = float(scale * (double(gy[i]) - sum / count - xhat * dot / count));
        }
    }
} // namespace

void batchNormTrainForward(int n, int channels, long long plane, const float* x, const float* gamma, const float* beta,
    double eps, double momentum, float* runningMean, float* runningVar, double* saveMean, double* saveInvStd, float* y,
    cudaStream_t st)
{
    forwardKernel<<<unsigned(channels), kThreads, 0, st>>>(
        n, channels, plane, x, gamma, beta, eps, momentum, runningMean, runningVar, saveMean, saveInvStd, y);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::batchNormTrainForward");
}

void batchNormTrainBackward(int n, int channels, long long plane, const float* x, const float* gy, const float* gamma,
    const double* saveMean, const double* saveInvStd, float* gx, float* dgamma, float* dbeta, cudaStream_t st)
{
    backwardKernel<<<unsigned(channels), kThreads, 0, st>>>(
        n, channels, plane, x, gy, gamma, saveMean, saveInvStd, gx, dgamma, dbeta);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::batchNormTrainBackward");
}

} // namespace convscope::cuda::train
