// The network file (docs/ARCHITECTURE.md §4), written: every field explicitly, in PyTorch's constructor order, so a
// file shows the whole layer and a round trip is lossless; apart from the reader, which is most of network_json.cpp.
#include "compute/binary.h"
#include "compute/network_json.h"
#include "compute/reduce.h"

#include "compute/atomic_file.h"
#include "compute/network_json_internal.h"
#include "compute/normalization.h"

namespace convscope {

using namespace network_json;

namespace {

    // [h, w] or [d, h, w].
    template <size_t N> Json sizeJson(const std::array<int64_t, N>& a) { return Json(a); }

    Json paddingJson(const Padding2d& p)
    {
        switch (p.mode) {
        case Padding2d::Mode::Same:
            return "same";
        case Padding2d::Mode::Valid:
            return "valid";
        case Padding2d::Mode::Explicit:
            break;
        }
        return Json::array({ p.top, p.bottom, p.left, p.right });
    }

    Json paddingJson(const Padding3d& p)
    {
        switch (p.mode) {
        case Padding3d::Mode::Same:
            return "same";
        case Padding3d::Mode::Valid:
            return "valid";
        case Padding3d::Mode::Explicit:
            break;
        }
        return Json::array({ p.front, p.back, p.top, p.bottom, p.left, p.right });
    }

    Json initJson(const InitSpec& init)
    {
        // Only the fields that mean something for the kind are written, so a saved file always loads again
        // under the strict reader; "seed" goes with every seeded kind.
        Json o;
        o["kind"] = init.kind;
        if (contains(kSeededKinds, init.kind))
            o["seed"] = init.seed;
        if (init.kind == "uniform") {
            if (init.low)
                o["low"] = *init.low;
            if (init.high)
                o["high"] = *init.high;
        }
        if (init.kind == "constant")
            o["value"] = init.value.value_or(0.0);
        if (init.kind == "file") {
            o["weight"] = init.weight_file;
            if (!init.bias_file.empty())
                o["bias"] = init.bias_file;
        }
        return o;
    }

    Json paramJson(const ParamValue& p)
    {
        switch (p.kind) {
        case ParamValue::Kind::List:
            return p.list;
        case ParamValue::Kind::File:
            return p.file;
        case ParamValue::Kind::Scalar:
            break;
        }
        return p.scalar;
    }

    Json layerJson(const Layer& layer)
    {
        // A fused residual conv (compute/fusion.h) is the +fused pass's internal form of conv + add: written as a
        // conv2d it would read two inputs, which no file's conv2d does, and the add it stands for would be lost.
        if (const auto* c = std::get_if<Conv2d>(&layer.spec); c && c->fused_residual)
            throw Error("layer \"" + layer.name + "\": a conv2d with a fused residual add is the +fused pass's "
                + "internal form and is never written to a network file (write the unfused network)");
        Json o;
        o["type"] = layerTypeName(layer.spec);
        o["name"] = layer.name;
        if (!layer.inputs.empty())
            o["inputs"] = layer.inputs;
        std::visit(
            [&](const auto& l) {
                using T = std::decay_t<decltype(l)>;
                if constexpr (
                    std::is_same_v<T,
                        Conv2d> || std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, Conv3d> || std::is_same_v<T, ConvTranspose3d>) {
                    o["out_channels"] = l.out_channels;
                    o["kernel_size"] = sizeJson(l.kernel_size);
                    o["stride"] = sizeJson(l.stride);
                    o["padding"] = paddingJson(l.padding);
                    if constexpr (std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, ConvTranspose3d>)
                        o["output_padding"] = sizeJson(l.output_padding);
                    o["dilation"] = sizeJson(l.dilation);
                    o["groups"] = l.groups;
                    o["bias"] = l.bias;
                    o["init"] = initJson(layer.init);
                } else if constexpr (
                    std::is_same_v<T,
                        MaxPool2d> || std::is_same_v<T, AvgPool2d> || std::is_same_v<T, MaxPool3d> || std::is_same_v<T, AvgPool3d>) {
                    o["kernel_size"] = sizeJson(l.kernel_size);
                    o["stride"] = l.stride ? sizeJson(*l.stride) : Json(nullptr);
                    o["padding"] = paddingJson(l.padding);
                    if constexpr (std::is_same_v<T, MaxPool2d> || std::is_same_v<T, MaxPool3d>) {
                        o["dilation"] = sizeJson(l.dilation);
                        o["ceil_mode"] = l.ceil_mode;
                    } else {
                        o["ceil_mode"] = l.ceil_mode;
                        o["count_include_pad"] = l.count_include_pad;
                        o["divisor_override"] = l.divisor_override ? Json(*l.divisor_override) : Json(nullptr);
                    }
                } else if constexpr (std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, BatchNorm3d>) {
                    o["eps"] = l.eps;
                    o["affine"] = l.affine;
                    for (const char* key : { "running_mean", "running_var", "weight", "bias" }) {
                        auto it = layer.explicitParams.find(key);
                        if (it != layer.explicitParams.end())
                            o[key] = paramJson(it->second);
                    }
                    o["init"] = initJson(layer.init);
                } else if constexpr (std::is_same_v<T, LeakyReLU>) {
                    o["negative_slope"] = l.negative_slope;
                } else if constexpr (std::is_same_v<T, ELU>) {
                    o["alpha"] = l.alpha;
                } else if constexpr (std::is_same_v<T, Hardtanh>) {
                    o["min_val"] = l.min_val;
                    o["max_val"] = l.max_val;
                } else if constexpr (std::is_same_v<T, GELU>) {
                    o["approximate"] = l.tanh_approximation ? "tanh" : "none";
                } else if constexpr (std::is_same_v<T, Softplus>) {
                    o["beta"] = l.beta;
                    o["threshold"] = l.threshold;
                } else if constexpr (std::is_same_v<T, Unary>) {
                    o["op"] = unaryOpName(l.op);
                } else if constexpr (std::is_same_v<T, Gather>) {
                    writeGather(o, l);
                } else if constexpr (std::is_same_v<T, Matmul>) {
                    writeMatmul(o, l);
                } else if constexpr (std::is_same_v<T, Binary>) {
                    o["op"] = binaryOpName(l.op);
                    if (!l.constant_file.empty())
                        o["constant"] = l.constant_file;
                    else if (!l.constant.empty())
                        o["constant"] = l.constant;
                    if (!l.constant.empty()) {
                        o["constant_shape"] = constantDims(l);
                        o["constant_first"] = l.constant_first;
                    }
                } else if constexpr (std::is_same_v<T, PReLU>) {
                    o["num_parameters"] = l.num_parameters;
                    o["init"] = initJson(layer.init);
                } else if constexpr (std::is_same_v<T, Linear>) {
                    o["out_features"] = l.out_features;
                    o["bias"] = l.bias;
                    o["init"] = initJson(layer.init);
                } else if constexpr (isSoftmaxKind<T>) {
                    o["dim"] = l.dim;
                } else if constexpr (std::is_same_v<T, Reduce>) {
                    o["op"] = reduceOpName(l.op);
                    o["dim"] = l.dim;
                    o["keepdim"] = l.keepdim;
                } else if constexpr (std::is_same_v<T, Flatten>) {
                    if (l.start_dim != 1) // the defaults are left out, as files before start_dim had them
                        o["start_dim"] = l.start_dim;
                    if (l.end_dim != -1)
                        o["end_dim"] = l.end_dim;
                } else if constexpr (std::is_same_v<T, Concat>) {
                    if (l.dim != 1)
                        o["dim"] = l.dim;
                } else if constexpr (std::is_same_v<T, Reshape>) {
                    o["shape"] = l.shape;
                } else if constexpr (std::is_same_v<T, Transpose>) {
                    o["dims"] = l.dims;
                } else if constexpr (std::is_same_v<T, Dropout>) {
                    o["p"] = l.p;
                } else if constexpr (std::is_same_v<T, Resize>) {
                    // One value for every spatial axis is written as the file took it, a number (the reader
                    // takes a number or a list of 2 or 3: the fuzz target's round trip found a list of one).
                    if (l.size.size() == 1)
                        o["size"] = l.size[0];
                    else if (!l.size.empty())
                        o["size"] = l.size;
                    if (l.scale_factor.size() == 1)
                        o["scale_factor"] = l.scale_factor[0];
                    else if (!l.scale_factor.empty())
                        o["scale_factor"] = l.scale_factor;
                    o["mode"] = resizeModeName(l.mode);
                    o["coordinate_transformation_mode"] = resizeCoordinatesName(l.coordinate_transformation_mode);
                    if (l.mode == Resize::Mode::Nearest)
                        o["nearest_mode"] = resizeNearestModeName(l.nearest_mode);
                    if (l.mode == Resize::Mode::Cubic) {
                        o["cubic_coeff_a"] = l.cubic_coeff_a;
                        o["exclude_outside"] = l.exclude_outside;
                    }
                } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                    o["groups"] = l.groups;
                } else if constexpr (std::is_same_v<T, Slice>) {
                    o["dim"] = l.dim;
                    o["start"] = l.start;
                    o["end"] = l.end;
                } else if constexpr (isNormKind<T>) {
                    writeNormalization(layer.spec, layer, o, initJson(layer.init));
                } else if constexpr (std::is_same_v<T, Pad>) {
                    o["padding"] = Json::array({ l.padding[0], l.padding[1], l.padding[2], l.padding[3] });
                    o["mode"] = padModeName(l.mode);
                    if (l.mode == Pad::Mode::Constant)
                        o["value"] = l.value;
                }
            },
            layer.spec);
        return o;
    }

    // One line per layer reads like the layer list in the window and diffs well; nlohmann's own pretty
    // printer would spread a conv layer over twenty lines.
    std::string inlineJson(const Json& v)
    {
        if (v.is_object()) {
            std::string s = "{ ";
            bool first = true;
            for (const auto& item : v.items()) {
                s += (first ? "" : ", ") + Json(item.key()).dump() + ": " + inlineJson(item.value());
                first = false;
            }
            return s + (first ? "}" : " }");
        }
        if (v.is_array()) {
            std::string s = "[";
            for (size_t i = 0; i < v.size(); ++i)
                s += (i ? ", " : "") + inlineJson(v[i]);
            return s + "]";
        }
        return v.dump();
    }

} // namespace

std::string serializeNetwork(const Network& net)
{
    Json input;
    if (!net.input.dims.empty()) {
        input["shape"] = net.input.shape().dims();
    } else if (input["batch"] = net.input.batch; net.input.flat) {
        input["features"] = net.input.channels;
    } else {
        input["channels"] = net.input.channels;
        if (net.input.depth > 0)
            input["depth"] = net.input.depth;
        input["height"] = net.input.height;
        input["width"] = net.input.width;
    }
    input["source"] = net.input.source;

    std::string out = "{\n";
    out += "  \"format\": " + Json(kFormat).dump() + ",\n";
    out += "  \"version\": " + std::to_string(kVersion) + ",\n";
    out += "  \"name\": " + Json(net.name).dump() + ",\n";
    if (!net.description.empty())
        out += "  \"description\": " + Json(net.description).dump() + ",\n";
    if (!net.labels.empty())
        out += "  \"labels\": " + Json(net.labels).dump() + ",\n";
    out += "  \"input\": " + inlineJson(input) + ",\n";
    if (net.layers.empty()) {
        out += "  \"layers\": []\n";
    } else {
        out += "  \"layers\": [\n";
        for (size_t i = 0; i < net.layers.size(); ++i)
            out += "    " + inlineJson(layerJson(net.layers[i])) + (i + 1 < net.layers.size() ? ",\n" : "\n");
        out += "  ]\n";
    }
    return out + "}\n";
}

void saveNetwork(const Network& net, const std::filesystem::path& path)
{
    writeFileAtomically(path, serializeNetwork(net));
}

} // namespace convscope
