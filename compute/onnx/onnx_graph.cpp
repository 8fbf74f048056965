#include "compute/onnx/onnx_graph.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/memory_budget.h"
#include "compute/shape_inference.h"

#include <algorithm>
#include <cctype>

namespace convscope::onnx {

const Activation& GraphBuilder::activation(const std::string& name, const Attributes& a) const
{
    const auto it = activations.find(name);
    if (const auto w = wide.find(name); it == activations.end() && w != wide.end())
        a.fail(w->second.why);
    if (const auto e = empty.find(name); it == activations.end() && e != empty.end())
        a.fail(e->second);
    if (it == activations.end())
        a.fail("input \"" + name + "\" is a constant, but ConvScope needs a layer's output there");
    return it->second;
}

const ConstTensor& GraphBuilder::constant(const std::string& name, const Attributes& a, const std::string& role) const
{
    const auto it = constants.find(name);
    if (it == constants.end())
        a.fail(
            role + " \"" + name + "\" is computed by the network; ConvScope needs a constant (an initializer) there");
    return it->second;
}

const ConstTensor* GraphBuilder::optionalConstant(
    const ::onnx::NodeProto& node, int k, const Attributes& a, const std::string& role) const
{
    if (k >= node.input_size() || node.input(k).empty())
        return nullptr;
    return &constant(node.input(k), a, role);
}

std::string GraphBuilder::layerName(const ::onnx::NodeProto& node, size_t index, const std::string& suffix) const
{
    std::string base = node.name();
    if (base.empty()) {
        base = node.op_type();
        std::transform(base.begin(), base.end(), base.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        base += std::to_string(index);
    }
    base += suffix;
    const auto taken = [&](const std::string& n) {
        return n == kNetworkInputName
            || std::any_of(net.layers.begin(), net.layers.end(), [&](const Layer& l) { return l.name == n; });
    };
    std::string name = base;
    for (int k = 2; taken(name); ++k)
        name = base + "_" + std::to_string(k);
    return name;
}

void GraphBuilder::addLayer(const std::string& layerName, LayerSpec spec, const std::vector<std::string>& inputs,
    const std::string& output, const Attributes& a, std::shared_ptr<const Layer::Embedded> embedded)
{
    Layer layer;
    // A converter's second layer (name + "_pad", name + "/axis1", ...) may meet a name a node already took (the fuzz
    // preset named a node "p/axis0"): layers are told apart by name, so the new one gets a suffix.
    layer.name = layerName;
    for (int k = 2; layer.name == kNetworkInputName
         || std::any_of(net.layers.begin(), net.layers.end(), [&](const Layer& l) { return l.name == layer.name; });
         ++k)
        layer.name = layerName + "_" + std::to_string(k);
    layer.spec = std::move(spec);
    std::vector<Shape> shapes;
    std::vector<std::string> names;
    std::vector<int> sources;
    for (const std::string& in : inputs) {
        const Activation& act = activation(in, a);
        shapes.push_back(act.shape);
        sources.push_back(act.layer);
        names.push_back(act.layer < 0 ? std::string(kNetworkInputName) : net.layers[size_t(act.layer)].name);
    }
    // The layer above is the default: keep such layers' "inputs" empty, as a hand-written chain has them.
    const int above = int(net.layers.size()) - 1;
    if (!(sources.size() == 1 && sources[0] == above))
        layer.inputs = names;
    const LayerShape s = inferLayer(layer.spec, shapes, names);
    if (!s.ok)
        a.fail(s.error);
    // Every shape is known here: an output past the memory budget (a Resize or Expand to millions of pixels) is
    // refused at import, naming the node and the size, rather than when a run allocates it.
    checkHostAllocation(checkedMul(s.out.numel(), int64_t(sizeof(float)), a.where()),
        a.where() + ": the output " + s.out.str() + " of layer \"" + layerName + "\"");
    if (embedded) {
        layer.init.kind = "embedded";
        layer.embedded = std::move(embedded);
    }
    net.layers.push_back(std::move(layer));
    activations[output] = Activation { int(net.layers.size()) - 1, s.out };
}

std::shared_ptr<const Tensor> toTensor(
    const ConstTensor& c, const Shape& shape, const Attributes& a, const std::string& role)
{
    if (!c.isFloat)
        a.fail(role + " must be a float tensor");
    if (c.numel() != shape.numel())
        a.fail(role + " " + npyDimsText(c.dims) + " has " + std::to_string(c.numel()) + " values, "
            + std::to_string(shape.numel()) + " needed");
    Tensor t(shape);
    std::copy(c.f.begin(), c.f.end(), t.data());
    return std::make_shared<const Tensor>(std::move(t));
}

} // namespace convscope::onnx
