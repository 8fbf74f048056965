// The receptive field of one output pixel: which input pixels it depends on, through every layer above
// it with its padding, stride and dilation. Rows and columns are independent in every 2-D layer ConvScope
// has, so the exact set (holes from dilation or stride included) is rows × cols.
#pragma once

#include "compute/network.h"
#include "compute/shape_inference.h"

#include <cstdint>
#include <vector>

namespace convscope::gui {

struct ReceptiveField {
    bool ok = false;
    std::vector<bool> rows, cols; // over the network input's height / width
    int64_t rowSpan() const; // first to last row, inclusive
    int64_t colSpan() const;
    int64_t count() const; // pixels in the set (per channel)
};

// Output pixel (row, col) of layer `layer`. Fully connected layers depend on every input pixel.
ReceptiveField receptiveField(const Network& net, const ShapeReport& shapes, size_t layer, int64_t row, int64_t col);

} // namespace convscope::gui
