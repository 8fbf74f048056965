// Subgraphs that exporters write for one layer, read back as that layer at import (issue 30): the Erf form of GELU,
// x · ½ · (1 + erf(x / √2)), which torch.onnx writes below opset 20 (Div, Erf, Add, Mul, Mul) and hand-written GELUs
// write with the half first (Mul(x, 0.5), Div, Erf, Add, Mul) or x · (1/√2) for the division; and LayerNorm as
// torch.onnx writes it below opset 17.
#pragma once

#include "compute/layer_spec.h"
#include "compute/network.h"
#include "compute/onnx/onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace convscope::onnx {

struct FoldedPattern {
    LayerSpec spec;
    std::string input; // the activation the layer reads
    std::string output; // the tensor its last node writes
    // layer_norm (PyTorch's LayerNorm before opset 17: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, then
    // Mul by the weight and Add the bias when it has them): how many trailing axes it reduces and the constants of its
    // weight and bias (empty: none); resolveFoldedPattern makes normalized_shape and the parameters from the input.
    int64_t normAxes = 0;
    std::string weight, bias;
};

// The layer of a folded pattern on its input: the spec, and the parameters a layer_norm carries (null for GELU).
struct ResolvedPattern {
    LayerSpec spec;
    std::shared_ptr<const Layer::Embedded> embedded;
};
ResolvedPattern resolveFoldedPattern(const FoldedPattern& f, const Shape& in,
    const std::unordered_map<std::string, ConstTensor>& constants, const std::string& where);

struct PatternFolds {
    std::unordered_map<int, FoldedPattern> at; // the node index (the pattern's first) where the layer is added
    std::unordered_set<int> skip; // the pattern's other nodes: read as part of the layer
};

// Every GELU pattern of the graph whose intermediate tensors have no other reader and whose constants (initializers,
// or Constant nodes) are the formula's. `uses` counts the readers of each tensor name (graph outputs included).
PatternFolds findFoldablePatterns(const ::onnx::GraphProto& graph,
    const std::unordered_map<std::string, ConstTensor>& constants, const std::unordered_map<std::string, int>& uses,
    int64_t opset, const std::filesystem::path& modelDir);

} // namespace convscope::onnx
