// Shape inference of softmax, log_softmax and reduce (issue 30). Internal to compute/: shape_inference.cpp's
// dispatch calls these; each throws InputError with a message a teacher can read.
#pragma once

#include "compute/shape_inference.h"

namespace convscope {

// softmax / log_softmax along `dim` (negative from the end) of any rank: the output is the input's shape.
LayerShape inferSoftmax(int64_t dim, bool log, const Shape& in);
// reduce: the axes checked (in range, none twice), the output's dims reduceOutputDims gives.
LayerShape inferReduce(const Reduce& r, const Shape& in);

} // namespace convscope
