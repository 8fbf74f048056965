// Shape inference of the general tensor kinds matmul and gather, and of linear on the last axis of any rank (issue 30).
// Internal to compute/: shape_inference.cpp's dispatch calls these; each throws InputError with a message a teacher
// can read.
#pragma once

#include "compute/shape_inference.h"

namespace convscope {

// linear: the last axis of any rank, or [N, C, 1, 1] / [N, C, 1, 1, 1] read as [N, C] (compute/linear_geometry.h).
LayerShape inferLinear(const Linear& l, const Shape& in);
// matmul: torch.matmul of its two inputs (compute/matmul.h).
LayerShape inferMatmul(const Matmul& l, const std::vector<Shape>& ins, const std::vector<std::string>& names);
// gather: data.shape[:axis] + indices_shape + data.shape[axis + 1:], every index checked (compute/gather.h).
LayerShape inferGather(const Gather& l, const Shape& in);

} // namespace convscope
