// Shape inference of the kinds that move data without arithmetic (channel_shuffle, slice, flatten, reshape, transpose,
// concat). Internal to compute/:
// shape_inference.cpp's dispatch calls these; each throws InputError with a message a teacher can read.
#pragma once

#include "compute/shape_inference.h"

namespace convscope::views {

LayerShape inferChannelShuffle(const ChannelShuffle& l, const Shape& in);
LayerShape inferSlice(const Slice& l, const Shape& in);
LayerShape inferFlatten(const Flatten& l, const Shape& in);
LayerShape inferReshape(const Reshape& l, const Shape& in);
LayerShape inferTranspose(const Transpose& l, const Shape& in);
LayerShape inferConcat(const Concat& l, const std::vector<Shape>& ins, const std::vector<std::string>& names);

// `dim` of a tensor of `rank` dims as an index 0..rank-1 (negative counts from the end, as PyTorch's); throws
// InputError naming `what` and the valid range when it is out of range.
int64_t wrapDim(int64_t dim, int rank, const std::string& what);
// "[1, 2, 3]": a list of integers as messages and formulas show it.
std::string listText(const std::vector<int64_t>& v);

} // namespace convscope::views
