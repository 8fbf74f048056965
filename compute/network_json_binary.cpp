// The binary kind's file fields (compute/network_json_internal.h).
#include "compute/binary.h"
#include "compute/network_json_internal.h"
#include "compute/npy.h"

#include <algorithm>
#include <cmath>

namespace convscope::network_json {

void readBinary(const Json& j, Binary& l, const Context& ctx)
{
    if (!j.contains("op"))
        ctx.fail("\"op\" is missing (add, sub, mul, div, pow, min or max)");
    const std::string op = readString(j["op"], "op", ctx);
    bool found = false;
    for (Binary::Op o : { Binary::Op::Add, Binary::Op::Sub, Binary::Op::Mul, Binary::Op::Div, Binary::Op::Pow,
             Binary::Op::Min, Binary::Op::Max })
        if (op == binaryOpName(o)) {
            l.op = o;
            found = true;
        }
    if (!found)
        ctx.fail("\"op\" must be one of add, sub, mul, div, pow, min, max; got " + shown(j["op"]));
    if (j.contains("constant")) {
        const Json& c = j["constant"];
        const auto finite = [](const Json& e) { return e.is_number() && std::isfinite(e.get<double>()); };
        if (finite(c)) {
            l.constant = { c.get<float>() };
        } else if (c.is_array() && !c.empty() && std::all_of(c.begin(), c.end(), finite)) {
            for (const Json& e : c)
                l.constant.push_back(e.get<float>());
        } else if (c.is_string() && !c.get<std::string>().empty()) {
            l.constant_file = c.get<std::string>(); // read once the network's folder is known
        } else {
            ctx.fail("\"constant\" must be a number, a list of numbers or an .npy file path, got " + shown(c));
        }
    }
    if (j.contains("constant_shape")) {
        const Json& s = j["constant_shape"];
        if (!s.is_array() || s.size() > size_t(kMaxBinaryRank))
            ctx.fail("\"constant_shape\" must be a list of up to 6 sizes, got " + shown(s));
        for (const Json& e : s)
            l.constant_shape.push_back(readInt(e, "constant_shape", 1, ctx));
    }
    if (j.contains("constant_first"))
        l.constant_first = readBool(j["constant_first"], "constant_first", ctx);
    if (!j.contains("constant") && (j.contains("constant_shape") || j.contains("constant_first")))
        ctx.fail("\"constant_shape\" and \"constant_first\" describe a \"constant\", which is missing");
    if (!l.constant.empty() && l.constant_shape.empty())
        l.constant_shape = { int64_t(l.constant.size()) };
}

void readBinaryConstant(Binary& l, const std::filesystem::path& baseDir, const Context& ctx)
{
    const std::filesystem::path path = std::filesystem::path(l.constant_file).is_absolute()
        ? std::filesystem::path(l.constant_file)
        : baseDir / l.constant_file;
    NpyArray a;
    try {
        a = readNpy(path);
    } catch (const std::exception& e) {
        ctx.fail("\"constant\" " + l.constant_file + ": " + e.what());
    }
    if (a.data.empty())
        ctx.fail("\"constant\" " + l.constant_file + " holds no values");
    l.constant = a.data;
    if (l.constant_shape.empty())
        l.constant_shape = a.dims.empty() ? std::vector<int64_t> { 1 } : a.dims;
}

} // namespace convscope::network_json
