// The state of an import while the nodes are read in order: the constants known so far, the activations (each the
// output of a ConvScope layer or the network's input, with its shape), and the network being built.
#pragma once

#include "compute/network.h"
#include "compute/onnx/onnx_attributes.h"
#include "compute/onnx/onnx_tensor.h"

#include <filesystem>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace convscope::onnx {

struct Activation {
    int layer = -1; // -1: the network's input
    Shape shape;
};

class GraphBuilder {
public:
    Network net;
    int64_t opset = 0;
    std::filesystem::path modelDir;
    std::unordered_map<std::string, ConstTensor> constants;
    std::unordered_map<std::string, Activation> activations;
    std::unordered_map<std::string, int> uses; // how many nodes (and graph outputs) read each tensor name
    // A Reshape result of more than 6 dims read once (Swin3D's window partition: [B, D/wd, wd, H/wh, wh, W/ww, ww, C]),
    // held back with a Transpose of it until a Reshape reads them (onnx_convert_views.cpp): the three are then layers
    // of at most 6 dims (size-1 axes dropped, axes that stay together merged). Any other reader fails with `why`.
    struct WideView {
        std::string input; // the activation reshaped
        std::vector<int64_t> dims; // the wide reshape's dims
        std::vector<int64_t> perm; // then a transpose of them (the identity until one is read)
        std::string why;
    };
    std::unordered_map<std::string, WideView> wide;
    // An empty Slice's output (torch.roll by 0 exports one), with the message for a reader other than Concat, which
    // leaves it out.
    std::unordered_map<std::string, std::string> empty;

    bool isConstant(const std::string& name) const { return constants.count(name) != 0; }
    bool isActivation(const std::string& name) const { return activations.count(name) != 0; }
    const Activation& activation(const std::string& name, const Attributes& a) const;
    const ConstTensor& constant(const std::string& name, const Attributes& a, const std::string& role) const;
    // The node's input k when present and constant, else nullptr (an omitted optional input).
    const ConstTensor* optionalConstant(
        const ::onnx::NodeProto& node, int k, const Attributes& a, const std::string& role) const;

    // Appends a layer named after the node reading `inputs` (activation names), infers its shape and binds
    // `output` to it. Fails naming the node when the shapes do not fit.
    void addLayer(const std::string& layerName, LayerSpec spec, const std::vector<std::string>& inputs,
        const std::string& output, const Attributes& a, std::shared_ptr<const Layer::Embedded> embedded = nullptr);
    // A unique layer name for a node ("conv1" when the node has none); `suffix` for a second layer of one node.
    std::string layerName(const ::onnx::NodeProto& node, size_t index, const std::string& suffix = {}) const;
};

// A ConvScope tensor of `shape` holding c's floats (weights must be float); c's element count must match.
std::shared_ptr<const Tensor> toTensor(
    const ConstTensor& c, const Shape& shape, const Attributes& a, const std::string& role);

// Converts one node that reads activations into layers. Throws InputError naming the node for what does not fit.
void convertNode(GraphBuilder& g, const ::onnx::NodeProto& node, size_t index, const Attributes& a);

// The 3-D window operators on a volume (onnx_convert_volume.cpp): true when the node was one and is converted, false
// when it is not a volume operator (convertNode goes on with it).
bool convertVolumeNode(GraphBuilder& g, const ::onnx::NodeProto& node, const std::string& name, const Attributes& a);

// Clip and PRelu with constant bounds and slopes (onnx_convert_activation.cpp).
void clip(GraphBuilder& g, const ::onnx::NodeProto& node, const std::string& name, const Attributes& a);
void prelu(GraphBuilder& g, const ::onnx::NodeProto& node, const std::string& name, const Attributes& a);

// Helpers of the converters (onnx_convert.cpp): the node's first input (failing when it has none); a failure when an
// output after the first is used; a refusal that lists the operators ConvScope takes.
const std::string& in0(const ::onnx::NodeProto& node, const Attributes& a);
void onlyFirstOutput(const GraphBuilder& g, const ::onnx::NodeProto& node, const Attributes& a);
[[noreturn]] void refuse(const ::onnx::NodeProto& node, const Attributes& a, const std::string& why);

// The operator table (onnx_operators.cpp): the operator types convertNode converts, sorted, and
// "Add, AveragePool, BatchNormalization, ...; folded when their inputs are constant: ..." for the messages.
std::vector<std::string> convertedOperators();
std::string supportedOperatorList();

} // namespace convscope::onnx
