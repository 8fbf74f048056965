// Folding of constant subgraphs at import: the shape, pad and weight arithmetic PyTorch writes around
// nn.ZeroPad2d, flatten and reshapes (Constant, Gather, Unsqueeze, Squeeze, Concat, Reshape, Slice, Cast,
// ConstantOfShape, Transpose, and element-wise Add/Sub/Mul/Div of constants: onnx_fold.cpp), and what exports write
// around shapes and masks (Shape, Size, Expand, Where, the comparisons and logic, Range, Tile, Split, Min/Max and the
// element-wise maths of constants: onnx_fold_ops.cpp), and the maths exports write on constant tables (MatMul, Gemm,
// Relu, Sigmoid, Tanh, Clip, Flatten: onnx_fold_math.cpp). Shape and Size of an activation fold too (onnx_import.cpp).
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

// onnx_fold_ops.cpp: its operators (sorted; part of foldableOperators) and their fold.
const std::vector<std::string>& shapeFoldOperators();
std::vector<ConstTensor> foldShapeOperator(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& inputs,
    const Attributes& attrs, int64_t opset);

// onnx_fold_math.cpp: MatMul, Gemm, Relu, Sigmoid, Tanh, Clip and Flatten of constants (sorted; part of
// foldableOperators).
const std::vector<std::string>& mathFoldOperators();
std::vector<ConstTensor> foldMathOperator(const ::onnx::NodeProto& node, const std::vector<const ConstTensor*>& inputs,
    const Attributes& attrs, int64_t opset);

// The sizes of ONNX Split's outputs along `axis` of `dims`: the `split` input (opset 13+, splitInput; nullptr when
// omitted) or attribute (before 13), num_outputs (18+: chunks of ceil(n / num_outputs)), else equal parts, one per
// output. Fails naming the numbers when they are negative, do not sum to the axis or do not match the outputs.
std::vector<int64_t> splitSizes(const ::onnx::NodeProto& node, const std::vector<int64_t>& dims, int64_t axis,
    const ConstTensor* splitInput, const Attributes& attrs, int64_t opset);

} // namespace convscope::onnx
