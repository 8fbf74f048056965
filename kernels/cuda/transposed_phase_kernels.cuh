// The two copy kernels of a transposed convolution run as stride phases (transposed_phase_plan.h), shared by the 2-D
// phase GEMMs (transposed_phase_gemm.cu: the training session and cuda.implicit_gemm's conv_transpose2d) and
// cuda.implicit_gemm's conv_transpose3d
// (conv_transpose3d_phase.cu); a 2-D layer is the 1-deep case (flatAxis() for depth, depth 1, stride 1).
// Host-side launchers only.
#pragma once

#include "kernels/cuda/transposed_phase_plan.h"

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// A phase's weight [k, c/groups, depth.taps, row.taps, col.taps] gathered from the layer's [c, k/groups, kd, r, s]
// (gatheredTapSource), written consecutively into dst.
void gatherPhaseTaps(int groups, int cg, int kg, int kd, int r, int s, const PhaseAxis& depth, const PhaseAxis& row,
    const PhaseAxis& col, const float* src, float* dst, cudaStream_t st);

// The output's size and strides, [planes = n·k, od, oh, ow], that a phase's outputs are spread into.
struct PhaseOutput {
    long long planes;
    int channels; // k: the bias of plane p is bias[p % k]
    int od, oh, ow;
    int sd, sh, sw;
};

// y[plane, depth.first + sd·a, row.first + sh·u, col.first + sw·v] = staged[plane, a, u, v] — or, with staged null,
// the bias (0 without one): a phase no tap reaches.
void spreadPhase(const PhaseOutput& out, const PhaseAxis& depth, const PhaseAxis& row, const PhaseAxis& col,
    const float* staged, const float* bias, float* y, cudaStream_t st);

} // namespace convscope::cuda
