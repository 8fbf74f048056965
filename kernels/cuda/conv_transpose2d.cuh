// Our CUDA transposed 2-D convolution: the gather kernel and the stride-phase form of cuda.implicit_gemm.
#pragma once

#include "kernels/cuda/conv2d.cuh"

#include <string>

namespace convscope::cuda {

// Transposed convolution. Geometry as conv2d's (n, c, h, w input; k, p, q output; padTop/padLeft the crop at
// the top/left), weight [c, k/groups, r, s].

// Gather form: one thread per output element (cuda.direct, cuda.tiled).
void convTranspose2dGather(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);

// Phase-decomposed form (cuda.implicit_gemm): the output split into its sh·sw stride phases, each a plain
// convolution over only the taps that reach it, output channels register-tiled against weights in shared memory.
// False when even one input channel's taps for one phase do not fit the 48 KB of shared memory (kernels of
// hundreds of taps); convTranspose2dPhase then runs the gather kernel.
bool convTranspose2dPhaseApplies(const ConvGeometry& g);
void convTranspose2dPhase(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);

// The layer note for the kernel `fast` (phase form) or the gather form runs on this layer.
std::string convTranspose2dNote(const ConvGeometry& g, bool fast);

} // namespace convscope::cuda
