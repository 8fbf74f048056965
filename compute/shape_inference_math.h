// Shape inference of the tensor-maths kinds of issue 30 (gelu, softplus, mish, unary). Internal to compute/:
// shape_inference.cpp's dispatch calls these; each throws InputError with a message a teacher can read.
#pragma once

#include "compute/shape_inference.h"

namespace convscope {

// gelu, softplus, mish, unary: the output has the input's shape, whatever its rank (Shape::dims()).
LayerShape inferElementwiseMath(const Shape& in, const LayerSpec& spec);
// binary: NumPy's broadcast of its two operands (the inputs, or the input and the constant); errors name both shapes.
LayerShape inferBinary(const Binary& l, const std::vector<Shape>& ins, const std::vector<std::string>& names);

} // namespace convscope
