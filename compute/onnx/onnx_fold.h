// Folding of constant subgraphs at import: the shape, pad and weight arithmetic PyTorch writes around
// nn.ZeroPad2d, flatten and reshapes (Constant, Shape, Gather, Unsqueeze, Squeeze, Concat, Reshape, Slice, Cast,
// ConstantOfShape, Transpose, and element-wise Add/Sub/Mul/Div of constants).
#pragma once

#include "compute/onnx/onnx_attributes.h"
#include "compute/onnx/onnx_tensor.h"

#include <filesystem>
#include <string>
#include <vector>

namespace convscope::onnx {

// The operators foldNode computes when all their inputs are constants (sorted), and the test for one.
const std::vector<std::string>& foldableOperators();
bool isFoldable(const std::string& op);

// The node's outputs, computed from its constant inputs (nullptr for an omitted optional input). Throws
// InputError (naming the node through `attrs`) for inputs it cannot take.
std::vector<ConstTensor> foldNode(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& inputs,
    const Attributes& attrs, int64_t opset, const std::filesystem::path& modelDir);

} // namespace convscope::onnx
