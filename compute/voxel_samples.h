// Procedural voxel volumes for the 3-D layers, the way sample:digit is a picture for the 2-D ones: occupancy grids
// (1 inside the shape, 0 outside) of any size, drawn in coordinates normalised to [−1, 1] on each axis so a 32³ grid
// (the lecture's autoencoder) and a 64³ one show the same shape. Axes: D is front to back, H top to bottom (row 0 is
// the top, as in a picture), W left to right.
//   voxels:sphere  a ball of radius 0.7
//   voxels:torus   a ring around the D axis (major radius 0.55, tube radius 0.22)
//   voxels:cube    an axis-aligned cube of half-side 0.55
//   voxels:chair   a chair made of boxes: a seat (1.2 wide and deep), a back rest and four legs
// A variant seed > 0 jitters the shape (scale 0.8–1.1, shift up to ±0.12 per axis; the chair's proportions too),
// for benchmark sets of distinct inputs such as the lecture's 50 chairs.
#pragma once

#include "compute/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace convscope {

// "voxels:sphere", "voxels:torus", "voxels:cube", "voxels:chair" (as "sample:" sources).
std::vector<std::string> voxelSampleNames();
bool isVoxelSample(const std::string& name);
// [batch, channels, depth, height, width], every item and channel the same volume. Throws InputError for an
// unknown name or a size that is not positive.
Tensor makeVoxelSample(const std::string& name, int64_t batch, int64_t channels, int64_t depth, int64_t height,
    int64_t width, uint64_t variant = 0);

} // namespace convscope
