// conv_transpose3d on cuda.implicit_gemm as one stride-1 conv3d per stride phase (conv_transpose3d_phase.cu; the
// arithmetic is transposed_phase_plan.h's, per axis). Host-side launchers only.
#pragma once

#include "kernels/cuda/conv3d.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::cuda {

// Whether every phase of t is an ordinary convolution (transposed_phase_plan.h: no phase's padding negative).
bool convTranspose3dPhaseApplies(const Conv3dGeometry& t);
// Whether the phases pay against the gather: at most 8 of them (each a GEMM launch and a spread: the autoencoder's
// stride-4 layer has 64 phases of 8 outputs and took 0.80 ms against the gather's ~0.1) and at least 8 output
// channels a group (conv3d's narrowest tile is 8 wide: the 1-channel output layer took 1.64 ms, cuDNN 0.33).
bool convTranspose3dPhasePays(const Conv3dGeometry& t);
// The layer's scratch: every phase's gathered weight, its implicit GEMM scratch, and the staging of a phase's outputs.
size_t convTranspose3dPhaseScratchBytes(const Conv3dGeometry& t, int smCount);
// Once, at prepare: the phases' weights gathered from w [c, k/groups, kd, kh, kw] and their tap tables.
void convTranspose3dPhasePrepare(const Conv3dGeometry& t, const float* w, void* scratch, int smCount, cudaStream_t st);
// The layer note: "8 stride phases, 8 of them stride-1 conv3d implicit GEMMs (the largest, …)" where `phases` (the
// GEMM-family algorithms in FP32) and the plan applies, else the gather kernel's, with the reason.
std::string convTranspose3dNote(const Conv3dGeometry& t, bool phases, int smCount);
// y [n, k, od, oh, ow] = the transposed convolution of x with w plus bias (null: none): with `phases`, the stride
// phases from the prepared scratch (w unused), else the gather kernel (conv3d.cuh).
void convTranspose3d(const Conv3dGeometry& t, bool phases, const float* x, const float* w, const float* bias, float* y,
    void* scratch, int smCount, cudaStream_t st);

} // namespace convscope::cuda
