// Shape inference runs on every edit. Per layer it gives the output shape or an error a teacher can
// read, the output-size formula with the numbers filled in, and the cost (parameters, FLOPs, bytes,
// arithmetic intensity). It never throws for a bad network: errors are data here.
#pragma once

#include "compute/network.h"
#include "compute/shape.h"

#include <array>
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
    Shape in, out; // `in` is the first input's shape
    std::vector<Shape> ins; // every input's shape, in the order the layer names them
    // The layers it reads (-1: the network's input), set by inferShapes; empty when its "inputs" are invalid.
    std::vector<int> sources;
    // Bytes of every tensor alive while this layer runs: its output, its inputs, and every earlier tensor a later
    // layer still reads (a skip keeps its tensor alive). Set by inferShapes for valid layers.
    int64_t liveBytes = 0;
    std::string error; // set when !ok
    std::string formula; // e.g. "H_out = ⌊(28 + 2 + 2 − 1·(5−1) − 1) / 1⌋ + 1 = 28\nW_out = ..."
    Padding2d resolvedPadding; // "same"/"valid" turned into explicit amounts (window ops only)
    Padding3d resolvedPadding3d; // the same for the 3-D window ops (conv3d, conv_transpose3d, the 3-D pools)
    LayerCost cost;
};

struct ShapeReport {
    Shape input;
    std::string inputError; // set when the input description itself is impossible
    std::vector<LayerShape> layers;
    LayerCost total;
    int64_t peakBytes = 0; // the largest LayerShape::liveBytes (the input's bytes for a network without layers)
    // Does layer i read exactly the layer above (or the input, for layer 0)? What a chain-only backend needs.
    bool readsLayerAbove(size_t i) const;
    bool ok() const;
    std::string firstError() const; // the input's error, or "layer 3 (c2): ...", or empty
};

ShapeReport inferShapes(const Network& net);
// Infers one layer given its input shape (used by the sweep and the backends' supports()).
LayerShape inferLayer(const LayerSpec& spec, const Shape& in);
// Infers one layer of any arity; `names` (optional) name the inputs in errors ("conv2" gives [1, 16, 8, 8] but ...).
LayerShape inferLayer(const LayerSpec& spec, const std::vector<Shape>& ins, const std::vector<std::string>& names = {});

// TensorFlow's "same" along one axis of `in` elements (kernel k, stride s, dilation d): the output is ceil(in / s) and
// the total padding that needs, split {before, after} with the odd element after. The 2-D and 3-D window ops resolve
// "same" with it, and the ONNX reader its auto_pad SAME_UPPER (and, swapped, SAME_LOWER).
std::array<int64_t, 2> samePadding(int64_t in, int64_t k, int64_t s, int64_t d);

} // namespace convscope
