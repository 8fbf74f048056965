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
// Whether the phases pay as GEMMs: at most 8 of them (each a GEMM launch and a spread: the autoencoder's stride-4
// layer has 64 phases of 8 outputs and took 0.80 ms against the gather's ~0.1) and at least 8 output channels a group
// (conv3d's narrowest tile is 8 wide: the 1-channel output layer took 1.64 ms, cuDNN 0.33). The layers they do not
// pay on take the phase-tiled kernel.
bool convTranspose3dPhasePays(const Conv3dGeometry& t);
// The layer's scratch: every phase's gathered weight, its implicit GEMM scratch, and the staging of a phase's outputs.
size_t convTranspose3dPhaseScratchBytes(const Conv3dGeometry& t, int smCount);
// Once, at prepare: the phases' weights gathered from w [c, k/groups, kd, kh, kw] and their tap tables.
void convTranspose3dPhasePrepare(const Conv3dGeometry& t, const float* w, void* scratch, int smCount, cudaStream_t st);
// The phase-tiled kernel (conv_transpose3d_tiled.cu, transposed_phase_tiled.h): every stride phase in one launch, a
// phase's taps of a few output channels staged in shared memory, several outputs a thread. Any padding, dilation,
// groups and output padding; strides up to 8 and at most 4096 taps a phase (else the gather).
bool convTranspose3dTiledApplies(const Conv3dGeometry& t);
// "64 stride phases in one launch, 8 taps each at most, …; 4 rows x 4 channels a thread"
// tileKt: 1, 4 or 16 output channels a block (--option transposed_tile) where the taps fit, 0 for the kernel's rule.
std::string convTranspose3dTiledNote(const Conv3dGeometry& t, int smCount, int tileKt = 0);
void convTranspose3dTiled(const Conv3dGeometry& t, const float* x, const float* w, const float* bias, float* y,
    int smCount, cudaStream_t st, int tileKt = 0);

// Which kernel runs a layer: the gather (cuda.direct, cuda.tiled), the stride phases as conv3d GEMMs (the GEMM family
// in FP32, where they apply and pay), else the phase-tiled kernel (the GEMM family).
enum class Transposed3dForm { Gather, Tiled, PhaseGemm };
// gemm (--option transposed_gemm): 1 takes the GEMMs wherever they apply, −1 never, 0 where they pay.
Transposed3dForm convTranspose3dForm(const Conv3dGeometry& t, bool gemmFamily, bool fp32, int gemm = 0);
// The layer note: "8 stride phases, 8 of them stride-1 conv3d implicit GEMMs (the largest, …)", or the phase-tiled
// kernel's with why the GEMMs do not run, or the gather's.
std::string convTranspose3dNote(
    const Conv3dGeometry& t, Transposed3dForm form, int smCount, int gemm = 0, int tileKt = 0);
// y [n, k, od, oh, ow] = the transposed convolution of x with w plus bias (null: none): the phase GEMMs from the
// prepared scratch (w unused), the phase-tiled kernel or the gather kernel (conv3d.cuh).
void convTranspose3d(const Conv3dGeometry& t, Transposed3dForm form, const float* x, const float* w, const float* bias,
    float* y, void* scratch, int smCount, cudaStream_t st, int tileKt = 0);

} // namespace convscope::cuda
