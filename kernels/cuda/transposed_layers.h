// The cuda backend's transposed convolutions in inference (conv_transpose2d, conv_transpose3d): which kernel runs a
// layer under the session's algorithm, its scratch, its prepare (which returns the layer note) and its run — the
// backend's dispatch for these two kinds (cuda_backend.cpp calls the four entries below and nothing else for them).
//
// conv_transpose2d: cuda.direct and cuda.tiled run the gather kernel; the GEMM family (implicit_gemm, winograd, fft,
// tensor_core's FP32 layers) runs one stride-1 implicit GEMM per stride phase (transposed_phase_gemm.cuh, the
// training session's code, its weights gathered once at prepare) in FP32 where the plan applies and the GEMMs pay
// (convTranspose2dPhaseGemmPays), else the hand-written phase kernel (conv_transpose2d.cuh), which takes every
// geometry.
//
// conv_transpose3d (conv_transpose3d_phase.cuh): the gather for cuda.direct and cuda.tiled; for the GEMM family the
// stride phases as conv3d GEMMs in FP32 where they apply and pay, else the phase-tiled kernel
// (transposed_phase_tiled.h).
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "kernels/cuda/conv2d.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::cuda {

// What the session's algorithm and storage allow: the GEMM family's forms, and the GEMMs in plain FP32 only.
// gemm and tile: --option transposed_gemm and transposed_tile (cuda_options.h), 0 for the kernels' own rules.
struct TransposedMode {
    bool gemmFamily = false;
    bool fp32 = false;
    int gemm = 0;
    int tile = 0;
};

bool isTransposedConvolution(const LayerSpec& spec);
size_t transposedScratchBytes(const LayerSpec& spec, const LayerShape& shape, TransposedMode m, int sms);
// Once, at prepare: the phases' gathered weights and GEMM tables where they run; returns the layer note.
std::string prepareTransposed(const LayerSpec& spec, const LayerShape& shape, TransposedMode m, const float* w,
    void* scratch, int sms, cudaStream_t st);
void runTransposed(const LayerSpec& spec, const LayerShape& shape, TransposedMode m, const float* x, const float* w,
    const float* bias, float* y, void* scratch, int sms, cudaStream_t st);

// Whether conv_transpose2d's stride phases pay as implicit GEMMs against the phase kernel: at least 32 output
// channels a group (the GEMM's narrowest tile is 32 channels tall; below, the phase kernel's 4–16 channels a block
// waste less: the DCGAN generator's 64→3 output layer keeps it), at least 8 input channels a group (the GEMM's
// reduction, c/groups times the phase's taps, fills its 8- or 16-deep steps) and at most 16 phases (each one GEMM
// launch and one spread of its outputs: conv_transpose3d's 64-phase layer lost to the gather that way).
bool convTranspose2dPhaseGemmPays(const ConvGeometry& t);
// Whether layer t takes the phase GEMMs under mode m (the plan applies and they pay).
bool convTranspose2dPhaseGemmRuns(const ConvGeometry& t, TransposedMode m);

} // namespace convscope::cuda
