// The normalization kinds' fields in the network file (layer_norm, group_norm, instance_norm; compute/normalization.h):
// read by network_json.cpp's readLayer, written by network_json_write.cpp's layerJson.
#include "compute/network_json_internal.h"

#include "compute/normalization.h"

namespace convscope::network_json {

namespace {
    double readEps(const Json& v, const Context& ctx)
    {
        const double eps = readNumber(v, "eps", ctx);
        if (!(eps >= 0))
            ctx.fail("\"eps\" must be a non-negative number (PyTorch's default is 1e-5), got " + shown(v));
        return eps;
    }
} // namespace

void readNormalization(const Json& j, LayerSpec& spec, Layer& layer, const Context& ctx)
{
    const auto has = [&](const char* key) { return j.contains(key); };
    const std::string type = layerTypeName(spec);
    if (auto* l = std::get_if<LayerNorm>(&spec)) {
        if (!has("normalized_shape"))
            ctx.fail("\"normalized_shape\" is missing (PyTorch's LayerNorm requires it too: the sizes of the last "
                     "axes, e.g. [768])");
        const Json& v = j["normalized_shape"];
        l->normalized_shape = isInteger(v) ? std::vector<int64_t> { readInt(v, "normalized_shape", 1, ctx) }
                                           : readIntList(v, "normalized_shape", 1, 1, size_t(Shape::kMaxRank), ctx);
        if (has("elementwise_affine"))
            l->elementwise_affine = readBool(j["elementwise_affine"], "elementwise_affine", ctx);
        if (has("bias"))
            l->bias = readBool(j["bias"], "bias", ctx);
        if (has("eps"))
            l->eps = readEps(j["eps"], ctx);
    } else if (auto* g = std::get_if<GroupNorm>(&spec)) {
        if (!has("num_groups"))
            ctx.fail("\"num_groups\" is missing (PyTorch's GroupNorm requires it too)");
        g->num_groups = readInt(j["num_groups"], "num_groups", 1, ctx);
        if (has("affine"))
            g->affine = readBool(j["affine"], "affine", ctx);
        if (has("eps"))
            g->eps = readEps(j["eps"], ctx);
    } else if (auto* i = std::get_if<InstanceNorm>(&spec)) {
        if (has("affine"))
            i->affine = readBool(j["affine"], "affine", ctx);
        if (has("eps"))
            i->eps = readEps(j["eps"], ctx);
    }
    if (has("init")) {
        if (!normHasWeight(spec))
            ctx.fail("\"init\" is given but the layer has no weight (" + type + " with "
                + (std::holds_alternative<LayerNorm>(spec) ? "elementwise_affine" : "affine") + " false)");
        layer.init = readInit(j["init"], type, normHasBias(spec), ctx);
    }
}

void writeNormalization(const LayerSpec& spec, const Layer&, Json& o, const Json& init)
{
    if (const auto* l = std::get_if<LayerNorm>(&spec)) {
        o["normalized_shape"] = l->normalized_shape;
        o["eps"] = l->eps;
        o["elementwise_affine"] = l->elementwise_affine;
        o["bias"] = l->bias;
    } else if (const auto* g = std::get_if<GroupNorm>(&spec)) {
        o["num_groups"] = g->num_groups;
        o["eps"] = g->eps;
        o["affine"] = g->affine;
    } else if (const auto* i = std::get_if<InstanceNorm>(&spec)) {
        o["eps"] = i->eps;
        o["affine"] = i->affine;
    }
    if (normHasWeight(spec))
        o["init"] = init;
}

} // namespace convscope::network_json
