// What a volume feature map looks like on a flat screen: one batch item of an NCDHW tensor, cut into planes along
// D, H or W (every channel at the same index), reduced to a maximum-intensity projection along an axis, or cut by
// the three planes through one voxel. Plain data, no widgets, so the arithmetic is tested on its own.
//
// Plane orientation: a D slice is H rows × W columns (as an image layer is shown), an H slice is D × W and a W slice
// is D × H, so depth always runs down the screen when it is on screen at all.
#pragma once

#include "compute/tensor.h"
#include "gui/views/feature_map_grid.h"

#include <QString>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace convscope::gui {

enum class VolumeAxis { D = 0, H = 1, W = 2 };

QString axisName(VolumeAxis axis); // "D", "H" or "W"

// One batch item's channels of a volume: channels × depth × height × width values, W fastest.
struct VolumeSet {
    int64_t channels = 0, depth = 0, height = 0, width = 0;
    std::vector<float> values;

    bool empty() const { return values.empty(); }
    int64_t length(VolumeAxis axis) const
    {
        return axis == VolumeAxis::D ? depth : axis == VolumeAxis::H ? height : width;
    }
    float at(int64_t c, int64_t d, int64_t h, int64_t w) const
    {
        return values[size_t(((c * depth + d) * height + h) * width + w)];
    }
    // The finite range of one channel, and of all channels.
    std::pair<float, float> channelRange(int64_t c) const;
    std::pair<float, float> range() const;
};

// Copies batch item `n` of a rank-5 tensor; empty for any other tensor or item.
VolumeSet volumeOf(const Tensor& t, int64_t n);

// The slice at `index` along `axis` of every channel (or of `channel` alone when it is >= 0). Each plane carries the
// colour range of its whole channel (sharedRange false) or of the whole volume (true), so colours do not jump while a
// slider moves through the slices.
PlaneSet sliceOf(const VolumeSet& v, VolumeAxis axis, int64_t index, bool sharedRange, int channel = -1);

// The maximum along `axis` of every channel (NaN where the ray meets a NaN, as torch.amax). Ranges as sliceOf's.
PlaneSet maxProjection(const VolumeSet& v, VolumeAxis axis, bool sharedRange);

// Where along `axis` the ray through plane pixel (row, col) of channel `c` reaches its maximum (the first such index).
int64_t argmaxAlong(const VolumeSet& v, int64_t c, VolumeAxis axis, int row, int col);

// The voxel (d, h, w) that pixel (row, col) of a slice at `index` along `axis` shows.
std::array<int64_t, 3> voxelOf(VolumeAxis axis, int64_t index, int row, int col);

} // namespace convscope::gui
