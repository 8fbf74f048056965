// Where element `idx` of a contiguous [N, C, D, H, W] tensor (W fastest) sits: its column, row and depth, and its
// plane n·C + c. Every one-thread-per-output 3-D kernel starts by taking its output index apart this way.
#pragma once

namespace convscope::cuda {

struct VolumeIndex {
    int x, y, z;
    unsigned plane; // n·C + c
};

__device__ __forceinline__ VolumeIndex volumeIndex(unsigned idx, int depth, int height, int width)
{
    VolumeIndex v;
    v.x = int(idx % unsigned(width));
    idx /= unsigned(width);
    v.y = int(idx % unsigned(height));
    idx /= unsigned(height);
    v.z = int(idx % unsigned(depth));
    v.plane = idx / unsigned(depth);
    return v;
}

} // namespace convscope::cuda
