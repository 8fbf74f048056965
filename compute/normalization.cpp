// The normalization kinds' plan and shape rules (compute/normalization.h).
#include "compute/normalization.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/npy.h"

#include <cmath>
#include <sstream>
#include <variant>

namespace convscope {

namespace {
    std::string numberText(double v)
    {
        std::ostringstream s;
        s << v;
        return s.str();
    }

    double epsOf(const LayerSpec& spec)
    {
        return std::visit(
            [](const auto& l) -> double {
                using T = std::decay_t<decltype(l)>;
                if constexpr (isNormKind<T>)
                    return l.eps;
                else
                    throw InputError(layerTypeName(LayerSpec { l }) + " is not a normalization kind");
            },
            spec);
    }

    // Positions per channel of [N, C, *]: 1 for [N, C].
    int64_t positionsOf(const std::vector<int64_t>& d)
    {
        int64_t s = 1;
        for (size_t k = 2; k < d.size(); ++k)
            s *= d[k];
        return s;
    }

    void checkShape(const LayerSpec& spec, const Shape& in)
    {
        const std::vector<int64_t> d = in.dims();
        const int rank = int(d.size());
        const double eps = epsOf(spec);
        const std::string type = layerTypeName(spec);
        if (!(eps >= 0) || !std::isfinite(eps))
            throw InputError(type + ": eps must be a non-negative number, got " + numberText(eps));
        if (const auto* l = std::get_if<LayerNorm>(&spec)) {
            const auto& ns = l->normalized_shape;
            if (ns.empty())
                throw InputError("layer_norm needs \"normalized_shape\": the sizes of the last axes it normalises "
                                 "over (PyTorch's LayerNorm(normalized_shape)), e.g. ["
                    + std::to_string(d.back()) + "] for the last axis of " + in.str());
            if (int(ns.size()) > rank)
                throw InputError("layer_norm: normalized_shape " + npyDimsText(ns) + " has " + std::to_string(ns.size())
                    + " axes but the input " + in.str() + " has only " + std::to_string(rank));
            for (size_t k = 0; k < ns.size(); ++k) {
                const size_t axis = size_t(rank) - ns.size() + k;
                if (ns[k] != d[axis])
                    throw InputError("layer_norm: normalized_shape " + npyDimsText(ns) + " must be the last "
                        + std::to_string(ns.size()) + " dims of the input " + in.str() + ", but dim "
                        + std::to_string(axis) + " is " + std::to_string(d[axis]));
            }
        } else if (const auto* g = std::get_if<GroupNorm>(&spec)) {
            if (rank < 2)
                throw InputError("group_norm needs an input [N, C, *] of rank 2 to 6, got " + in.str());
            if (g->num_groups < 1)
                throw InputError("group_norm: num_groups must be at least 1, got " + std::to_string(g->num_groups));
            if (d[1] % g->num_groups != 0)
                throw InputError("group_norm: num_groups " + std::to_string(g->num_groups) + " does not divide the "
                    + std::to_string(d[1]) + " channels (dim 1) of " + in.str());
        } else if (std::holds_alternative<InstanceNorm>(spec)) {
            if (rank < 3)
                throw InputError("instance_norm needs an input [N, C, *] with at least one position axis (rank 3 to "
                                 "6, InstanceNorm1d/2d/3d), got "
                    + in.str());
        }
    }
} // namespace

bool isNormLayer(const LayerSpec& spec)
{
    return std::visit([](const auto& l) { return isNormKind<std::decay_t<decltype(l)>>; }, spec);
}

NormPlan normPlan(const LayerSpec& spec, const Shape& in)
{
    checkShape(spec, in);
    const std::vector<int64_t> d = in.dims();
    NormPlan p;
    p.eps = epsOf(spec);
    const int64_t total = in.numel();
    if (const auto* l = std::get_if<LayerNorm>(&spec)) {
        p.rowLength = 1;
        for (const int64_t n : l->normalized_shape)
            p.rowLength *= n;
        p.rows = p.rowLength > 0 ? total / p.rowLength : 0;
    } else if (const auto* g = std::get_if<GroupNorm>(&spec)) {
        const int64_t s = positionsOf(d);
        p.groups = g->num_groups;
        p.inner = s;
        p.rows = d[0] * p.groups;
        p.rowLength = d[1] / p.groups * s;
    } else {
        const int64_t s = positionsOf(d);
        p.groups = d[1];
        p.inner = s;
        p.rows = d[0] * d[1];
        p.rowLength = s;
    }
    return p;
}

std::vector<int64_t> normParameterDims(const LayerSpec& spec, const Shape& in)
{
    if (const auto* l = std::get_if<LayerNorm>(&spec))
        return l->normalized_shape;
    return { in.dims().at(1) };
}

bool normHasWeight(const LayerSpec& spec)
{
    if (const auto* l = std::get_if<LayerNorm>(&spec))
        return l->elementwise_affine;
    if (const auto* g = std::get_if<GroupNorm>(&spec))
        return g->affine;
    if (const auto* i = std::get_if<InstanceNorm>(&spec))
        return i->affine;
    return false;
}

bool normHasBias(const LayerSpec& spec)
{
    if (const auto* l = std::get_if<LayerNorm>(&spec))
        return l->elementwise_affine && l->bias;
    return normHasWeight(spec);
}

LayerShape inferNormalization(const LayerSpec& spec, const Shape& in)
{
    const NormPlan p = normPlan(spec, in);
    const std::vector<int64_t> pd = normParameterDims(spec, in);
    int64_t count = 1;
    for (const int64_t n : pd)
        count = checkedMul(count, n, layerTypeName(spec) + " parameters");
    LayerShape r;
    r.out = in;
    std::string over;
    if (const auto* l = std::get_if<LayerNorm>(&spec))
        over = (l->normalized_shape.size() == 1 ? std::string("the last axis ")
                                                : "the last " + std::to_string(l->normalized_shape.size()) + " axes ")
            + npyDimsText(l->normalized_shape);
    else if (const auto* g = std::get_if<GroupNorm>(&spec))
        over = "each of " + std::to_string(g->num_groups) + " groups of " + std::to_string(in.dims()[1] / g->num_groups)
            + " channels and their positions";
    else
        over = "each channel's positions";
    r.formula = "output shape = input shape " + in.str() + "\nmean and variance over " + over + ": "
        + std::to_string(p.rows) + " rows of " + std::to_string(p.rowLength) + " elements\ny = (x − mean) / √(var + "
        + numberText(p.eps) + ")" + (normHasWeight(spec) ? " · weight" : "") + (normHasBias(spec) ? " + bias" : "");
    r.cost.params = (normHasWeight(spec) ? count : 0) + (normHasBias(spec) ? count : 0);
    r.cost.flops = 7.0 * double(in.numel()); // sum, square-sum (2), subtract, scale, weight, bias
    r.cost.bytesRead = 4.0 * double(in.numel()) + 4.0 * double(r.cost.params);
    r.cost.bytesWritten = 4.0 * double(in.numel());
    return r;
}

} // namespace convscope
