// The names of every layer's output axes, derived through the network from its input (gui/document/axis_names.h):
// a convolution, pooling, batch norm or pad reads N, C, H, W (N, C, D, H, W for the 3-D kinds) and names unknown
// axes so; a transpose permutes the names; flatten and reshape merge, split or lose them; linear names its last axis
// "features" (C stays C in a tensor of rank 3 or more: a linear over the channels of an N×H×W×C image is a 1×1
// convolution); concat, slice and
// resize keep them; element-wise layers with several inputs take each axis's name from the inputs, broadcast from the
// right. Any other kind keeps the names of the axes whose size it keeps.
#pragma once

#include "compute/network.h"
#include "compute/shape_inference.h"
#include "gui/document/axis_names.h"

#include <vector>

namespace convscope::gui {

// One entry per layer of `shapes` (empty for a layer whose shape is not valid).
std::vector<AxisNames> layerAxes(const Network& net, const ShapeReport& shapes);

} // namespace convscope::gui
