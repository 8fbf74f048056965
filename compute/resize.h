// The resize kind's host side (layer_spec.h's Resize): its names in files and ONNX, its shape rule and the plan the
// backends run (resize_math.h).
#pragma once

#include "compute/layer_spec.h"
#include "compute/resize_math.h"
#include "compute/shape_inference.h"

#include <optional>
#include <string>

namespace convscope {

// The enum for a name ("nearest"/"linear"/"cubic", PyTorch's "bilinear", "trilinear" and "bicubic" read as linear and
// cubic; ONNX's coordinate and nearest modes), or nullopt.
std::optional<Resize::Mode> resizeModeFrom(const std::string& name);
std::optional<Resize::Coordinates> resizeCoordinatesFrom(const std::string& name);
std::optional<Resize::NearestMode> resizeNearestModeFrom(const std::string& name);

// Shape inference (shape_inference.cpp dispatches here): the output, the formula and the cost. InputError for a flat
// input, a size or scale list of the wrong length, a size or scale that is not positive, an output of zero or one
// that overflows.
LayerShape inferResize(const Resize& l, const Shape& in);

// The plan of a resize whose shapes `s` inferResize gave.
ResizePlan resizePlan(const Resize& l, const LayerShape& s);

} // namespace convscope
