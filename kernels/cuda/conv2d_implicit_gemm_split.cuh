// Split-K for cuda.implicit_gemm (conv2d_implicit_gemm_split.cu): how many parts a layer's reduction is split into,
// the workspace the parts' partial sums need, and the pass that adds them up. Internal to the implicit GEMM.
#pragma once

#include "kernels/cuda/conv2d.cuh"

namespace convscope::cuda::igemm {

// The parts the reduction of a grid of `tiles` output tiles, `steps` pipeline steps deep, is split into on `smCount`
// multiprocessors: the count that minimises the busiest multiprocessor's work (the .cu file says how), 1 when no
// split gains 10% or the reduction is too short to share out. `forced` (> 0, the igemm_splits option) overrides the
// choice. The result never leaves a part without a step (see stepsPerSplit).
int splitKParts(long long tiles, int smCount, int steps, int forced);
// Steps per part: the parts are ⌈steps / splits⌉ deep, the last one shorter.
int stepsPerSplit(int steps, int splits);

// Bytes of FP32 partial sums: one whole output [n, k, p, q] per part.
size_t splitKWorkspaceBytes(const ConvGeometry& g, int splits);

// y = activation(bias + Σ_parts partial[part]), the parts added in order 0, 1, … so the result does not depend on
// scheduling.
void splitKReduce(
    const ConvGeometry& g, int splits, const float* partial, const float* bias, float* y, cudaStream_t st);

} // namespace convscope::cuda::igemm
