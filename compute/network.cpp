#include "compute/network.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/image_input.h"
#include "compute/layer_kinds.h"
#include "compute/npy.h"
#include "compute/random.h"
#include "compute/shape_inference.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace convscope {

InputSpec InputSpec::ofDims(const std::vector<int64_t>& dims, const std::string& source)
{
    InputSpec in;
    in.source = source;
    if (dims.empty())
        return in;
    in.batch = dims[0];
    in.channels = dims.size() > 1 ? dims[1] : 1;
    in.height = in.width = 1;
    if (dims.size() == 2) {
        in.flat = true;
    } else if (dims.size() == 4 || dims.size() == 5) {
        in.height = dims[dims.size() - 2];
        in.width = dims.back();
        if (dims.size() == 5)
            in.depth = dims[2];
    } else {
        in.dims = dims;
    }
    return in;
}

bool Network::sameDescription(const Network& o) const
{
    if (name != o.name || description != o.description || labels != o.labels || !(input == o.input)
        || layers.size() != o.layers.size())
        return false;
    for (size_t i = 0; i < layers.size(); ++i)
        if (!layers[i].sameDescription(o.layers[i]))
            return false;
    return true;
}

std::string defaultLayerName(const Network& net, const LayerSpec& spec)
{
    // Short prefixes as people write them in PyTorch modules (self.conv1, self.fc2, self.bn1).
    const std::string prefix = layerKind(spec).prefix;
    std::set<std::string> used;
    for (const auto& l : net.layers)
        used.insert(l.name);
    for (size_t n = 1;; ++n) {
        std::string candidate = prefix + std::to_string(n);
        if (!used.count(candidate))
            return candidate;
    }
}

std::vector<int> resolveLayerInputs(const Network& net, size_t i)
{
    const Layer& layer = net.layers.at(i);
    if (layer.inputs.empty())
        return { int(i) - 1 };
    const std::string where = "layer " + std::to_string(i) + " (" + layer.name + ")";
    std::vector<int> sources;
    for (const std::string& name : layer.inputs) {
        if (name == kNetworkInputName) {
            sources.push_back(-1);
            continue;
        }
        if (name == layer.name)
            throw InputError(where + ": input \"" + name + "\" is the layer itself; a layer reads \"input\" or the "
                + "layers above it");
        int found = -1;
        for (size_t k = 0; k < net.layers.size() && found < 0; ++k)
            if (net.layers[k].name == name)
                found = int(k);
        if (found < 0)
            throw InputError(where + ": input \"" + name + "\" is not the name of any layer (nor \"input\", the "
                + "network's input)");
        if (size_t(found) > i)
            throw InputError(where + ": input \"" + name + "\" is used before its layer (it is layer "
                + std::to_string(found) + "); a layer reads only \"input\" and the layers above it");
        sources.push_back(found);
    }
    return sources;
}

std::vector<std::vector<int>> resolveInputs(const Network& net)
{
    std::vector<std::vector<int>> sources(net.layers.size());
    for (size_t i = 0; i < net.layers.size(); ++i)
        sources[i] = resolveLayerInputs(net, i);
    return sources;
}

bool hasSkipInputs(const Network& net)
{
    const auto sources = resolveInputs(net);
    for (size_t i = 0; i < sources.size(); ++i)
        if (sources[i] != std::vector<int> { int(i) - 1 })
            return true;
    return false;
}

Layer makeConvLayer(
    const std::string& name, int64_t outChannels, int64_t kernel, int64_t stride, int64_t padding, uint64_t seed)
{
    Conv2d c;
    c.out_channels = outChannels;
    c.kernel_size = { kernel, kernel };
    c.stride = { stride, stride };
    c.padding = Padding2d::symmetric(padding, padding);
    Layer l;
    l.name = name;
    l.spec = c;
    l.init.kind = "he_uniform";
    l.init.seed = seed;
    return l;
}

Network singleConvNetwork(const std::string& name, int64_t batch, int64_t inChannels, int64_t size, int64_t outChannels,
    int64_t kernel, int64_t stride, int64_t padding, uint64_t seed)
{
    Network n;
    n.name = name;
    n.input = { batch, inChannels, size, size, false, "random:" + std::to_string(seed) };
    n.layers.push_back(makeConvLayer("conv", outChannels, kernel, stride, padding, seed));
    return n;
}

} // namespace convscope
