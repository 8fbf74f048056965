// Shape inference runs on every edit. Per layer it gives the output shape or an error a teacher can
// read, the output-size formula with the numbers filled in, and the cost (parameters, FLOPs, bytes,
// arithmetic intensity). It never throws for a bad network: errors are data here.
#pragma once

#include "compute/network.h"
#include "compute/shape.h"

#include <string>
#include <vector>

namespace convscope {

struct LayerCost {
    int64_t params = 0;
    double flops = 0; // multiply and add counted as 2; transposed convolution counted on the input size
    double bytesRead = 0; // input activations + parameters, float32
    double bytesWritten = 0; // output activations
    double intensity() const { return (bytesRead + bytesWritten) > 0 ? flops / (bytesRead + bytesWritten) : 0; }
};

struct LayerShape {
    bool ok = false;
    std::string name; // the layer's name (set by inferShapes), so errors can say which layer
    Shape in, out;
    std::string error; // set when !ok
    std::string formula; // e.g. "H_out = ⌊(28 + 2 + 2 − 1·(5−1) − 1) / 1⌋ + 1 = 28\nW_out = ..."
    Padding2d resolvedPadding; // "same"/"valid" turned into explicit amounts (window ops only)
    LayerCost cost;
};

struct ShapeReport {
    Shape input;
    std::string inputError; // set when the input description itself is impossible
    std::vector<LayerShape> layers;
    LayerCost total;
    bool ok() const;
    std::string firstError() const; // the input's error, or "layer 3 (c2): ...", or empty
};

ShapeReport inferShapes(const Network& net);
// Infers one layer given its input shape (used by the sweep and the backends' supports()).
LayerShape inferLayer(const LayerSpec& spec, const Shape& in);

} // namespace convscope
