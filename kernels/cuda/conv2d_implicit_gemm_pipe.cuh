// cuda.implicit_gemm's pipelined tiles (conv2d_implicit_gemm_pipe.cu): the transposed weights they read, the scratch
// they need and their launch, split-K included. Internal to the implicit GEMM (conv2d_implicit_gemm.cu).
#pragma once

#include "kernels/cuda/conv2d.cuh"

#include <cstddef>

namespace convscope::cuda::igemm {

constexpr int kPipeBK = 16; // taps per stage; the transposed weights' channels are padded to it

// The transposed weights of the pipelined variants: wt[group][r·s][cPad][kPad], zero where c ≥ C/g or k ≥ K/g.
struct PipeWeights {
    int kPad, cPad;
    long long elements;
};
PipeWeights pipeWeightsOf(const ConvGeometry& g);
// The reduction's steps: kPipeBK taps each, tap-major, the channels padded to kPipeBK.
int pipeSteps(const ConvGeometry& g);

// A pipelined layer's scratch: the transposed weights, then (splits > 1) split-K's FP32 parts.
size_t pipeScratchBytes(const ConvGeometry& g, int splits);
// Builds the transposed weights at the start of `scratch` from the layer's weights [K, C/g, R, S] on the device.
void pipeTransposeWeights(const ConvGeometry& g, const float* w, void* scratch, cudaStream_t st);
// Runs the 128×128 tiles (big) or the 64×128 ones with the reduction in `splits` parts (1: whole; split-K needs one
// group) over the scratch prepared above.
void pipeLaunch(bool big, const ConvGeometry& g, int splits, const float* x, void* scratch, const float* bias, float* y,
    cudaStream_t st);

} // namespace convscope::cuda::igemm
