// The network file's fields of the gather kind (issue 30): axis, indices, indices_shape; and matmul's constant operand
// (network_json_internal.h).
#include "compute/network_json_internal.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::network_json {

void readGather(const Json& j, Gather& l, const Context& ctx)
{
    if (!j.contains("indices"))
        ctx.fail("gather needs \"indices\" (a list of integers, negative counting from the end)");
    if (j.contains("axis")) {
        if (!isInteger(j["axis"]) || j["axis"].get<int64_t>() < -6 || j["axis"].get<int64_t>() > 5)
            ctx.fail("\"axis\" must be an integer from -6 to 5, got " + shown(j["axis"]));
        l.axis = j["axis"].get<int64_t>();
    }
    constexpr size_t kMaxIndices = size_t(1) << 24;
    const Json& idx = j["indices"];
    if (isInteger(idx)) { // one number: a scalar index unless indices_shape says otherwise
        l.indices = { idx.get<int64_t>() };
        l.indices_shape = {};
    } else {
        l.indices = readIntList(idx, "indices", std::numeric_limits<int64_t>::min() / 2, 1, kMaxIndices, ctx);
        l.indices_shape = { int64_t(l.indices.size()) };
    }
    if (j.contains("indices_shape"))
        l.indices_shape = readIntList(j["indices_shape"], "indices_shape", 1, 0, 6, ctx);
    int64_t count = 1;
    for (const int64_t d : l.indices_shape)
        count *= d;
    if (count != int64_t(l.indices.size()))
        ctx.fail("\"indices\" has " + std::to_string(l.indices.size()) + " values but \"indices_shape\" "
            + shown(j.contains("indices_shape") ? j["indices_shape"] : Json::array()) + " holds "
            + std::to_string(count));
}

void readMatmul(const Json& j, Matmul& l, const Context& ctx)
{
    if (!j.contains("constant")) {
        if (j.contains("constant_shape") || j.contains("constant_first"))
            ctx.fail("\"constant_shape\" and \"constant_first\" describe a \"constant\", which is missing");
        return;
    }
    const Json& c = j["constant"];
    const auto finite = [](const Json& e) { return e.is_number() && std::isfinite(e.get<double>()); };
    if (!c.is_array() || c.empty() || !std::all_of(c.begin(), c.end(), finite))
        ctx.fail("\"constant\" must be a list of numbers (matmul's constant operand), got " + shown(c));
    for (const Json& e : c)
        l.constant.push_back(e.get<float>());
    l.constant_shape = { int64_t(l.constant.size()) };
    if (j.contains("constant_shape"))
        l.constant_shape = readIntList(j["constant_shape"], "constant_shape", 1, 1, 6, ctx);
    if (j.contains("constant_first"))
        l.constant_first = readBool(j["constant_first"], "constant_first", ctx);
    int64_t count = 1;
    for (const int64_t d : l.constant_shape)
        count *= d;
    if (count != int64_t(l.constant.size()))
        ctx.fail("\"constant\" has " + std::to_string(l.constant.size()) + " values but \"constant_shape\" "
            + shown(j["constant_shape"]) + " holds " + std::to_string(count));
}

void writeMatmul(Json& o, const Matmul& l)
{
    if (l.constant.empty())
        return;
    o["constant"] = l.constant;
    o["constant_shape"]
        = l.constant_shape.empty() ? std::vector<int64_t> { int64_t(l.constant.size()) } : l.constant_shape;
    o["constant_first"] = l.constant_first;
}

void writeGather(Json& o, const Gather& l)
{
    o["axis"] = l.axis;
    o["indices"] = l.indices;
    o["indices_shape"] = l.indices_shape;
}

} // namespace convscope::network_json
