// The cuda backend's `--option KEY=VALUE` readers (README "--option"): each returns the setting, 0 where the run
// leaves the choice to the kernel's own rule, and throws InputError naming the key and what it takes for a value it
// cannot use. cuda.tensor_core's tc_kernel / tc_tile / tc_kbytes are read by conv2d_tensor_core.cuh.
#pragma once

#include "compute/backend.h"

#include <string>

namespace convscope::cuda {

int winogradTileOf(const SessionOptions& options); // winograd_tile: 4 (default) or 2
int igemmTileOf(const SessionOptions& options); // igemm_tile: conv2d.cuh's parseImplicitGemmTile
int igemmSplitsOf(const SessionOptions& options); // igemm_splits: conv2d.cuh's parseImplicitGemmSplits
int tinyLanesOf(const SessionOptions& options); // tiny_lanes: 1, 2, 4, 8, 16 or 32
int fftBatchOf(const SessionOptions& options); // fft_batch: tiles per batch of transforms, ≥ 1
// transposed_gemm: the transposed convolutions' stride phases as GEMMs wherever they apply (on: 1), never (off: −1),
// or where they pay (auto: 0, the default); transposed_tile: conv_transpose3d's phase-tiled kernel at 1x8, 4x4 or 16x2
// (output channels a block × rows a thread; returns the channels), 0 for its own rule.
int transposedGemmOf(const SessionOptions& options);
int transposedTileOf(const SessionOptions& options);

// Training: train_tiles=inference|pipelined (cuda.tensor_core's convolutions on the inference Tensor Core kernel, the
// default, or on the implicit GEMM's pipelined tiles) and winograd_wgrad=on|off (the Winograd weight gradient, on by
// default where it applies).
bool trainsOnInferenceKernel(const SessionOptions& options);
bool winogradWeightGradientOf(const SessionOptions& options);

// `text` as a whole number from `low` to `high`, in decimal digits and no more of them than `high` has; 0 where it is
// not one (the callers throw the InputError that names their key and range: igemm_splits, tc_split).
int wholeNumberIn(const std::string& text, int low, int high);

} // namespace convscope::cuda
