// The network file's field readers: one JSON value each (integer, [h, w], padding, init, ...), every failure naming
// the key; apart from network_json.cpp so the parser there reads as the file's structure, not its value checks.
#include "compute/network_json_internal.h"

#include "compute/error.h"
#include "compute/resize.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::network_json {

namespace {

    const std::vector<std::string> kClassicKinds
        = { "sobel_x", "sobel_y", "laplacian", "gaussian_blur", "sharpen", "identity", "box_blur" };

    size_t editDistance(const std::string& a, const std::string& b)
    {
        std::vector<size_t> row(b.size() + 1);
        for (size_t j = 0; j <= b.size(); ++j)
            row[j] = j;
        for (size_t i = 1; i <= a.size(); ++i) {
            size_t diag = row[0];
            row[0] = i;
            for (size_t j = 1; j <= b.size(); ++j) {
                const size_t up = row[j];
                row[j] = std::min({ row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1) });
                diag = up;
            }
        }
        return row[b.size()];
    }

} // namespace

bool contains(const std::vector<std::string>& v, const std::string& s)
{
    return std::find(v.begin(), v.end(), s) != v.end();
}

std::string joined(const std::vector<std::string>& items)
{
    std::string s;
    for (const auto& i : items)
        s += (s.empty() ? "" : ", ") + i;
    return s;
}

std::string shown(const Json& v)
{
    std::string s = v.dump();
    if (s.size() > 40)
        s = s.substr(0, 37) + "...";
    return s;
}

void checkKeys(const Json& obj, const std::vector<std::string>& allowed, const Context& ctx, const std::string& owner)
{
    for (const auto& item : obj.items()) {
        if (contains(allowed, item.key()))
            continue;
        std::string hint;
        size_t best = 3; // a closer suggestion than this would be a guess
        for (const auto& a : allowed) {
            const size_t d = editDistance(item.key(), a);
            if (d < best) {
                best = d;
                hint = "; did you mean \"" + a + "\"?";
            }
        }
        ctx.fail("unknown key \"" + item.key() + "\" for " + owner + " (it takes " + joined(allowed) + ")" + hint);
    }
}

bool isInteger(const Json& v)
{
    if (v.is_number_unsigned())
        return v.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max());
    return v.is_number_integer();
}

int64_t readInt(const Json& v, const std::string& key, int64_t minimum, const Context& ctx)
{
    if (!isInteger(v) || v.get<int64_t>() < minimum)
        ctx.fail("\"" + key + "\" must be " + (minimum > 0 ? "a positive integer" : "a non-negative integer") + ", got "
            + shown(v));
    return v.get<int64_t>();
}

std::vector<int64_t> readIntList(
    const Json& v, const std::string& key, int64_t minimum, size_t minCount, size_t maxCount, const Context& ctx)
{
    const std::string count = minCount == maxCount ? std::to_string(minCount)
                                                   : std::to_string(minCount) + " to " + std::to_string(maxCount);
    if (!v.is_array() || v.size() < minCount || v.size() > maxCount)
        ctx.fail("\"" + key + "\" must be a list of " + count + " integers, got " + shown(v));
    std::vector<int64_t> out;
    for (const Json& x : v) {
        if (!isInteger(x) || x.get<int64_t>() < minimum)
            ctx.fail("\"" + key + "\" must hold integers of at least " + std::to_string(minimum) + ", got " + shown(v));
        out.push_back(x.get<int64_t>());
    }
    return out;
}

double readNumber(const Json& v, const std::string& key, const Context& ctx)
{
    if (!v.is_number() || !std::isfinite(v.get<double>()))
        ctx.fail("\"" + key + "\" must be a number, got " + shown(v));
    return v.get<double>();
}

bool readBool(const Json& v, const std::string& key, const Context& ctx)
{
    if (!v.is_boolean())
        ctx.fail("\"" + key + "\" must be true or false, got " + shown(v));
    return v.get<bool>();
}

std::string readString(const Json& v, const std::string& key, const Context& ctx)
{
    if (!v.is_string() || v.get<std::string>().empty())
        ctx.fail("\"" + key + "\" must be a non-empty string, got " + shown(v));
    return v.get<std::string>();
}

namespace {

    Pair readPair(const Json& v, const std::string& key, int64_t minimum, const Context& ctx)
    {
        const auto ok = [&](const Json& e) { return isInteger(e) && e.get<int64_t>() >= minimum; };
        if (ok(v))
            return { v.get<int64_t>(), v.get<int64_t>() };
        if (v.is_array() && v.size() == 2 && ok(v[0]) && ok(v[1]))
            return { v[0].get<int64_t>(), v[1].get<int64_t>() };
        ctx.fail("\"" + key + "\" must be " + (minimum > 0 ? "a positive integer" : "a non-negative integer")
            + " or [h, w], got " + shown(v));
    }

    Padding2d readPadding(const Json& v, const std::string& key, const Context& ctx)
    {
        const auto ok = [](const Json& e) { return isInteger(e) && e.get<int64_t>() >= 0; };
        if (v.is_string() && v.get<std::string>() == "same")
            return { Padding2d::Mode::Same, 0, 0, 0, 0 };
        if (v.is_string() && v.get<std::string>() == "valid")
            return { Padding2d::Mode::Valid, 0, 0, 0, 0 };
        if (ok(v))
            return Padding2d::symmetric(v.get<int64_t>(), v.get<int64_t>());
        if (v.is_array() && std::all_of(v.begin(), v.end(), ok)) {
            if (v.size() == 2)
                return Padding2d::symmetric(v[0].get<int64_t>(), v[1].get<int64_t>());
            if (v.size() == 4)
                return { Padding2d::Mode::Explicit, v[0].get<int64_t>(), v[1].get<int64_t>(), v[2].get<int64_t>(),
                    v[3].get<int64_t>() };
        }
        ctx.fail("\"" + key
            + "\" must be a non-negative integer, [ph, pw], [top, bottom, left, right], \"same\" or \"valid\", got "
            + shown(v));
    }

    Triple readTriple(const Json& v, const std::string& key, int64_t minimum, const Context& ctx)
    {
        const auto ok = [&](const Json& e) { return isInteger(e) && e.get<int64_t>() >= minimum; };
        if (ok(v))
            return { v.get<int64_t>(), v.get<int64_t>(), v.get<int64_t>() };
        if (v.is_array() && v.size() == 3 && ok(v[0]) && ok(v[1]) && ok(v[2]))
            return { v[0].get<int64_t>(), v[1].get<int64_t>(), v[2].get<int64_t>() };
        ctx.fail("\"" + key + "\" must be " + (minimum > 0 ? "a positive integer" : "a non-negative integer")
            + " or [d, h, w], got " + shown(v));
    }

    Padding3d readPadding3d(const Json& v, const std::string& key, const Context& ctx)
    {
        const auto ok = [](const Json& e) { return isInteger(e) && e.get<int64_t>() >= 0; };
        const auto at = [&](size_t i) { return v[i].get<int64_t>(); };
        if (v.is_string() && v.get<std::string>() == "same")
            return { Padding3d::Mode::Same };
        if (v.is_string() && v.get<std::string>() == "valid")
            return { Padding3d::Mode::Valid };
        if (ok(v))
            return Padding3d::symmetric(v.get<int64_t>(), v.get<int64_t>(), v.get<int64_t>());
        if (v.is_array() && std::all_of(v.begin(), v.end(), ok)) {
            if (v.size() == 3)
                return Padding3d::symmetric(at(0), at(1), at(2));
            if (v.size() == 6)
                return { Padding3d::Mode::Explicit, at(0), at(1), at(2), at(3), at(4), at(5) };
        }
        ctx.fail("\"" + key
            + "\" must be a non-negative integer, [pd, ph, pw], [front, back, top, bottom, left, right], \"same\" or "
              "\"valid\", got "
            + shown(v));
    }

} // namespace

void readInto(Pair& out, const Json& v, const std::string& key, int64_t minimum, const Context& ctx)
{
    out = readPair(v, key, minimum, ctx);
}
void readInto(Triple& out, const Json& v, const std::string& key, int64_t minimum, const Context& ctx)
{
    out = readTriple(v, key, minimum, ctx);
}
void readInto(Padding2d& out, const Json& v, const std::string& key, const Context& ctx)
{
    out = readPadding(v, key, ctx);
}
void readInto(Padding3d& out, const Json& v, const std::string& key, const Context& ctx)
{
    out = readPadding3d(v, key, ctx);
}

ParamValue readParamValue(const Json& v, const std::string& key, bool nonNegative, const Context& ctx)
{
    ParamValue p;
    const std::string rule = nonNegative ? "a non-negative number" : "a number";
    const auto bad = [&](const Json& e) { return !e.is_number() || !std::isfinite(e.get<double>()); };
    if (v.is_number() && !bad(v)) {
        p.kind = ParamValue::Kind::Scalar;
        p.scalar = v.get<double>();
        if (nonNegative && p.scalar < 0)
            ctx.fail("\"" + key + "\" must be " + rule + ", got " + shown(v));
    } else if (v.is_array() && !v.empty() && std::none_of(v.begin(), v.end(), bad)) {
        p.kind = ParamValue::Kind::List;
        for (const auto& e : v) {
            if (nonNegative && e.get<double>() < 0)
                ctx.fail("\"" + key + "\" must hold non-negative numbers, got " + shown(e));
            p.list.push_back(e.get<double>());
        }
    } else if (v.is_string() && !v.get<std::string>().empty()) {
        p.kind = ParamValue::Kind::File;
        p.file = v.get<std::string>();
    } else {
        ctx.fail("\"" + key + "\" must be " + rule + ", a list of numbers (one per channel) or an .npy file path, got "
            + shown(v));
    }
    return p;
}

InitSpec readInit(const Json& v, const std::string& type, bool hasBias, const Context& ctx)
{
    if (!v.is_object())
        ctx.fail("\"init\" must be an object such as {\"kind\": \"he_uniform\", \"seed\": 1} or {\"weight\": "
                 "\"w.npy\", \"bias\": \"b.npy\"}, got "
            + shown(v));
    checkKeys(v, { "kind", "seed", "low", "high", "value", "weight", "bias" }, ctx, "\"init\"");
    InitSpec init;
    if (v.contains("kind"))
        init.kind = readString(v["kind"], "init.kind", ctx);
    else if (v.contains("weight") || v.contains("bias"))
        init.kind = "file";

    std::vector<std::string> kinds;
    if (type == "batchnorm2d" || type == "batchnorm3d")
        kinds = { "default", "random" };
    else if (type == "prelu")
        kinds = { "default", "constant", "uniform", "file" }; // default: PyTorch's 0.25 for every slope
    else if (type == "layer_norm" || type == "group_norm" || type == "instance_norm")
        kinds = { "default", "constant", "uniform", "file" }; // default: PyTorch's weight 1, bias 0
    else {
        kinds = { "default", "uniform", "he_uniform", "xavier_uniform", "constant" };
        if (type == "conv2d" || type == "conv_transpose2d")
            kinds.insert(kinds.end(), kClassicKinds.begin(), kClassicKinds.end());
        kinds.push_back("file");
    }
    if (!contains(kinds, init.kind))
        ctx.fail(
            "\"init\": kind \"" + init.kind + "\" does not apply to " + type + " (it takes " + joined(kinds) + ")");

    // Keys that mean nothing for the chosen kind are refused, not ignored: {"kind": "he_uniform", "low": -2}
    // is a misunderstanding worth pointing out.
    const auto onlyFor = [&](const char* key, bool allowed, const std::string& which) {
        if (v.contains(key) && !allowed)
            ctx.fail("\"init\": \"" + std::string(key) + "\" applies only to " + which + ", not to kind \"" + init.kind
                + "\"");
    };
    const bool seeded = contains(kSeededKinds, init.kind);
    onlyFor("seed", seeded, "the seeded kinds (" + joined(kSeededKinds) + ")");
    onlyFor("low", init.kind == "uniform", "kind \"uniform\"");
    onlyFor("high", init.kind == "uniform", "kind \"uniform\"");
    onlyFor("value", init.kind == "constant", "kind \"constant\"");
    onlyFor("weight", init.kind == "file", "kind \"file\"");
    onlyFor("bias", init.kind == "file", "kind \"file\"");

    if (v.contains("seed")) {
        const Json& s = v["seed"];
        if (!s.is_number_unsigned() && !(s.is_number_integer() && s.get<int64_t>() >= 0))
            ctx.fail("\"init\": \"seed\" must be a non-negative integer, got " + shown(s));
        init.seed = s.get<uint64_t>();
    }
    if (v.contains("low"))
        init.low = readNumber(v["low"], "init.low", ctx);
    if (v.contains("high"))
        init.high = readNumber(v["high"], "init.high", ctx);
    if (init.kind == "uniform" && !(init.low.value_or(-1.0) < init.high.value_or(1.0)))
        ctx.fail("\"init\": \"low\" (" + std::to_string(init.low.value_or(-1.0)) + ") must be below \"high\" ("
            + std::to_string(init.high.value_or(1.0)) + ")");
    if (init.kind == "constant") {
        if (!v.contains("value"))
            ctx.fail("\"init\": kind \"constant\" needs a \"value\"");
        init.value = readNumber(v["value"], "init.value", ctx);
    }
    if (init.kind == "file") {
        if (!v.contains("weight"))
            ctx.fail("\"init\": kind \"file\" needs a \"weight\" .npy path");
        init.weight_file = readString(v["weight"], "init.weight", ctx);
        if (v.contains("bias")) {
            if (!hasBias)
                ctx.fail("\"init\": a \"bias\" file is given but the layer has \"bias\": false");
            init.bias_file = readString(v["bias"], "init.bias", ctx);
        }
    }
    return init;
}

void readResize(const Json& j, Resize& l, const Context& ctx)
{
    const auto has = [&](const char* key) { return j.contains(key); };
    if (has("size")) {
        const Json& v = j["size"];
        l.size.clear();
        if (isInteger(v))
            l.size.push_back(readInt(v, "size", 1, ctx));
        else if (v.is_array() && (v.size() == 2 || v.size() == 3))
            for (const Json& e : v)
                l.size.push_back(readInt(e, "size", 1, ctx));
        else
            ctx.fail("\"size\" must be a positive integer or a list of 2 (H, W) or 3 (D, H, W), got " + shown(v));
        if (!has("scale_factor"))
            l.scale_factor.clear();
    }
    if (has("scale_factor")) {
        const Json& v = j["scale_factor"];
        l.scale_factor.clear();
        const auto one = [&](const Json& e) {
            const double s = readNumber(e, "scale_factor", ctx);
            if (!(s > 0) || std::isinf(s))
                ctx.fail("\"scale_factor\" must be positive, got " + shown(e));
            l.scale_factor.push_back(s);
        };
        if (v.is_number())
            one(v);
        else if (v.is_array() && (v.size() == 2 || v.size() == 3))
            for (const Json& e : v)
                one(e);
        else
            ctx.fail(
                "\"scale_factor\" must be a positive number or a list of 2 (H, W) or 3 (D, H, W), got " + shown(v));
    }
    if (has("mode")) {
        const auto m = resizeModeFrom(readString(j["mode"], "mode", ctx));
        if (!m)
            ctx.fail("\"mode\" must be \"nearest\", \"linear\" (\"bilinear\", \"trilinear\") or \"cubic\" "
                     "(\"bicubic\"), got "
                + shown(j["mode"]));
        l.mode = *m;
    }
    if (has("coordinate_transformation_mode")) {
        const auto c = resizeCoordinatesFrom(
            readString(j["coordinate_transformation_mode"], "coordinate_transformation_mode", ctx));
        if (!c)
            ctx.fail("\"coordinate_transformation_mode\" must be \"half_pixel\", \"pytorch_half_pixel\", "
                     "\"align_corners\", \"asymmetric\", \"half_pixel_symmetric\" or \"tf_half_pixel_for_nn\", got "
                + shown(j["coordinate_transformation_mode"]));
        l.coordinate_transformation_mode = *c;
    }
    if (has("nearest_mode")) {
        const auto m = resizeNearestModeFrom(readString(j["nearest_mode"], "nearest_mode", ctx));
        if (!m)
            ctx.fail("\"nearest_mode\" must be \"round_prefer_floor\", \"round_prefer_ceil\", \"floor\" or "
                     "\"ceil\", got "
                + shown(j["nearest_mode"]));
        l.nearest_mode = *m;
    }
    if (has("cubic_coeff_a"))
        l.cubic_coeff_a = readNumber(j["cubic_coeff_a"], "cubic_coeff_a", ctx);
    if (has("exclude_outside"))
        l.exclude_outside = readBool(j["exclude_outside"], "exclude_outside", ctx);
}

} // namespace convscope::network_json
