// What the window draws of a tensor of any rank, cut along the axes an OutputView (gui/document/output_view.h)
// chose: the tiles of a map grid, a heat map's cells (downsampled by block means when the slice is larger than the
// screen could show), or the values of a rank-1 tensor. Plain data, no widgets, so the arithmetic is tested alone.
#pragma once

#include "compute/tensor.h"
#include "gui/document/output_view.h"
#include "gui/views/feature_map_grid.h"

#include <cstdint>
#include <vector>

namespace convscope::gui {

// `index` has one entry per axis: the item's and the picked axes' indices (clamped to their axis); the entries of
// the shown axes are ignored.
//
// Tiles firstTile … firstTile + maxTiles − 1 along the view's tile axis (one tile when it has none), each rows ×
// columns of the view's axes; channelIds number the tiles along the axis. Canonical N, C, H, W maps of item n are
// exactly planesOf(t, n).
PlaneSet mapsOf(const Tensor& t, const OutputView& v, const std::vector<int64_t>& index, int64_t firstTile = 0,
    int64_t maxTiles = INT64_MAX);

struct HeatMapData {
    int64_t rows = 0, cols = 0; // cells
    int64_t fullRows = 0, fullCols = 0; // the slice's own size
    int64_t rowStep = 1, colStep = 1; // slice rows (columns) per cell: more than 1 when downsampled
    std::vector<float> values; // rows × cols, row-major
    bool difference = false; // the cells are |t − reference|
    bool empty() const { return values.empty(); }
    bool downsampled() const { return rowStep > 1 || colStep > 1; }
    float at(int64_t r, int64_t c) const { return values[size_t(r * cols + c)]; }
};

// The view's rows × columns at `index`; with `reference` (of the same shape), |t − reference| instead. A slice with
// more than maxSide rows or columns is shown in blocks of ⌈size / maxSide⌉, each cell the mean of its block (NaN if
// any element is NaN).
HeatMapData heatMapOf(const Tensor& t, const Tensor* reference, const OutputView& v, const std::vector<int64_t>& index,
    int64_t maxSide = 1024);

// A rank-1 tensor's values, or |t − reference|; empty for another rank.
std::vector<float> barsOf(const Tensor& t, const Tensor* reference);

} // namespace convscope::gui
