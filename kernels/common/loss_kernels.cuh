// The losses of the training step on the device (training.h's LossKind, PyTorch's reduction='mean'), so that the GPU
// sessions' step keeps the output, the target and the output's gradient where they are: no copy down, no host
// arithmetic, no synchronisation between the forward and the backward (the host version, computeLoss in
// compute/training/loss_optimizer.cpp, took 0.5–0.8 ms of a ResNet-18 step with its copies and two waits).
//
// Arithmetic as computeLoss's: each element's (or each row's, cross-entropy) contribution and gradient in double,
// the gradient rounded to float once. The sum is deterministic: every block writes its partial sum (a fixed-order
// tree over its threads) to `partials`, and one block adds the partials in a fixed tree too, so the same inputs give
// the same loss on every run (not the host's serial order, so the last bits may differ from computeLoss's).
// The loss lands in loss[0] (a double on the device); `bad` is set to 1 when it is NaN or infinite, and the
// optimizer kernels (training_kernels.cuh) read `bad` and leave the parameters alone, so a step whose loss is not
// finite changes no weight — as the host version, which threw before the backward.
#pragma once

#include "compute/storage_format.h"
#include "compute/training/training.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace convscope::gpu::train {

// The partial sums a loss of this kind and size needs (doubles), for the caller's scratch.
int64_t lossPartialCount(LossKind kind, int64_t count, int64_t batch);

// output and gradient hold `count` values of `type` (FP32, or a mixed-precision step's FP16 / BF16, read widened, the
// gradient rounded once); the gradient is multiplied by gradScale (an FP16 step's loss scale; the loss is not).
// Cross-entropy reads them as [batch, count / batch] logits and `target` as
// `batch` class indices (floats holding integers, checked on the host: checkClassIndices), MSE and BCE-with-logits
// read `target` as `count` floats. partials holds lossPartialCount doubles; loss one double; bad one int (set, never
// cleared here).
void deviceLoss(LossKind kind, const void* output, const float* target, int64_t count, int64_t batch, void* gradient,
    double* partials, double* loss, int* bad, cudaStream_t stream, DType type = DType::F32, double gradScale = 1.0);

} // namespace convscope::gpu::train
