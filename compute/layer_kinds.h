// The one table of layer-kind facts: for every LayerSpec alternative its file type name, its menu label, the
// prefix of its default layer names, its family, how many inputs it reads, what it needs (weights, statistics, an
// image-shaped input) and the keys its file entry takes. Everything that used to be a table kept in the variant's
// order by hand (type names, name prefixes, file keys) reads this one, and the static_assert below refuses to
// compile when an alternative is added to LayerSpec without its row, or when the rows are out of order.
//
// Dispatches on the kind (backends, shape inference) stay std::visit chains that name every kind and end in
// `static_assert(dependent_false<T>)`, so a new kind that a backend forgot is a compile error, not a silent ReLU.
#pragma once

#include "compute/layer_spec.h"

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <variant>

namespace convscope {

// For the last branch of an `if constexpr` chain over the kinds: static_assert(dependent_false<T>, "...").
template <typename> inline constexpr bool dependent_false = false;

enum class KindFamily {
    Convolution,
    Pooling,
    Normalization,
    Activation,
    Reshape, // the layout of the elements: flatten and reshape (views), transpose
    FullyConnected,
    Merge,
    Padding, // pad, and resize (spatial re-sampling)
    Copy, // data moved, not computed: channel_shuffle, slice
    NoOp
};

// What a kind needs besides its inputs (bit flags of LayerKindInfo::needs).
enum KindNeeds : unsigned {
    kNeedsNothing = 0,
    kNeedsWeights = 1, // a weight tensor and an optional bias (init rule or .npy files)
    kNeedsStatistics = 2, // batch norm's running_mean / running_var / weight / bias
    kNeedsImage = 4, // an [N, C, H, W] input, not a flat [N, F] one
    kNeedsVolume = 8, // an [N, C, D, H, W] input (the 3-D kinds)
};

inline constexpr int kUnboundedInputs = 1 << 20;

struct LayerKindInfo {
    size_t index; // the LayerSpec alternative this row describes (checked below)
    const char* type; // the file's "type" and the menu entry: "conv2d"
    const char* label; // the menu's name, PyTorch's class where there is one: "Conv2d", "Concat (channels)"
    const char* prefix; // default layer names: "conv" → conv1, conv2, ...
    KindFamily family;
    int minInputs, maxInputs; // arity; a layer without "inputs" reads the layer above (one input)
    unsigned needs; // KindNeeds flags
    std::array<const char*, 9> keys; // file keys besides "type", "name" and "inputs", in the order they are written
};

namespace detail {
    template <typename T, typename... Ts> constexpr size_t indexIn(const std::variant<Ts...>*)
    {
        constexpr bool match[] = { std::is_same_v<T, Ts>... };
        for (size_t i = 0; i < sizeof...(Ts); ++i)
            if (match[i])
                return i;
        return sizeof...(Ts);
    }
} // namespace detail

// The LayerSpec alternative index of kind T.
template <typename T> inline constexpr size_t kindIndex = detail::indexIn<T>(static_cast<const LayerSpec*>(nullptr));

inline constexpr int kAny = kUnboundedInputs;
inline constexpr unsigned kWeightsImage = kNeedsWeights | kNeedsImage;
inline constexpr unsigned kWeightsVolume = kNeedsWeights | kNeedsVolume;

// clang-format off
inline constexpr std::array<LayerKindInfo, std::variant_size_v<LayerSpec>> kLayerKinds = { {
    { kindIndex<Conv2d>, "conv2d", "Conv2d", "conv", KindFamily::Convolution, 1, 1, kWeightsImage,
        { "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias", "init" } },
    { kindIndex<ConvTranspose2d>, "conv_transpose2d", "ConvTranspose2d", "convt", KindFamily::Convolution, 1, 1,
        kWeightsImage, { "out_channels", "kernel_size", "stride", "padding", "output_padding", "dilation", "groups",
        "bias", "init" } },
    { kindIndex<MaxPool2d>, "maxpool2d", "MaxPool2d", "maxpool", KindFamily::Pooling, 1, 1, kNeedsImage,
        { "kernel_size", "stride", "padding", "dilation", "ceil_mode" } },
    { kindIndex<AvgPool2d>, "avgpool2d", "AvgPool2d", "avgpool", KindFamily::Pooling, 1, 1, kNeedsImage,
        { "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override" } },
    { kindIndex<GlobalAvgPool2d>, "global_avgpool2d", "Global AvgPool2d", "gap", KindFamily::Pooling, 1, 1,
        kNeedsImage, {} },
    { kindIndex<BatchNorm2d>, "batchnorm2d", "BatchNorm2d", "bn", KindFamily::Normalization, 1, 1,
        kNeedsStatistics | kNeedsImage, { "eps", "affine", "running_mean", "running_var", "weight", "bias", "init" } },
    { kindIndex<ReLU>, "relu", "ReLU", "relu", KindFamily::Activation, 1, 1, kNeedsNothing, {} },
    { kindIndex<LeakyReLU>, "leaky_relu", "LeakyReLU", "lrelu", KindFamily::Activation, 1, 1, kNeedsNothing,
        { "negative_slope" } },
    { kindIndex<Sigmoid>, "sigmoid", "Sigmoid", "sigmoid", KindFamily::Activation, 1, 1, kNeedsNothing, {} },
    { kindIndex<Tanh>, "tanh", "Tanh", "tanh", KindFamily::Activation, 1, 1, kNeedsNothing, {} },
    { kindIndex<ELU>, "elu", "ELU", "elu", KindFamily::Activation, 1, 1, kNeedsNothing, { "alpha" } },
    { kindIndex<ReLU6>, "relu6", "ReLU6", "relu6_", KindFamily::Activation, 1, 1, kNeedsNothing, {} },
    { kindIndex<Hardswish>, "hardswish", "Hardswish", "hswish", KindFamily::Activation, 1, 1, kNeedsNothing, {} },
    { kindIndex<Hardsigmoid>, "hardsigmoid", "Hardsigmoid", "hsigmoid", KindFamily::Activation, 1, 1,
        kNeedsNothing, {} },
    { kindIndex<SiLU>, "silu", "SiLU", "silu", KindFamily::Activation, 1, 1, kNeedsNothing, {} },
    { kindIndex<Hardtanh>, "hardtanh", "Hardtanh", "hardtanh", KindFamily::Activation, 1, 1, kNeedsNothing,
        { "min_val", "max_val" } },
    { kindIndex<PReLU>, "prelu", "PReLU", "prelu", KindFamily::Activation, 1, 1, kNeedsWeights,
        { "num_parameters", "init" } },
    { kindIndex<GELU>, "gelu", "GELU", "gelu", KindFamily::Activation, 1, 1, kNeedsNothing, { "approximate" } },
    { kindIndex<Softplus>, "softplus", "Softplus", "softplus", KindFamily::Activation, 1, 1, kNeedsNothing,
        { "beta", "threshold" } },
    { kindIndex<Mish>, "mish", "Mish", "mish", KindFamily::Activation, 1, 1, kNeedsNothing, {} },
    { kindIndex<Unary>, "unary", "Unary (exp, log, …)", "unary", KindFamily::Activation, 1, 1, kNeedsNothing,
        { "op" } },
    { kindIndex<Binary>, "binary", "Binary (x op y, broadcast)", "binary", KindFamily::Merge, 1, 2, kNeedsNothing,
        { "op", "constant", "constant_shape", "constant_first" } },
        { kindIndex<Flatten>, "flatten", "Flatten", "flatten", KindFamily::Reshape, 1, 1, kNeedsNothing,
        { "start_dim", "end_dim" } },
    { kindIndex<Linear>, "linear", "Linear", "fc", KindFamily::FullyConnected, 1, 1, kNeedsWeights,
        { "out_features", "bias", "init" } },
    { kindIndex<Softmax>, "softmax", "Softmax", "softmax", KindFamily::Activation, 1, 1, kNeedsNothing,
        { "dim" } },
    { kindIndex<LogSoftmax>, "log_softmax", "LogSoftmax", "logsoftmax", KindFamily::Activation, 1, 1, kNeedsNothing,
        { "dim" } },
    { kindIndex<Add>, "add", "Add (x + y)", "add", KindFamily::Merge, 2, kAny, kNeedsNothing, {} },
    { kindIndex<Mul>, "mul", "Mul (x · gate)", "mul", KindFamily::Merge, 2, 2, kNeedsNothing, {} },
    { kindIndex<Concat>, "concat", "Concat (channels)", "cat", KindFamily::Merge, 1, kAny, kNeedsNothing,
        { "dim" } },
    { kindIndex<Pad>, "pad", "Pad", "pad", KindFamily::Padding, 1, 1, kNeedsImage, { "padding", "mode", "value" } },
    { kindIndex<Resize>, "resize", "Resize (upsample)", "resize", KindFamily::Padding, 1, 1, kNeedsNothing,
        { "size", "scale_factor", "mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
        "exclude_outside" } },
    { kindIndex<Identity>, "identity", "Identity", "identity", KindFamily::NoOp, 1, 1, kNeedsNothing, {} },
    { kindIndex<Dropout>, "dropout", "Dropout", "dropout", KindFamily::NoOp, 1, 1, kNeedsNothing, { "p" } },
    { kindIndex<ChannelShuffle>, "channel_shuffle", "ChannelShuffle", "shuffle", KindFamily::Copy, 1, 1,
        kNeedsNothing, { "groups" } },
    { kindIndex<Slice>, "slice", "Slice (narrow)", "slice", KindFamily::Copy, 1, 1, kNeedsNothing,
        { "dim", "start", "end" } },
    { kindIndex<Reshape>, "reshape", "Reshape (view)", "reshape", KindFamily::Reshape, 1, 1, kNeedsNothing,
        { "shape" } },
    { kindIndex<Transpose>, "transpose", "Transpose (permute)", "transpose", KindFamily::Reshape, 1, 1,
        kNeedsNothing, { "dims" } },
    { kindIndex<Reduce>, "reduce", "Reduce (mean, sum, max, …)", "reduce", KindFamily::Pooling, 1, 1, kNeedsNothing,
        { "op", "dim", "keepdim" } },
    { kindIndex<Conv3d>, "conv3d", "Conv3d", "conv3d_", KindFamily::Convolution, 1, 1, kWeightsVolume,
        { "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias", "init" } },
    { kindIndex<ConvTranspose3d>, "conv_transpose3d", "ConvTranspose3d", "convt3d_", KindFamily::Convolution, 1, 1,
        kWeightsVolume, { "out_channels", "kernel_size", "stride", "padding", "output_padding", "dilation", "groups",
        "bias", "init" } },
    { kindIndex<MaxPool3d>, "maxpool3d", "MaxPool3d", "maxpool3d_", KindFamily::Pooling, 1, 1, kNeedsVolume,
        { "kernel_size", "stride", "padding", "dilation", "ceil_mode" } },
    { kindIndex<AvgPool3d>, "avgpool3d", "AvgPool3d", "avgpool3d_", KindFamily::Pooling, 1, 1, kNeedsVolume,
        { "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override" } },
    { kindIndex<GlobalAvgPool3d>, "global_avgpool3d", "Global AvgPool3d", "gap3d_", KindFamily::Pooling, 1, 1,
        kNeedsVolume, {} },
    { kindIndex<BatchNorm3d>, "batchnorm3d", "BatchNorm3d", "bn3d_", KindFamily::Normalization, 1, 1,
        kNeedsStatistics | kNeedsVolume, { "eps", "affine", "running_mean", "running_var", "weight", "bias", "init" } },
    { kindIndex<LayerNorm>, "layer_norm", "LayerNorm", "ln", KindFamily::Normalization, 1, 1, kNeedsWeights,
        { "normalized_shape", "eps", "elementwise_affine", "bias", "init" } },
    { kindIndex<GroupNorm>, "group_norm", "GroupNorm", "gn", KindFamily::Normalization, 1, 1, kNeedsWeights,
        { "num_groups", "eps", "affine", "init" } },
    { kindIndex<InstanceNorm>, "instance_norm", "InstanceNorm", "inorm", KindFamily::Normalization, 1, 1,
        kNeedsWeights, { "eps", "affine", "init" } },
    { kindIndex<Matmul>, "matmul", "MatMul (batched a · b)", "matmul", KindFamily::Merge, 1, 2, kNeedsNothing,
        { "constant", "constant_shape", "constant_first" } },
    { kindIndex<Gather>, "gather", "Gather (index_select)", "gather", KindFamily::Copy, 1, 1, kNeedsNothing,
        { "axis", "indices", "indices_shape" } },
} };
// clang-format on

constexpr bool layerKindsInVariantOrder()
{
    for (size_t i = 0; i < kLayerKinds.size(); ++i)
        if (kLayerKinds[i].index != i)
            return false;
    return true;
}
static_assert(layerKindsInVariantOrder(),
    "kLayerKinds must have one row per LayerSpec alternative, in the variant's order (a new kind needs its row)");

inline const LayerKindInfo& layerKind(const LayerSpec& spec) { return kLayerKinds[spec.index()]; }
// The 3-D kinds (conv3d, conv_transpose3d, maxpool3d, avgpool3d, global_avgpool3d, batchnorm3d): they take volumes
// only. A backend without volume kernels refuses them all with one branch of its dispatch.
template <typename T> inline constexpr bool isVolumeKind = (kLayerKinds[kindIndex<T>].needs & kNeedsVolume) != 0;
inline bool isVolumeLayer(const LayerSpec& spec) { return (layerKind(spec).needs & kNeedsVolume) != 0; }
template <typename T> constexpr const LayerKindInfo& layerKindOf() { return kLayerKinds[kindIndex<T>]; }
// The row of a file type name, or nullptr.
const LayerKindInfo* findLayerKind(std::string_view type);

} // namespace convscope
