#include "compute/layer_spec.h"

#include "compute/error.h"

#include <sstream>

namespace convscope {

namespace {
    // Index-aligned with the LayerSpec variant alternatives.
    constexpr std::array<const char*, std::variant_size_v<LayerSpec>> kTypeNames = {
        "conv2d",
        "conv_transpose2d",
        "maxpool2d",
        "avgpool2d",
        "global_avgpool2d",
        "batchnorm2d",
        "relu",
        "leaky_relu",
        "sigmoid",
        "tanh",
        "elu",
        "flatten",
        "linear",
        "softmax",
    };

    template <size_t I = 0> LayerSpec makeByIndex(size_t index)
    {
        if constexpr (I < std::variant_size_v<LayerSpec>) {
            if (index == I)
                return LayerSpec(std::in_place_index<I>);
            return makeByIndex<I + 1>(index);
        } else {
            throw InputError("bad layer index");
        }
    }

    std::string pairText(const Pair& p)
    {
        return p[0] == p[1] ? std::to_string(p[0]) : std::to_string(p[0]) + "×" + std::to_string(p[1]);
    }
} // namespace

std::string layerTypeName(const LayerSpec& spec) { return kTypeNames[spec.index()]; }

const std::array<const char*, std::variant_size_v<LayerSpec>>& layerTypeNames() { return kTypeNames; }

LayerSpec makeLayerSpec(const std::string& typeName)
{
    for (size_t i = 0; i < kTypeNames.size(); ++i)
        if (typeName == kTypeNames[i])
            return makeByIndex(i);
    std::string known;
    for (const char* n : kTypeNames)
        known += std::string(known.empty() ? "" : ", ") + n;
    throw InputError("unknown layer type \"" + typeName + "\" (known: " + known + ")");
}

std::string layerSummary(const LayerSpec& spec)
{
    std::ostringstream s;
    s << layerTypeName(spec);
    std::visit(
        [&](const auto& l) {
            using T = std::decay_t<decltype(l)>;
            if constexpr (std::is_same_v<T, Conv2d> || std::is_same_v<T, ConvTranspose2d>) {
                s << " →" << l.out_channels << " k" << pairText(l.kernel_size);
                if (l.stride != Pair { 1, 1 })
                    s << " s" << pairText(l.stride);
                if (l.dilation != Pair { 1, 1 })
                    s << " d" << pairText(l.dilation);
                if (l.groups != 1)
                    s << " g" << l.groups;
            } else if constexpr (std::is_same_v<T, MaxPool2d> || std::is_same_v<T, AvgPool2d>) {
                s << " k" << pairText(l.kernel_size) << " s" << pairText(l.effectiveStride());
            } else if constexpr (std::is_same_v<T, Linear>) {
                s << " →" << l.out_features;
            } else if constexpr (std::is_same_v<T, LeakyReLU>) {
                s << " " << l.negative_slope;
            }
        },
        spec);
    return s.str();
}

bool hasParameters(const LayerSpec& spec)
{
    return std::holds_alternative<Conv2d>(spec) || std::holds_alternative<ConvTranspose2d>(spec)
        || std::holds_alternative<BatchNorm2d>(spec) || std::holds_alternative<Linear>(spec);
}

bool isConvolution(const LayerSpec& spec)
{
    return std::holds_alternative<Conv2d>(spec) || std::holds_alternative<ConvTranspose2d>(spec);
}

} // namespace convscope
