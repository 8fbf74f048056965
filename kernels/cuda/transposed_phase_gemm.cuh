// A transposed convolution on the pipelined implicit GEMM, one stride-1 convolution per stride phase
// (transposed_phase_plan.h says why and how; transposed_phase_gemm.cu runs it). It serves the cuda training session
// (conv2d's backward-data, conv_transpose2d's forward: the weights change at every pass, so they are gathered at every
// pass) and cuda.implicit_gemm's conv_transpose2d in inference (transposed_layers.cpp: the weights gathered once, at
// prepare). Host-side launchers only.
#pragma once

#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/transposed_phase_plan.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace convscope::cuda {

// A layer's plan: the classes, and where each class's gathered weights and implicit-GEMM scratch live in the
// caller's two buffers; `tempFloats` is the staging a class's output needs before it is spread into every s-th row
// and column (0 with stride 1: the one class writes y itself).
struct TransposedPhaseGemm {
    ConvGeometry t {};
    std::vector<PhaseClass> plan;
    std::vector<ConvGeometry> convs; // per class, its convolution for the implicit GEMM's launcher
    std::vector<size_t> weightOffset; // floats, per class
    std::vector<size_t> scratchOffset; // bytes, per class
    size_t weightFloats = 0, scratchBytes = 0, tempFloats = 0;
    // Stride 1 with one class that is a 3×3, stride-1, ungrouped convolution, under cuda.winograd: that convolution
    // runs Winograd F(m×m, 3×3) (conv2d_winograd.cu) instead of the implicit GEMM; 0 where it does not.
    int winograd = 0;
};

// The plain-int shape of a ConvGeometry, and whether its plan applies (every class an ordinary convolution).
PhaseShape phaseShapeOf(const ConvGeometry& g);
bool transposedPhaseGemmApplies(const ConvGeometry& t);
// winogradTile: 2 or 4 to run a stride-1 layer's one convolution on Winograd where it applies (cuda.winograd's
// training), 0 for the implicit GEMM always.
TransposedPhaseGemm makeTransposedPhaseGemm(const ConvGeometry& t, int sms, int winogradTile = 0);
// Builds the classes' implicit GEMM tables that do not depend on the weights (once, at prepare).
void transposedPhaseGemmPrepare(const TransposedPhaseGemm& p, void* scratch, int sms, cudaStream_t st);
// "4 stride phases, 4 of them stride-1 convolutions on the implicit GEMM (the first: 64x128cp tiles, …)"
std::string transposedPhaseGemmNote(const TransposedPhaseGemm& p, int sms);
// Gathers every class's taps of w [c, k/groups, r, s] into `weights` (weightFloats) and, for the GEMM variants whose
// scratch holds their own copy of the weights, prepares that copy: whenever w changes.
void transposedPhaseGemmWeights(
    const TransposedPhaseGemm& p, const float* w, float* weights, void* scratch, int sms, cudaStream_t st);
// y [n, k, p, q] = the transposed convolution of x [n, c, h, w] with the weights transposedPhaseGemmWeights gathered,
// plus bias (null: none); temp holds tempFloats.
void transposedPhaseGemmRun(const TransposedPhaseGemm& p, const float* x, const float* weights, const float* bias,
    float* y, void* scratch, float* temp, int sms, cudaStream_t st);
// Both: the weights gathered from w, then the run (the training session, whose weights change at every pass).
// weights, scratch and temp hold weightFloats, scratchBytes and tempFloats.
void transposedPhaseGemm(const TransposedPhaseGemm& p, const float* x, const float* w, const float* bias, float* y,
    float* weights, void* scratch, float* temp, int sms, cudaStream_t st);

} // namespace convscope::cuda
