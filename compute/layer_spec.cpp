#include "compute/layer_spec.h"

#include "compute/binary.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/reduce.h"

#include <sstream>

namespace convscope {

namespace {
    constexpr std::array<const char*, std::variant_size_v<LayerSpec>> typeNames()
    {
        std::array<const char*, std::variant_size_v<LayerSpec>> names {};
        for (size_t i = 0; i < names.size(); ++i)
            names[i] = kLayerKinds[i].type;
        return names;
    }
    constexpr auto kTypeNames = typeNames();

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

    std::string tripleText(const Triple& t)
    {
        return t[0] == t[1] && t[1] == t[2]
            ? std::to_string(t[0])
            : std::to_string(t[0]) + "×" + std::to_string(t[1]) + "×" + std::to_string(t[2]);
    }
} // namespace

const LayerKindInfo* findLayerKind(std::string_view type)
{
    for (const LayerKindInfo& k : kLayerKinds)
        if (type == k.type)
            return &k;
    return nullptr;
}

const char* unaryOpName(Unary::Op op)
{
    switch (op) {
    case Unary::Op::Exp:
        return "exp";
    case Unary::Op::Log:
        return "log";
    case Unary::Op::Sqrt:
        return "sqrt";
    case Unary::Op::Reciprocal:
        return "reciprocal";
    case Unary::Op::Neg:
        return "neg";
    case Unary::Op::Abs:
        return "abs";
    case Unary::Op::Erf:
        return "erf";
    }
    return "?";
}

const char* padModeName(Pad::Mode mode)
{
    switch (mode) {
    case Pad::Mode::Constant:
        return "constant";
    case Pad::Mode::Reflect:
        return "reflect";
    case Pad::Mode::Replicate:
        return "replicate";
    }
    return "constant";
}

std::string layerTypeName(const LayerSpec& spec) { return layerKind(spec).type; }

const std::array<const char*, std::variant_size_v<LayerSpec>>& layerTypeNames() { return kTypeNames; }

LayerSpec makeLayerSpec(const std::string& typeName)
{
    if (const LayerKindInfo* kind = findLayerKind(typeName))
        return makeByIndex(kind->index);
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
            } else if constexpr (std::is_same_v<T, Conv3d> || std::is_same_v<T, ConvTranspose3d>) {
                s << " →" << l.out_channels << " k" << tripleText(l.kernel_size);
                if (l.stride != Triple { 1, 1, 1 })
                    s << " s" << tripleText(l.stride);
                if (l.dilation != Triple { 1, 1, 1 })
                    s << " d" << tripleText(l.dilation);
                if (l.groups != 1)
                    s << " g" << l.groups;
            } else if constexpr (std::is_same_v<T, MaxPool3d> || std::is_same_v<T, AvgPool3d>) {
                s << " k" << tripleText(l.kernel_size) << " s" << tripleText(l.effectiveStride());
            } else if constexpr (std::is_same_v<T, Linear>) {
                s << " →" << l.out_features;
            } else if constexpr (std::is_same_v<T, LeakyReLU>) {
                s << " " << l.negative_slope;
            } else if constexpr (std::is_same_v<T, Hardtanh>) {
                s << " [" << l.min_val << ", " << l.max_val << "]";
            } else if constexpr (std::is_same_v<T, GELU>) {
                if (l.tanh_approximation)
                    s << " tanh";
            } else if constexpr (std::is_same_v<T, Softplus>) {
                if (l.beta != 1.0 || l.threshold != 20.0)
                    s << " β" << l.beta << " t" << l.threshold;
            } else if constexpr (std::is_same_v<T, Unary>) {
                s << " " << unaryOpName(l.op);
            } else if constexpr (std::is_same_v<T, Binary>) {
                s << " " << binaryOpName(l.op)
                  << (l.constant.empty()        ? ""
                             : l.constant_first ? " (constant first)"
                                                : " constant");
            } else if constexpr (std::is_same_v<T, PReLU>) {
                if (l.num_parameters != 1)
                    s << " ×" << l.num_parameters;
            } else if constexpr (std::is_same_v<T, Pad>) {
                s << " [" << l.padding[0] << ", " << l.padding[1] << ", " << l.padding[2] << ", " << l.padding[3]
                  << "] " << padModeName(l.mode);
            } else if constexpr (std::is_same_v<T, Resize>) {
                if (!l.size.empty()) {
                    s << " →";
                    for (size_t k = 0; k < l.size.size(); ++k)
                        s << (k ? "×" : "") << l.size[k];
                } else {
                    s << " ×";
                    for (size_t k = 0; k < l.scale_factor.size(); ++k)
                        s << (k ? "×" : "") << l.scale_factor[k];
                }
                s << " " << resizeModeName(l.mode);
            } else if constexpr (std::is_same_v<T, LayerNorm>) {
                s << " [";
                for (size_t k = 0; k < l.normalized_shape.size(); ++k)
                    s << (k ? ", " : "") << l.normalized_shape[k];
                s << "]";
            } else if constexpr (std::is_same_v<T, GroupNorm>) {
                s << " g" << l.num_groups;
            } else if constexpr (std::is_same_v<T, Dropout>) {
                s << " p" << l.p;
            } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                s << " g" << l.groups;
            } else if constexpr (std::is_same_v<T, Slice>) {
                s << " dim " << l.dim << " [" << l.start << ", " << l.end << ")";
            } else if constexpr (std::is_same_v<T, Flatten>) {
                if (l.start_dim != 1 || l.end_dim != -1)
                    s << " " << l.start_dim << ".." << l.end_dim;
            } else if constexpr (std::is_same_v<T, Concat>) {
                if (l.dim != 1)
                    s << " dim " << l.dim;
            } else if constexpr (std::is_same_v<T, Softmax> || std::is_same_v<T, LogSoftmax>) {
                if (l.dim != 1)
                    s << " dim " << l.dim;
            } else if constexpr (std::is_same_v<T, Reduce>) {
                s << " " << reduceOpName(l.op);
                if (!l.dim.empty()) {
                    s << " [";
                    for (size_t k = 0; k < l.dim.size(); ++k)
                        s << (k ? ", " : "") << l.dim[k];
                    s << "]";
                }
                if (l.keepdim)
                    s << " keepdim";
            } else if constexpr (std::is_same_v<T, Reshape> || std::is_same_v<T, Transpose>) {
                const std::vector<int64_t>& v = [&]() -> const std::vector<int64_t>& {
                    if constexpr (std::is_same_v<T, Reshape>)
                        return l.shape;
                    else
                        return l.dims;
                }();
                s << " [";
                for (size_t k = 0; k < v.size(); ++k)
                    s << (k ? ", " : "") << v[k];
                s << "]";
            }
        },
        spec);
    return s.str();
}

std::vector<int64_t> wrappedDims(const Transpose& spec, int rank)
{
    std::vector<int64_t> out;
    for (const int64_t d : spec.dims) {
        if (d < -rank || d >= rank)
            throw InputError(
                "transpose: axis " + std::to_string(d) + " is out of range for " + std::to_string(rank) + " dims");
        out.push_back(d < 0 ? d + rank : d);
    }
    return out;
}

int64_t wrappedDim(const Concat& spec, int rank)
{
    if (spec.dim < -rank || spec.dim >= rank)
        throw InputError(
            "concat: dim " + std::to_string(spec.dim) + " is out of range for " + std::to_string(rank) + " dims");
    return spec.dim < 0 ? spec.dim + rank : spec.dim;
}

bool hasParameters(const LayerSpec& spec) { return (layerKind(spec).needs & (kNeedsWeights | kNeedsStatistics)) != 0; }

bool isConvolution(const LayerSpec& spec) { return layerKind(spec).family == KindFamily::Convolution; }

bool isActivation(const LayerSpec& spec)
{
    return layerKind(spec).family == KindFamily::Activation && !std::holds_alternative<Softmax>(spec)
        && !std::holds_alternative<LogSoftmax>(spec);
}

} // namespace convscope
