// Shape inference of the kinds that move data without arithmetic (channel_shuffle, slice). Internal to compute/:
// shape_inference.cpp's dispatch calls these; each throws InputError with a message a teacher can read.
#pragma once

#include "compute/shape_inference.h"

namespace convscope::views {

LayerShape inferChannelShuffle(const ChannelShuffle& l, const Shape& in);
LayerShape inferSlice(const Slice& l, const Shape& in);

} // namespace convscope::views
