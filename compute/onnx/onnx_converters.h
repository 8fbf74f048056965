// The converters of single ONNX operators with attributes to read (onnx_convert.cpp) and the helpers they share, for
// the operator table (onnx_operators.cpp), which is the only dispatch over operator names. The helpers every converter
// uses (in0, onlyFirstOutput, refuse) and Clip and PRelu are declared in onnx_graph.h.
#pragma once

#include "compute/onnx/onnx_graph.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace convscope::onnx::convert {

void need4d(const Shape& s, const Attributes& a); // an image [N, C, H, W] (or fails)
// Every input of the node, each an activation (a constant operand is refused).
std::vector<std::string> activationInputs(const GraphBuilder& g, const ::onnx::NodeProto& n, const Attributes& a);
// Add of a layer's output and a constant: the bias of a MatMul turned into a bias-less linear layer (true when done).
bool foldLinearBias(GraphBuilder& g, const ::onnx::NodeProto& n, const Attributes& a);

void conv(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
void convTranspose(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
void batchNorm(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
void pool(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a); // Max, Average
void gemm(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a); // Gemm, MatMul
void pad(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
// Add, Sub, Mul, Div, Pow, Min, Max as the binary kind (onnx_convert_binary.cpp): a constant operand or two
// activations of broadcastable shapes.
void binary(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a, Binary::Op op);
// Max, Min, Sum of any count of inputs (constants too) as a chain of binary layers; Mean the same with Add and a
// division by the count (scale: the count).
void binaryChain(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a,
    Binary::Op op, double scale = 1.0);
// Resize (10 to 21) and Upsample (7 to 9), onnx_convert_resize.cpp.
void resize(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
// onnx_convert_views.cpp: Slice on an activation; Transpose; Reshape, Flatten (any axis), Squeeze and Unsqueeze as
// reshape layers (a Reshape–Transpose–Reshape that is PyTorch's channel shuffle becomes one channel_shuffle layer).
void slice(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
// onnx_convert_slice.cpp: Slice (any step, an empty one held back as GraphBuilder::empty) and the wide views
// (GraphBuilder::wide): a wide view's dims after its transpose, and the view as layers of at most 6 dims — returns the
// tensor its reader reshapes; refuses with the view's message when more than 6 axes remain.
std::vector<int64_t> wideDims(const GraphBuilder::WideView& w);
std::string unwiden(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a,
    GraphBuilder::WideView w);
void transpose(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
void reshape(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
void flatten(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
void squeeze(
    GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a); // and Unsqueeze
// onnx_convert_norm.cpp: LayerNormalization (17), InstanceNormalization (6), GroupNormalization (18: scale and bias per
// group, expanded to the channels; 21: per channel) as layer_norm, instance_norm and group_norm.
void layerNormalization(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
void instanceNormalization(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
void groupNormalization(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
// onnx_convert_reduce.cpp: Softmax and LogSoftmax at every opset (before 13 over the axes from `axis` on: a reshape to
// 2-D, the softmax, a reshape back, unless the axes after `axis` are all 1); ReduceMean/Sum/Max/Min/L2 as reduce.
void softmax(
    GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, size_t index, const Attributes& a, bool log);
void reduce(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a, Reduce::Op op);
// onnx_convert_matmul.cpp: MatMul (two activations: matmul; by a constant 2-D B: linear on the last axis) and Gather
// of an activation by constant indices.
void matmul(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
void gather(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
// onnx_convert_einsum.cpp: Einsum (numpy.einsum, any number of operands) as gather, reduce sum, transpose, reshape
// and matmul.
void einsum(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
// Split: a slice layer per output read; Expand of an activation: a binary mul by ones that broadcasts.
void split(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
void expand(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
// Tile of an activation: a concat of copies along each repeated axis.
void tile(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a);
// The inputs of a Concat on `axis` as activations: each constant one (ViT's class token) made from an activation
// input by a slice, a pow by 0 and a mul by the constant (exact); fails when no input is an activation.
// Constant padding of any axes of an activation (pads: ONNX's begins then ends, one per axis, none negative): along
// each padded axis a concat of the input with blocks of the value made like concatInputs' constants (exact).
void padAxes(GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a,
    const std::vector<int64_t>& pads, double value);
std::vector<std::string> concatInputs(
    GraphBuilder& g, const ::onnx::NodeProto& n, const std::string& name, const Attributes& a, int64_t axis);

} // namespace convscope::onnx::convert
