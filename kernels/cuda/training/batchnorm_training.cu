// Batch norm's training forward and backward (batchnorm_training.cuh), as the CPU's
// compute/training/norm_activation_backward.cpp computes them.
//
// Algorithm: a per-channel reduction (the engine and plan of channel_reduce_kernels.cuh / channel_walk.h: each
// channel's n·plane elements cut into runs so that the grid fills the GPU, a warp or a block of 256 per run, float4
// loads when the plane is a multiple of 4, the runs' partials summed per channel in a fixed order), then one
// element-wise pass over the whole tensor with a full grid. Everything summed in double; deterministic.
//   forward   one pass of shifted sums S1 = Σ(x − K), S2 = Σ(x − K)² with K the channel's first value, in double:
//             the variance (S2 − S1²/M)/M cancels only as far as (mean − K)²/var (K is a sample, typically within a
//             few standard deviations of the mean: ~1e-14 relative; even K a thousand deviations away leaves ~1e-9,
//             far below the FP32 output's 6e-8), as accurate as the two passes (mean, then squared deviations) the
//             old kernel made, in one read of x. The channel's finish writes the saved mean and 1/std (double), moves
//             the running averages as PyTorch (momentum toward the batch mean and the unbiased variance
//             (S2 − S1²/M)/(M − 1)), and leaves scale = γ·invstd and offset = β − mean·scale in the workspace; the
//             pass writes y = x·scale + offset (in double).
//   backward  one pass sums Σgy and Σgy·(x − mean) together; the finish writes dγ = Σgy·x̂ and dβ = Σgy and leaves
//             gx's coefficients: gx = γ·invstd·(gy − Σgy/M − x̂·Σgy·x̂/M) = A·gy + B·x + C per channel (in double);
//             the pass writes gx.
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/training/batchnorm_training.cuh"
#include "kernels/cuda/training/channel_reduce_kernels.cuh"

#include <string>

namespace convscope::cuda::train {

namespace {
    constexpr int kCoef = 3; // doubles per channel at the workspace's start

    // Σ(x − K) and Σ(x − K)², K = the channel's first value.
    template <bool Vec> struct StatsTerm {
        static constexpr int kVals = 2;
        const float* __restrict__ x;
        long long plane;
        double shift = 0;
        __device__ void start(long long c) { shift = double(x[c * plane]); }
        __device__ void one(double (&acc)[2], float v) const
        {
            const double d = double(v) - shift;
            acc[0] += d;
            acc[1] += d * d;
        }
        __device__ void add(double (&acc)[2], long long u) const
        {
            if constexpr (Vec) {
                const float4 v = reinterpret_cast<const float4*>(x)[u];
                one(acc, v.x);
                one(acc, v.y);
                one(acc, v.z);
                one(acc, v.w);
            } else
                one(acc, x[u]);
        }
    };

    struct StatsFinish {
        const float* x;
        const float *gamma, *beta;
        long long plane;
        double count, eps, momentum;
        float *runningMean, *runningVar;
        double *saveMean, *saveInvStd, *coef;
        __device__ void operator()(long long c, const double (&t)[2]) const
        {
            const double shift = double(x[c * plane]);
            const double mean = shift + t[0] / count;
            double dev = t[1] - t[0] * (t[0] / count); // Σ(x − mean)²
            dev = dev > 0 ? dev : 0;
            const double invstd = 1.0 / sqrt(dev / count + eps);
            saveMean[c] = mean;
            saveInvStd[c] = invstd;
            runningMean[c] = float((1 - momentum) * double(runningMean[c]) + momentum * mean);
            runningVar[c] = float((1 - momentum) * double(runningVar[c]) + momentum * dev / (count - 1));
            const double scale = (gamma ? double(gamma[c]) : 1.0) * invstd;
            coef[c * kCoef] = scale;
            coef[c * kCoef + 1] = (beta ? double(beta[c]) : 0.0) - mean * scale;
        }
    };

    // Σgy and Σgy·(x − mean).
    template <bool Vec> struct GradTerm {
        static constexpr int kVals = 2;
        const float* __restrict__ x;
        const float* __restrict__ gy;
        const double* saveMean;
        double mean = 0;
        __device__ void start(long long c) { mean = saveMean[c]; }
        __device__ void one(double (&acc)[2], float xv, float g) const
        {
            acc[0] += double(g);
            acc[1] += double(g) * (double(xv) - mean);
        }
        __device__ void add(double (&acc)[2], long long u) const
        {
            if constexpr (Vec) {
                const float4 xv = reinterpret_cast<const float4*>(x)[u], g = reinterpret_cast<const float4*>(gy)[u];
                one(acc, xv.x, g.x);
                one(acc, xv.y, g.y);
                one(acc, xv.z, g.z);
                one(acc, xv.w, g.w);
            } else
                one(acc, x[u], gy[u]);
        }
    };

    struct GradFinish {
        const float* gamma;
        const double *saveMean, *saveInvStd;
        double count;
        float *dgamma, *dbeta;
        double* coef;
        __device__ void operator()(long long c, const double (&t)[2]) const
        {
            const double invstd = saveInvStd[c], mean = saveMean[c];
            if (dgamma)
                dgamma[c] = float(t[1] * invstd);
            if (dbeta)
                dbeta[c] = float(t[0]);
            // gx = scale·(gy − Σgy/M − (x − mean)·k), k = Σgy·(x − mean)·invstd²/M
            const double scale = (gamma ? double(gamma[c]) : 1.0) * invstd, k = t[1] * invstd * invstd / count;
            coef[c * kCoef] = scale;
            coef[c * kCoef + 1] = -scale * k;
            coef[c * kCoef + 2] = scale * (mean * k - t[0] / count);
        }
    };

    // y = x·scale + offset, per channel.
    template <bool Vec>
    __global__ void __launch_bounds__(reduce::kThreads, reduce::kBlocksPerSm)
        normaliseKernel(long long units, long long plane, long long channels, const float* __restrict__ x,
            const double* __restrict__ coef, float* __restrict__ y)
    {
        reduce::forEachUnit(reduce::gridWalk(units, plane, channels), [&](long long i, long long c) {
            const double scale = coef[c * kCoef], offset = coef[c * kCoef + 1];
            const auto f = [&](float v) { return float(double(v) * scale + offset); };
            if constexpr (Vec) {
                const float4 v = reinterpret_cast<const float4*>(x)[i];
                reinterpret_cast<float4*>(y)[i] = make_float4(f(v.x), f(v.y), f(v.z), f(v.w));
            } else
                y[i] = f(x[i]);
        });
    }

    // gx = A·gy + B·x + C, per channel.
    template <bool Vec>
    __global__ void __launch_bounds__(reduce::kThreads, reduce::kBlocksPerSm)
        inputGradKernel(long long units, long long plane, long long channels, const float* __restrict__ x,
            const float* __restrict__ gy, const double* __restrict__ coef, float* __restrict__ gx)
    {
        reduce::forEachUnit(reduce::gridWalk(units, plane, channels), [&](long long i, long long c) {
            const double a = coef[c * kCoef], b = coef[c * kCoef + 1], k = coef[c * kCoef + 2];
            const auto f = [&](float g, float v) { return float(double(g) * a + double(v) * b + k); };
            if constexpr (Vec) {
                const float4 v = reinterpret_cast<const float4*>(x)[i], g = reinterpret_cast<const float4*>(gy)[i];
                reinterpret_cast<float4*>(gx)[i] = make_float4(f(g.x, v.x), f(g.y, v.y), f(g.z, v.z), f(g.w, v.w));
            } else
                gx[i] = f(gy[i], x[i]);
        });
    }

    double* checkedWorkspace(
        void* workspace, long long n, long long channels, long long plane, int sms, const char* what)
    {
        if (!workspace)
            throw Error(std::string(what) + ": no workspace ("
                + std::to_string(batchNormTrainWorkspaceBytes(n, channels, plane, sms)) + " bytes needed)");
        return static_cast<double*>(workspace);
    }
} // namespace

size_t batchNormTrainWorkspaceBytes(long long n, long long channels, long long plane, int sms)
{
    const ChannelReducePlan p = planChannelReduce(n, channels, plane, sms);
    const long long doubles = kCoef * channels + (p.chunks > 1 ? 2 * channels * p.chunks : 0);
    return size_t(doubles) * sizeof(double);
}

void batchNormTrainForward(int n, int channels, long long plane, const float* x, const float* gamma, const float* beta,
    double eps, double momentum, float* runningMean, float* runningVar, double* saveMean, double* saveInvStd, float* y,
    void* workspace, int sms, cudaStream_t st)
{
    if (channels <= 0)
        return;
    double* coef = checkedWorkspace(workspace, n, channels, plane, sms, "train::batchNormTrainForward");
    const ChannelReducePlan p = planChannelReduce(n, channels, plane, sms);
    const bool vec = plane % 4 == 0 && reduce::aligned16(x) && reduce::aligned16(y);
    const ChannelReduceShape s = reduceShapeOf(p, n, channels, plane, vec);
    const StatsFinish finish { x, gamma, beta, plane, double(n * plane), eps, momentum, runningMean, runningVar,
        saveMean, saveInvStd, coef };
    double* partials = coef + kCoef * channels;
    const long long units = (long long)n * channels * s.planeUnits;
    const unsigned blocks = reduce::elementBlocks(units, sms);
    if (vec) {
        reduce::launchReduce(s, StatsTerm<true> { x, plane }, finish, partials, st);
        normaliseKernel<true><<<blocks, reduce::kThreads, 0, st>>>(units, s.planeUnits, channels, x, coef, y);
    } else {
        reduce::launchReduce(s, StatsTerm<false> { x, plane }, finish, partials, st);
        normaliseKernel<false><<<blocks, reduce::kThreads, 0, st>>>(units, s.planeUnits, channels, x, coef, y);
    }
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::batchNormTrainForward");
}

void batchNormTrainBackward(int n, int channels, long long plane, const float* x, const float* gy, const float* gamma,
    const double* saveMean, const double* saveInvStd, float* gx, float* dgamma, float* dbeta, void* workspace, int sms,
    cudaStream_t st)
{
    if (channels <= 0)
        return;
    double* coef = checkedWorkspace(workspace, n, channels, plane, sms, "train::batchNormTrainBackward");
    const ChannelReducePlan p = planChannelReduce(n, channels, plane, sms);
    const bool vec = plane % 4 == 0 && reduce::aligned16(x) && reduce::aligned16(gy) && (!gx || reduce::aligned16(gx));
    const ChannelReduceShape s = reduceShapeOf(p, n, channels, plane, vec);
    const GradFinish finish { gamma, saveMean, saveInvStd, double(n * plane), dgamma, dbeta, coef };
    double* partials = coef + kCoef * channels;
    const long long units = (long long)n * channels * s.planeUnits;
    const unsigned blocks = reduce::elementBlocks(units, sms);
    if (vec) {
        reduce::launchReduce(s, GradTerm<true> { x, gy, saveMean }, finish, partials, st);
        if (gx)
            inputGradKernel<true><<<blocks, reduce::kThreads, 0, st>>>(units, s.planeUnits, channels, x, gy, coef, gx);
    } else {
        reduce::launchReduce(s, GradTerm<false> { x, gy, saveMean }, finish, partials, st);
        if (gx)
            inputGradKernel<false><<<blocks, reduce::kThreads, 0, st>>>(units, s.planeUnits, channels, x, gy, coef, gx);
    }
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::batchNormTrainBackward");
}

} // namespace convscope::cuda::train
