// Where the TF32 Tensor Core tiles (tf32_mma.cuh) keep their operands in shared memory and in the packed weights, as
// plain index functions that compile in the kernels and in a host test (tests/training/cuda_backward_index_test.cpp
// checks that they are bijections and that mma's fragment reads of a warp hit 32 different banks).
//
// mma.sync m16n8k8's fragments: lane (g, t) = (lane / 4, lane % 4) holds A[g][t], A[g + 8][t], A[g][t + 4],
// A[g + 8][t + 4] (a 16 × 8 tile, rows m, columns k) and B[t][g], B[t + 4][g] (8 × 8, rows k, columns n).
#pragma once

#include "kernels/common/host_device.h"

namespace convscope::cuda::tf32 {

// A k-major shared panel (row k holds the tile's M rows of A, or its N columns of B; rows a multiple of 32 floats)
// keeps element (k, col) at column col ^ ((k & 3) << 3). In a plain panel the four t of one g read one bank (4-way
// conflicts on every fragment read); flipped, g fills a bank index's low three bits and t the next two. Four
// consecutive columns stay consecutive (16-byte copies), a row's 32 aligned columns a permutation of one 128-byte
// line (a warp's 4-byte copies of one row).
CONVSCOPE_HD int swizzle(int k, int col) { return col ^ ((k & 3) << 3); }

// A packed in fragment order (the forward's transposed weights): a 16 × 8 tile as 128 floats, lane (g, t)'s four
// values at lane · 4 + e — e = 0: row g, column t; 1: row g + 8, column t; 2: row g, column t + 4; 3: row g + 8,
// column t + 4 — so a lane reads its fragment in one 16-byte load and a warp's read is 512 contiguous bytes.
// The row and column of the tile that float `inTile` (0 … 127) holds:
CONVSCOPE_HD int packedRow(int inTile) { return (inTile >> 4) + ((inTile & 1) << 3); }
CONVSCOPE_HD int packedCol(int inTile) { return ((inTile >> 2) & 3) + ((inTile & 2) << 1); }

} // namespace convscope::cuda::tf32
