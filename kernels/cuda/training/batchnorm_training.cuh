// Batch norm in training mode on the GPU (batchnorm_training.cu): PyTorch's nn.BatchNorm2d.train() forward — batch
// statistics, the running averages moved with momentum toward the batch mean and the unbiased batch variance — and
// its backward. Shapes [n, channels, plane]; the batch mean and 1/std are kept in double for the backward.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace convscope::cuda::train {

// The workspace either function needs for this shape on a GPU of `sms` multiprocessors (per-channel coefficients
// and, when a channel is cut into several runs, the runs' partial sums); both take it with the same `sms`.
size_t batchNormTrainWorkspaceBytes(long long n, long long channels, long long plane, int sms);

// y = (x − mean)·invstd·γ + β per channel (γ, β null: 1, 0); mean and invstd = 1/√(biased var + eps) into
// saveMean / saveInvStd; runningMean = (1 − momentum)·runningMean + momentum·mean, runningVar likewise with the
// unbiased variance (count n·plane > 1: the caller checks).
void batchNormTrainForward(int n, int channels, long long plane, const float* x, const float* gamma, const float* beta,
    double eps, double momentum, float* runningMean, float* runningVar, double* saveMean, double* saveInvStd, float* y,
    void* workspace, int sms, cudaStream_t st);

// From Σgy and Σgy·x̂ per channel: dγ = Σgy·x̂, dβ = Σgy (either null: not written) and, when gx is not null,
// gx = γ·invstd·(gy − Σgy/M − x̂·Σgy·x̂/M) with M = n·plane.
void batchNormTrainBackward(int n, int channels, long long plane, const float* x, const float* gy, const float* gamma,
    const double* saveMean, const double* saveInvStd, float* gx, float* dgamma, float* dbeta, void* workspace, int sms,
    cudaStream_t st);

} // namespace convscope::cuda::train
