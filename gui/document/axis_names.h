// What each axis of a tensor means, as far as the network says: an image input is N, C, H, W, a volume N, C, D, H,
// W, a feature vector N, features. An axis is a list of pieces of named original axes, so a view that merges axes
// ("C·H·W" after a flatten) or splits one (ShuffleNet's channel shuffle views C as C₁ × C₂) can be undone by a later
// view, and a merge of every piece of an axis in any order (the shuffle's transposed C₂·C₁) is that axis again. An
// unknown axis is written d0, d1, … by its position. Plain data, no widgets; network_axes.h walks a network with it.
#pragma once

#include "compute/shape.h"

#include <cstdint>
#include <string>
#include <vector>

namespace convscope::gui {

// One piece of a named original axis: `size` of its `whole` elements. `path` says which piece a split made: ""
// for the whole axis, then "1" for a split's leading piece and "2" for the rest ("21" when the rest is split again).
// An empty name is an unknown axis.
struct AxisPiece {
    std::string name;
    int64_t size = 1;
    int64_t whole = 1;
    std::string path;
    bool operator==(const AxisPiece&) const = default;
};

struct AxisName {
    std::vector<AxisPiece> pieces; // empty or any piece unnamed: unknown

    static AxisName named(std::string name, int64_t size) { return { { { std::move(name), size, size, "" } } }; }
    static AxisName unknown(int64_t size) { return { { { "", size, size, "" } } }; }
    bool known() const;
    // The product of the pieces' sizes (what the axis's size was when it was named).
    int64_t size() const;
    // "C", "C₂" (a piece), "C·H·W" (a merge), or "d3" for an unknown axis at `position`.
    std::string text(size_t position) const;
    // Is this the whole original axis `name` (e.g. "H"), not a piece or a merge?
    bool is(const std::string& name) const;
    bool operator==(const AxisName&) const = default;
};

using AxisNames = std::vector<AxisName>;

// Every axis unknown.
AxisNames unknownAxes(const std::vector<int64_t>& dims);
// The input's axes: N, C, H, W for an image; N, C, D, H, W for a volume; N, features for a flat input; N then
// unknown axes for a general tensor (its dim 0 is the batch).
AxisNames inputAxes(const Shape& input);
// The names of `names` viewed as `dims` (flatten, reshape, squeeze, unsqueeze: the same elements in the same order):
// the pieces are consumed in order, a piece that an output axis needs only part of is split, and size-1 axes come and
// go. Where the pieces do not line up with the new dims, the rest is unknown.
AxisNames reshapedAxes(const AxisNames& names, const std::vector<int64_t>& dims);
// The axes in the order `perm` gives (output axis i is input axis perm[i]); unknown where perm is out of range.
AxisNames permutedAxes(const AxisNames& names, const std::vector<int64_t>& perm);
// The names made to fit `dims`: an axis whose size changed (a concat, a slice, a strided layer) keeps its text as
// one whole piece of its new size; a rank that differs makes every axis unknown.
AxisNames fittedAxes(const AxisNames& names, const std::vector<int64_t>& dims);

// "N, H, W, C" (unknown axes as d0, d1, …).
std::string axesText(const AxisNames& names);
// "1×56×56×96 (N, H, W, C)"; only the sizes when no axis is known or the names do not fit the shape.
std::string shapeWithAxes(const Shape& shape, const AxisNames& names);

} // namespace convscope::gui
