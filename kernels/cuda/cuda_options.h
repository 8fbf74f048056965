// The cuda backend's `--option KEY=VALUE` readers (README "--option"): each returns the setting, 0 where the run
// leaves the choice to the kernel's own rule, and throws InputError naming the key and what it takes for a value it
// cannot use. cuda.tensor_core's tc_kernel / tc_tile / tc_kbytes are read by conv2d_tensor_core.cuh.
#pragma once

#include "compute/backend.h"

namespace convscope::cuda {

int winogradTileOf(const SessionOptions& options); // winograd_tile: 4 (default) or 2
int igemmTileOf(const SessionOptions& options); // igemm_tile: conv2d.cuh's parseImplicitGemmTile
int igemmSplitsOf(const SessionOptions& options); // igemm_splits: conv2d.cuh's parseImplicitGemmSplits
int tinyLanesOf(const SessionOptions& options); // tiny_lanes: 1, 2, 4, 8, 16 or 32
int fftBatchOf(const SessionOptions& options); // fft_batch: tiles per batch of transforms, ≥ 1

} // namespace convscope::cuda
