// The network file (docs/ARCHITECTURE.md §4), read. Parsing is strict on purpose: the file is written by hand in
// lectures, and a typo such as "strid" that silently fell back to a default would show a teacher the wrong network.
// Every error names the file, the layer (index and name, or its type when it has no name) and the key.
// The field readers live in network_json_fields.cpp, the writer in network_json_write.cpp.
#include "compute/network_json.h"

#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/image_input.h"
#include "compute/layer_kinds.h"
#include "compute/network_json_internal.h"
#include "compute/normalization.h"
#include "compute/onnx_model.h"
#include "compute/reduce.h"
#include "compute/resize.h"
#include "compute/voxel_samples.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace convscope {

using namespace network_json;

namespace {
    // An axis as PyTorch takes it: -6 to 5 (negative counts from the end; shape inference checks the input's rank).
    int64_t readDim(const Json& v, const std::string& key, const Context& ctx)
    {
        if (!isInteger(v) || v.get<int64_t>() < -Shape::kMaxRank || v.get<int64_t>() >= Shape::kMaxRank)
            ctx.fail("\"" + key + "\" must be an axis from -6 to 5, got " + shown(v));
        return v.get<int64_t>();
    }

    std::vector<std::string> keysOf(const std::string& type)
    {
        std::vector<std::string> keys = { "type", "name", "inputs" };
        if (const LayerKindInfo* kind = findLayerKind(type))
            for (const char* key : kind->keys)
                if (key)
                    keys.push_back(key);
        return keys;
    }

    std::vector<std::string> readInputs(const Json& v, const Context& ctx)
    {
        const auto bad = [](const Json& e) { return !e.is_string() || e.get<std::string>().empty(); };
        if (!v.is_array() || v.empty() || std::any_of(v.begin(), v.end(), bad))
            ctx.fail("\"inputs\" must be a list of layer names such as [\"conv1\", \"bn2\"] (\"input\" is the "
                     "network's input), got "
                + shown(v));
        std::vector<std::string> names;
        for (const auto& e : v)
            names.push_back(e.get<std::string>());
        return names;
    }

    Layer readLayer(const Json& j, size_t index, const std::string& what)
    {
        const std::string indexText = "layer " + std::to_string(index);
        Context ctx { what + ": " + indexText };
        if (!j.is_object())
            ctx.fail("must be an object such as {\"type\": \"relu\"}, got " + shown(j));
        if (!j.contains("type"))
            ctx.fail("\"type\" is missing (conv2d, relu, maxpool2d, linear, ...)");
        const std::string type = readString(j["type"], "type", ctx);
        Layer layer;
        try {
            layer.spec = makeLayerSpec(type);
        } catch (const InputError& e) {
            ctx.fail(e.what());
        }
        if (j.contains("name"))
            layer.name = readString(j["name"], "name", ctx);
        ctx.where = what + ": " + indexText + " (" + (layer.name.empty() ? type : layer.name) + ")";
        checkKeys(j, keysOf(type), ctx, type);
        if (j.contains("inputs"))
            layer.inputs = readInputs(j["inputs"], ctx);

        const auto has = [&](const char* key) { return j.contains(key); };
        const auto require = [&](const char* key) -> const Json& {
            if (!j.contains(key))
                ctx.fail("\"" + std::string(key) + "\" is missing (PyTorch's " + type + " requires it too)");
            return j[key];
        };
        std::visit(
            [&](auto& l) {
                using T = std::decay_t<decltype(l)>;
                if constexpr (
                    std::is_same_v<T,
                        Conv2d> || std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, Conv3d> || std::is_same_v<T, ConvTranspose3d>) {
                    l.out_channels = readInt(require("out_channels"), "out_channels", 1, ctx);
                    readInto(l.kernel_size, require("kernel_size"), "kernel_size", 1, ctx);
                    if (has("stride"))
                        readInto(l.stride, j["stride"], "stride", 1, ctx);
                    if (has("padding"))
                        readInto(l.padding, j["padding"], "padding", ctx);
                    if constexpr (std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, ConvTranspose3d>) {
                        if (has("output_padding"))
                            readInto(l.output_padding, j["output_padding"], "output_padding", 0, ctx);
                    }
                    if (has("dilation"))
                        readInto(l.dilation, j["dilation"], "dilation", 1, ctx);
                    if (has("groups"))
                        l.groups = readInt(j["groups"], "groups", 1, ctx);
                    if (has("bias"))
                        l.bias = readBool(j["bias"], "bias", ctx);
                    if (has("init"))
                        layer.init = readInit(j["init"], type, l.bias, ctx);
                } else if constexpr (
                    std::is_same_v<T,
                        MaxPool2d> || std::is_same_v<T, AvgPool2d> || std::is_same_v<T, MaxPool3d> || std::is_same_v<T, AvgPool3d>) {
                    readInto(l.kernel_size, require("kernel_size"), "kernel_size", 1, ctx);
                    // PyTorch's stride=None means "the kernel size"; null keeps that meaning explicit.
                    if (has("stride") && !j["stride"].is_null())
                        readInto(l.stride.emplace(), j["stride"], "stride", 1, ctx);
                    if (has("padding"))
                        readInto(l.padding, j["padding"], "padding", ctx);
                    if (has("ceil_mode"))
                        l.ceil_mode = readBool(j["ceil_mode"], "ceil_mode", ctx);
                    if constexpr (std::is_same_v<T, MaxPool2d> || std::is_same_v<T, MaxPool3d>) {
                        if (has("dilation"))
                            readInto(l.dilation, j["dilation"], "dilation", 1, ctx);
                    } else {
                        if (has("count_include_pad"))
                            l.count_include_pad = readBool(j["count_include_pad"], "count_include_pad", ctx);
                        if (has("divisor_override") && !j["divisor_override"].is_null())
                            l.divisor_override = readInt(j["divisor_override"], "divisor_override", 1, ctx);
                    }
                } else if constexpr (std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, BatchNorm3d>) {
                    if (has("eps")) {
                        l.eps = readNumber(j["eps"], "eps", ctx);
                        if (!(l.eps > 0))
                            ctx.fail("\"eps\" must be positive, got " + shown(j["eps"]));
                    }
                    if (has("affine"))
                        l.affine = readBool(j["affine"], "affine", ctx);
                    for (const char* key : { "running_mean", "running_var", "weight", "bias" }) {
                        if (!has(key))
                            continue;
                        const std::string k = key;
                        if (!l.affine && (k == "weight" || k == "bias"))
                            ctx.fail("\"" + k + "\" is given but \"affine\" is false (no weight or bias then)");
                        layer.explicitParams[k] = readParamValue(j[key], k, k == "running_var", ctx);
                    }
                    if (has("init"))
                        layer.init = readInit(j["init"], type, false, ctx);
                } else if constexpr (std::is_same_v<T, LeakyReLU>) {
                    if (has("negative_slope"))
                        l.negative_slope = readNumber(j["negative_slope"], "negative_slope", ctx);
                } else if constexpr (std::is_same_v<T, ELU>) {
                    if (has("alpha"))
                        l.alpha = readNumber(j["alpha"], "alpha", ctx);
                } else if constexpr (std::is_same_v<T, Hardtanh>) {
                    if (has("min_val"))
                        l.min_val = readNumber(j["min_val"], "min_val", ctx);
                    if (has("max_val"))
                        l.max_val = readNumber(j["max_val"], "max_val", ctx);
                    if (!(l.min_val < l.max_val))
                        ctx.fail("\"min_val\" must be below \"max_val\", got " + shown(Json(l.min_val)) + " and "
                            + shown(Json(l.max_val)));
                } else if constexpr (std::is_same_v<T, GELU>) {
                    if (has("approximate")) {
                        const std::string a = readString(j["approximate"], "approximate", ctx);
                        if (a != "none" && a != "tanh")
                            ctx.fail("\"approximate\" must be \"none\" or \"tanh\", got " + shown(j["approximate"]));
                        l.tanh_approximation = a == "tanh";
                    }
                } else if constexpr (std::is_same_v<T, Softplus>) {
                    if (has("beta"))
                        l.beta = readNumber(j["beta"], "beta", ctx);
                    if (has("threshold"))
                        l.threshold = readNumber(j["threshold"], "threshold", ctx);
                    if (!(l.beta != 0.0) || !std::isfinite(l.beta))
                        ctx.fail("\"beta\" must be a finite number other than 0, got " + shown(Json(l.beta)));
                } else if constexpr (std::is_same_v<T, Unary>) {
                    const std::string op = readString(require("op"), "op", ctx);
                    bool found = false;
                    for (Unary::Op o : { Unary::Op::Exp, Unary::Op::Log, Unary::Op::Sqrt, Unary::Op::Reciprocal,
                             Unary::Op::Neg, Unary::Op::Abs, Unary::Op::Erf })
                        if (op == unaryOpName(o)) {
                            l.op = o;
                            found = true;
                        }
                    if (!found)
                        ctx.fail(
                            "\"op\" must be one of exp, log, sqrt, reciprocal, neg, abs, erf; got " + shown(j["op"]));
                } else if constexpr (std::is_same_v<T, Binary>) {
                    readBinary(j, l, ctx);
                } else if constexpr (std::is_same_v<T, Gather>) {
                    readGather(j, l, ctx);
                } else if constexpr (std::is_same_v<T, Matmul>) {
                    readMatmul(j, l, ctx);
                } else if constexpr (std::is_same_v<T, PReLU>) {
                    if (has("num_parameters"))
                        l.num_parameters = readInt(j["num_parameters"], "num_parameters", 1, ctx);
                    if (has("init"))
                        layer.init = readInit(j["init"], type, false, ctx);
                } else if constexpr (std::is_same_v<T, Linear>) {
                    l.out_features = readInt(require("out_features"), "out_features", 1, ctx);
                    if (has("bias"))
                        l.bias = readBool(j["bias"], "bias", ctx);
                    if (has("init"))
                        layer.init = readInit(j["init"], type, l.bias, ctx);
                } else if constexpr (isSoftmaxKind<T>) {
                    if (has("dim")) // without it dim 1, as every file before softmax had a dim
                        l.dim = readDim(j["dim"], "dim", ctx);
                } else if constexpr (std::is_same_v<T, Reduce>) {
                    const std::string op = readString(require("op"), "op", ctx);
                    if (!parseReduceOp(op, &l.op))
                        ctx.fail("\"op\" must be one of mean, sum, max, min, l2; got " + shown(j["op"]));
                    if (has("dim")) {
                        if (isInteger(j["dim"]))
                            l.dim = { readDim(j["dim"], "dim", ctx) };
                        else
                            l.dim = readIntList(j["dim"], "dim", -Shape::kMaxRank, 0, size_t(Shape::kMaxRank), ctx);
                        for (size_t a = 0; a < l.dim.size(); ++a) {
                            if (l.dim[a] >= Shape::kMaxRank)
                                ctx.fail("\"dim\" must hold axes from -6 to 5, got " + shown(j["dim"]));
                            for (size_t b = 0; b < a; ++b)
                                if (l.dim[a] == l.dim[b])
                                    ctx.fail("\"dim\" names axis " + std::to_string(l.dim[a])
                                        + " twice: " + shown(j["dim"]));
                        }
                    }
                    if (has("keepdim"))
                        l.keepdim = readBool(j["keepdim"], "keepdim", ctx);
                } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                    l.groups = readInt(require("groups"), "groups", 1, ctx);
                } else if constexpr (std::is_same_v<T, Slice>) {
                    l.dim = readInt(require("dim"), "dim", 0, ctx);
                    l.start = readInt(require("start"), "start", 0, ctx);
                    l.end = readInt(require("end"), "end", 1, ctx);
                    if (l.end <= l.start)
                        ctx.fail(
                            "\"end\" must be above \"start\", got " + shown(j["start"]) + " and " + shown(j["end"]));
                } else if constexpr (std::is_same_v<T, Flatten>) {
                    if (has("start_dim"))
                        l.start_dim = readDim(j["start_dim"], "start_dim", ctx);
                    if (has("end_dim"))
                        l.end_dim = readDim(j["end_dim"], "end_dim", ctx);
                } else if constexpr (std::is_same_v<T, Concat>) {
                    if (has("dim"))
                        l.dim = readDim(j["dim"], "dim", ctx);
                } else if constexpr (std::is_same_v<T, Reshape>) {
                    l.shape = readIntList(require("shape"), "shape", -1, 1, size_t(Shape::kMaxRank), ctx);
                    if (std::count(l.shape.begin(), l.shape.end(), int64_t(-1)) > 1)
                        ctx.fail("\"shape\" may have one -1 (the dim inferred), got " + shown(j["shape"]));
                    if (std::count(l.shape.begin(), l.shape.end(), int64_t(0)) > 0)
                        ctx.fail("\"shape\" must hold positive sizes and at most one -1, got " + shown(j["shape"]));
                } else if constexpr (std::is_same_v<T, Transpose>) {
                    l.dims = readIntList(require("dims"), "dims", -Shape::kMaxRank, 1, size_t(Shape::kMaxRank), ctx);
                    for (const int64_t d : l.dims)
                        if (d >= Shape::kMaxRank)
                            ctx.fail("\"dims\" must hold axes from -6 to 5, got " + shown(j["dims"]));
                } else if constexpr (std::is_same_v<T, Dropout>) {
                    if (has("p")) {
                        l.p = readNumber(j["p"], "p", ctx);
                        if (l.p < 0 || l.p > 1)
                            ctx.fail("\"p\" must be between 0 and 1, got " + shown(j["p"]));
                    }
                } else if constexpr (isNormKind<T>) {
                    readNormalization(j, layer.spec, layer, ctx);
                } else if constexpr (std::is_same_v<T, Resize>) {
                    readResize(j, l, ctx);
                } else if constexpr (std::is_same_v<T, Pad>) {
                    const Json& p = require("padding");
                    const auto ok = [](const Json& e) { return isInteger(e) && e.get<int64_t>() >= 0; };
                    if (ok(p))
                        l.padding.fill(p.get<int64_t>());
                    else if (p.is_array() && p.size() == 4 && std::all_of(p.begin(), p.end(), ok))
                        for (size_t k = 0; k < 4; ++k)
                            l.padding[k] = p[k].get<int64_t>();
                    else
                        ctx.fail("\"padding\" must be a non-negative integer or [top, bottom, left, right], got "
                            + shown(p));
                    if (has("mode")) {
                        const std::string mode = readString(j["mode"], "mode", ctx);
                        if (mode == "constant")
                            l.mode = Pad::Mode::Constant;
                        else if (mode == "reflect")
                            l.mode = Pad::Mode::Reflect;
                        else if (mode == "replicate")
                            l.mode = Pad::Mode::Replicate;
                        else
                            ctx.fail(
                                "\"mode\" must be \"constant\", \"reflect\" or \"replicate\", got " + shown(j["mode"]));
                    }
                    if (has("value")) {
                        if (l.mode != Pad::Mode::Constant)
                            ctx.fail("\"value\" applies only to mode \"constant\"");
                        l.value = readNumber(j["value"], "value", ctx);
                    }
                }
            },
            layer.spec);
        return layer;
    }

    InputSpec readInput(const Json& v, const std::string& what)
    {
        Context ctx { what + ": input" };
        if (!v.is_object())
            ctx.fail("must be an object such as {\"batch\": 1, \"channels\": 1, \"height\": 28, \"width\": 28, "
                     "\"source\": \"sample:digit\"}, got "
                + shown(v));
        InputSpec in;
        in.flat = v.contains("features");
        if (v.contains("shape")) { // any rank: [2, 197, 768]
            checkKeys(v, { "shape", "source" }, ctx, "an input given by its \"shape\" (no batch, channels, ...)");
            in = InputSpec::ofDims(readIntList(v["shape"], "shape", 1, 1, size_t(Shape::kMaxRank), ctx), "random");
            try {
                (void)in.shape().numel();
            } catch (const InputError& e) {
                ctx.fail(std::string("\"shape\": ") + e.what());
            }
        } else if (in.flat) {
            checkKeys(v, { "batch", "features", "source" }, ctx,
                "a flat input (\"features\" replaces channels, height, width)");
            in.channels = readInt(v["features"], "features", 1, ctx);
            in.height = in.width = 1;
            in.source = "random";
        } else {
            checkKeys(v, { "batch", "channels", "depth", "height", "width", "source" }, ctx, "input");
            for (const char* key : { "channels", "height", "width" })
                if (!v.contains(key))
                    ctx.fail(std::string("\"") + key + "\" is missing (or give \"features\" for a flat input)");
            in.channels = readInt(v["channels"], "channels", 1, ctx);
            in.height = readInt(v["height"], "height", 1, ctx);
            in.width = readInt(v["width"], "width", 1, ctx);
            if (v.contains("depth")) // a volume: [batch, channels, depth, height, width]
                in.depth = readInt(v["depth"], "depth", 1, ctx);
        }
        if (v.contains("batch"))
            in.batch = readInt(v["batch"], "batch", 1, ctx);
        if (v.contains("source"))
            in.source = readString(v["source"], "source", ctx);
        const std::string& s = in.source;
        if (s.rfind("sample:", 0) == 0) {
            auto names = sampleNames();
            for (const std::string& v : voxelSampleNames())
                names.push_back(v);
            if (!contains(names, s.substr(7)))
                ctx.fail("\"source\": unknown sample \"" + s.substr(7) + "\" (known: " + joined(names) + ")");
            if (in.flat || !in.dims.empty())
                ctx.fail("\"source\": a sample picture needs an image input (channels, height, width), not "
                    + in.shape().str());
            if (isVoxelSample(s.substr(7)) && in.depth <= 0)
                ctx.fail("\"source\": " + s + " is a volume; give the input a \"depth\" (32 for the lecture's 32³)");
        } else if (s.rfind("random:", 0) == 0) {
            const std::string seed = s.substr(7);
            if (seed.empty() || seed.size() > 19
                || !std::all_of(seed.begin(), seed.end(), [](char c) { return c >= '0' && c <= '9'; }))
                ctx.fail(
                    "\"source\": \"" + s + "\" must be \"random\" or \"random:SEED\" with a non-negative integer seed");
        }
        return in;
    }

    // nlohmann keeps the last of two equal keys without a word; a file with "stride" twice is a mistake
    // the user should hear about, so duplicates are caught while parsing.
    struct DuplicateKeyGuard {
        struct Frame {
            bool object = false;
            std::set<std::string> keys;
            std::string lastKey;
            size_t elements = 0;
        };
        std::vector<Frame> frames;
        std::string what;

        std::string where() const
        {
            if (frames.size() >= 3 && frames[0].lastKey == "layers" && !frames[1].object)
                return "layer " + std::to_string(frames[1].elements - 1);
            if (frames.size() >= 2)
                return "\"" + frames[0].lastKey + "\"";
            return "the top level";
        }

        bool operator()(int, nlohmann::detail::parse_event_t event, Json& parsed)
        {
            using E = nlohmann::detail::parse_event_t;
            switch (event) {
            case E::object_start:
            case E::array_start:
                if (!frames.empty() && !frames.back().object)
                    ++frames.back().elements;
                frames.push_back({ event == E::object_start, {}, {}, 0 });
                break;
            case E::object_end:
            case E::array_end:
                frames.pop_back();
                break;
            case E::key: {
                const std::string key = parsed.get<std::string>();
                if (!frames.back().keys.insert(key).second)
                    throw InputError(what + ": duplicate key \"" + key + "\" in " + where());
                frames.back().lastKey = key;
                break;
            }
            case E::value:
                break;
            }
            return true;
        }
    };

} // namespace

std::string describeNonNetworkFile(const std::string& bytes)
{
    auto startsWith = [&](std::string_view magic) { return bytes.compare(0, magic.size(), magic) == 0; };
    if (startsWith("\x89PNG\r\n\x1a\n"))
        return "a PNG image (use it as the input: \"source\": \"FILE.png\", or --input FILE.png)";
    if (startsWith("\xff\xd8\xff"))
        return "a JPEG image (use it as the input: \"source\": \"FILE.jpg\", or --input FILE.jpg)";
    if (startsWith("BM") && bytes.size() > 14)
        return "a BMP image (use it as the input, not as the network)";
    if (startsWith("\x93NUMPY"))
        return "a NumPy .npy array (use it as the input or as a layer's weights, not as the network)";
    if (startsWith("%PDF"))
        return "a PDF document";
    if (startsWith("PK\x03\x04"))
        return "a zip archive (a PyTorch .pt/.pth checkpoint is one: export the model to ONNX instead)";
    if (startsWith("\x80\x02") || startsWith("\x80\x03") || startsWith("\x80\x04") || startsWith("\x80\x05"))
        return "a Python pickle (a PyTorch checkpoint?): export the model to ONNX instead";
    // An ONNX model is a protobuf ModelProto: it opens with field 1 (ir_version, varint: tag 0x08) and soon names
    // its producer ("pytorch", "tf2onnx", ...) or opset domain.
    if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x08
        && (bytes.find("pytorch") != std::string::npos || bytes.find("onnx") != std::string::npos
            || bytes.find("ai.onnx") != std::string::npos))
        return "an ONNX model (protobuf)";
    // Text formats start with printable ASCII or UTF-8; control bytes early on mean a binary file.
    const size_t probe = std::min<size_t>(bytes.size(), 512);
    size_t control = 0;
    for (size_t i = 0; i < probe; ++i) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        if (c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f'))
            ++control;
    }
    if (control > 0)
        return "a binary file";
    return {};
}

Network parseNetwork(const std::string& json, const std::string& what, const std::filesystem::path& baseDir)
{
    if (const std::string kind = describeNonNetworkFile(json); !kind.empty())
        throw InputError(what + ": not a ConvScope network file: it looks like " + kind);
    Json root;
    try {
        root = Json::parse(json, DuplicateKeyGuard { {}, what });
    } catch (const Json::exception& e) {
        // parse_error for bad syntax, out_of_range for a number beyond double (found by the fuzzer:
        // "4444444E44444444444482"). Drop nlohmann's "[json.exception.parse_error.101] " tag; keep its line and column.
        std::string message = e.what();
        if (const size_t close = message.find("] ");
            message.rfind("[json.exception", 0) == 0 && close != std::string::npos)
            message = message.substr(close + 2);
        throw InputError(what + ": malformed JSON: " + message);
    }
    Context ctx { what };
    if (!root.is_object())
        ctx.fail("a network file must be a JSON object with \"format\": \"convscope-network\"");
    checkKeys(
        root, { "format", "version", "name", "description", "labels", "input", "layers" }, ctx, "the network file");
    if (!root.contains("format") || root["format"] != kFormat)
        ctx.fail("\"format\" must be \"convscope-network\""
            + (root.contains("format") ? ", got " + shown(root["format"]) : std::string(" (the key is missing)")));
    if (root.contains("version")) {
        const Json& v = root["version"];
        if (!isInteger(v) || v.get<int64_t>() < 1)
            ctx.fail("\"version\" must be a positive integer, got " + shown(v));
        if (v.get<int64_t>() > kVersion)
            ctx.fail("version " + std::to_string(v.get<int64_t>())
                + " was written by a newer ConvScope (this one reads " + std::to_string(kVersion) + ")");
    }

    Network net;
    net.baseDir = baseDir;
    if (root.contains("name")) {
        if (!root["name"].is_string())
            ctx.fail("\"name\" must be a string, got " + shown(root["name"]));
        net.name = root["name"].get<std::string>();
    }
    if (root.contains("description")) {
        if (!root["description"].is_string())
            ctx.fail("\"description\" must be a string, got " + shown(root["description"]));
        net.description = root["description"].get<std::string>();
    }
    if (root.contains("labels")) {
        const Json& labels = root["labels"];
        if (!labels.is_array())
            ctx.fail("\"labels\" must be a list of class names, got " + shown(labels));
        for (size_t i = 0; i < labels.size(); ++i) {
            if (!labels[i].is_string())
                ctx.fail("\"labels\"[" + std::to_string(i) + "] must be a string, got " + shown(labels[i]));
            net.labels.push_back(labels[i].get<std::string>());
        }
    }
    if (!root.contains("input"))
        ctx.fail("\"input\" is missing");
    net.input = readInput(root["input"], what);
    // A file without "layers" is more likely a different JSON document than a network meant to be empty; an
    // explicit empty list is the way to say that.
    if (!root.contains("layers"))
        ctx.fail("\"layers\" is missing (write \"layers\": [] for a network with no layers yet)");
    const Json& layers = root["layers"];
    if (!layers.is_array())
        ctx.fail("\"layers\" must be a list of layer objects, got " + shown(layers));
    for (size_t i = 0; i < layers.size(); ++i)
        net.layers.push_back(readLayer(layers[i], i, what));
    for (Layer& layer : net.layers) // binary's constant from an .npy file, beside the network file
        if (auto* b = std::get_if<Binary>(&layer.spec); b && !b->constant_file.empty())
            readBinaryConstant(*b, baseDir, Context { what + ": layer " + layer.name });

    // Names must be unique: reports, traces and the window refer to layers by name.
    for (size_t i = 0; i < net.layers.size(); ++i)
        for (size_t k = 0; k < i; ++k)
            if (!net.layers[i].name.empty() && net.layers[i].name == net.layers[k].name)
                throw InputError(what + ": layer " + std::to_string(i) + " (" + net.layers[i].name + "): name \""
                    + net.layers[i].name + "\" is already used by layer " + std::to_string(k));
    // Unnamed layers get default names after every explicit name is known, so "conv1" is never given to one
    // layer when a later layer is explicitly called "conv1".
    for (auto& layer : net.layers)
        if (layer.name.empty())
            layer.name = defaultLayerName(net, layer.spec);
    for (size_t i = 0; i < net.layers.size(); ++i)
        if (net.layers[i].name == kNetworkInputName)
            throw InputError(what + ": layer " + std::to_string(i) + ": the name \"input\" is the network's input in "
                + "\"inputs\"; give the layer another name");
    try {
        resolveInputs(net);
    } catch (const InputError& e) {
        throw InputError(what + ": " + e.what());
    }
    return net;
}

Network loadNetwork(const std::filesystem::path& path)
{
    const std::string what = path.filename().empty() ? path.string() : path.filename().string();
    const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    // An ONNX model opens directly (compute/onnx_model.h).
    if (isOnnxFile(path))
        return importOnnxModel(path);
    return parseNetwork(readFile(path, path.string()), what, dir);
}

} // namespace convscope
