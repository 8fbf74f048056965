// The cross-backend cases of the normalization kinds (layer_norm, group_norm, instance_norm; compute/normalization.h):
// fixed ones at every rank from 2 to 6 (ViT's [N, tokens, features], ConvNeXt's channels-last LayerNorm between two
// transposes, GroupNorm and InstanceNorm on images, volumes and flat inputs, rows longer than the CPU's chunk, data
// far from zero), and seeded random ones: random ranks, dims, normalised axes, groups, eps and affine flags.
#include "tests/backends/backend_cases.h"

#include "compute/normalization.h"
#include "compute/shape_inference.h"

#include <random>

using namespace convscope;

namespace {

using Case = test::NetworkCase;

struct Builder : test::NetworkBuilder {
    Builder(const std::string& name, const std::vector<int64_t>& d)
        : NetworkBuilder(name, 1, 1, 1, 1, false, 7, 11)
    {
        dims(d);
    }
    Builder(const std::string& name, int64_t n, int64_t c, int64_t h, int64_t w, bool flat = false)
        : NetworkBuilder(name, n, c, h, w, flat, 7, 11)
    {
    }
    // NetworkBuilder's steps returning this builder, so that spreadParameters can follow them.
    Builder& add(const std::string& name, LayerSpec spec, std::vector<std::string> inputs = {})
    {
        NetworkBuilder::add(name, std::move(spec), std::move(inputs));
        return *this;
    }
    Builder& spread(const std::string& name, int64_t channels)
    {
        NetworkBuilder::spread(name, channels);
        return *this;
    }
    // The last layer's weight and bias drawn uniformly in ±2 (PyTorch's default, 1 and 0, would hide a swapped or
    // misindexed parameter).
    Builder& spreadParameters()
    {
        InitSpec& init = net.layers.back().init;
        init.kind = "uniform";
        init.low = -2.0;
        init.high = 2.0;
        return *this;
    }
};

LayerNorm layerNorm(std::vector<int64_t> shape, bool affine = true, bool bias = true, double eps = 1e-5)
{
    return LayerNorm { std::move(shape), eps, affine, bias };
}

std::vector<Case> layerNormCases(const std::string& type)
{
    Binary far { Binary::Op::Add, { 30.0f }, { 1 }, false, {} };
    return {
        Builder(type, { 2, 7, 12 }).add("ln", layerNorm({ 12 })).spreadParameters().done("ViT's [2, 7, 12] over 12"),
        Builder(type, 2, 3, 5, 6)
            .add("ln", layerNorm({ 5, 6 }, true, false))
            .spreadParameters()
            .done("[5, 6], no bias"),
        Builder(type, 3, 37, 1, 1, true).add("ln", layerNorm({ 37 }, false)).done("flat [3, 37], no affine"),
        Builder(type, { 2, 3, 2, 3, 4 }).add("ln", layerNorm({ 3, 2, 3, 4 })).spreadParameters().done("rank 5, whole"),
        Builder(type, { 2, 2, 2, 3, 2, 5 })
            .add("ln", layerNorm({ 5 }, true, true, 1e-3))
            .spreadParameters()
            .done("rank 6"),
        Builder(type, 2, 8, 5, 5)
            .spread("s", 8)
            .add("nhwc", Transpose { { 0, 2, 3, 1 } })
            .add("ln", layerNorm({ 8 }, true, true, 1e-6))
            .spreadParameters()
            .add("nchw", Transpose { { 0, 3, 1, 2 } })
            .done("ConvNeXt's channels-last LayerNorm between transposes"),
        Builder(type, { 1, 2, 40000 }).add("ln", layerNorm({ 40000 })).spreadParameters().done("rows of 40000"),
        Builder(type, { 3, 64 })
            .add("far", far)
            .add("ln", layerNorm({ 64 }))
            .done("data near 30: a stable variance (E[x²] − E[x]² in float would lose it)"),
    };
}

std::vector<Case> groupNormCases(const std::string& type)
{
    return {
        Builder(type, 2, 6, 5, 7).add("gn", GroupNorm { 3, 1e-5, true }).spreadParameters().done("3 groups of 2"),
        Builder(type, 2, 8, 3, 4).add("gn", GroupNorm { 1, 1e-5, false }).done("one group, no affine"),
        Builder(type, 2, 8, 3, 4).add("gn", GroupNorm { 8, 1e-3, true }).spreadParameters().done("groups = C"),
        Builder(type, 3, 12, 1, 1, true).add("gn", GroupNorm { 4, 1e-5, true }).spreadParameters().done("flat [3, 12]"),
        Builder(type, { 1, 4, 3, 4, 5 }).add("gn", GroupNorm { 2, 1e-5, true }).spreadParameters().done("a volume"),
        Builder(type, { 2, 6, 9 }).add("gn", GroupNorm { 2, 1e-5, true }).spreadParameters().done("rank 3"),
        Builder(type, { 1, 4, 2, 3, 2, 2 }).add("gn", GroupNorm { 2, 1e-5, true }).spreadParameters().done("rank 6"),
        Builder(type, 1, 4, 100, 100).add("gn", GroupNorm { 1, 1e-5, true }).spreadParameters().done("one long row"),
    };
}

std::vector<Case> instanceNormCases(const std::string& type)
{
    return {
        Builder(type, 2, 3, 5, 7).add("in", InstanceNorm {}).done("InstanceNorm2d, no affine"),
        Builder(type, 2, 3, 5, 7).add("in", InstanceNorm { 1e-5, true }).spreadParameters().done("affine"),
        Builder(type, { 2, 4, 9 }).add("in", InstanceNorm { 1e-3, true }).spreadParameters().done("InstanceNorm1d"),
        Builder(type, { 1, 2, 3, 4, 5 }).add("in", InstanceNorm { 1e-5, true }).spreadParameters().done("3d"),
        Builder(type, { 2, 2, 2, 3, 2, 2 }).add("in", InstanceNorm {}).done("rank 6"),
    };
}

// One random case: a rank from 2 (3 for instance_norm) to 6, dims 1 to 9 (C a multiple of the groups), the kind's
// parameters drawn.
Case randomCase(const std::string& type, const LayerSpec& kind, std::mt19937_64& gen, uint64_t seed, int index)
{
    const auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
    const bool instance = std::holds_alternative<InstanceNorm>(kind);
    const int64_t rank = r(instance ? 3 : 2, 6);
    std::vector<int64_t> d;
    for (int64_t k = 0; k < rank; ++k)
        d.push_back(r(1, rank > 4 ? 5 : 9));
    constexpr double kEps[] = { 1e-5, 1e-3, 0.1 };
    const double eps = kEps[r(0, 2)];
    LayerSpec spec;
    if (std::holds_alternative<LayerNorm>(kind)) {
        const int64_t k = r(1, rank);
        spec = LayerNorm { std::vector<int64_t>(d.end() - k, d.end()), eps, r(0, 3) > 0, r(0, 1) > 0 };
    } else if (std::holds_alternative<GroupNorm>(kind)) {
        const int64_t g = r(1, 4);
        d[1] = g * r(1, 3);
        spec = GroupNorm { g, eps, r(0, 3) > 0 };
    } else {
        spec = InstanceNorm { eps, r(0, 1) > 0 };
    }
    Builder b(type, d);
    b.seedBase = seed + uint64_t(index) * 101;
    b.net.input.source = "random:" + std::to_string((seed + uint64_t(index)) & 0x7fffffff);
    b.add("x", spec);
    if (normHasWeight(spec))
        b.spreadParameters();
    return b.done("random " + std::to_string(index) + " " + layerSummary(spec) + " on " + Shape::of(d).str());
}

} // namespace

namespace convscope::test {

std::vector<NetworkCase> fixedNormCasesFor(const LayerSpec& kind)
{
    const std::string type = layerTypeName(kind);
    if (std::holds_alternative<LayerNorm>(kind))
        return layerNormCases(type);
    if (std::holds_alternative<GroupNorm>(kind))
        return groupNormCases(type);
    if (std::holds_alternative<InstanceNorm>(kind))
        return instanceNormCases(type);
    return {};
}

std::vector<NetworkCase> randomNormCasesFor(const LayerSpec& kind, uint64_t seed)
{
    if (!isNormLayer(kind))
        return {};
    std::mt19937_64 gen(seed);
    std::vector<NetworkCase> cases;
    for (int i = 0; i < 8; ++i)
        if (NetworkCase c = randomCase(layerTypeName(kind), kind, gen, seed, i); inferShapes(c.net).ok())
            cases.push_back(std::move(c));
    return cases;
}

} // namespace convscope::test
