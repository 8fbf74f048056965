// The normalization suite ("norms", bench_suites.h): layer_norm, group_norm and instance_norm on tensors of 256 MiB,
// where the speed goal of issue 30 is measured against the machine's copy bandwidth (each kind reads its input twice
// at most and writes it once), and ViT-B's LayerNorm at a realistic size.
#include "cli/bench_suites.h"

namespace convscope::cli {

namespace {
    BenchCase oneLayer(const std::string& name, const std::vector<int64_t>& dims, LayerSpec spec, uint64_t seed)
    {
        Network n;
        n.name = "norms " + name;
        n.input = InputSpec::ofDims(dims, "random:" + std::to_string(seed));
        Layer l;
        l.name = layerTypeName(spec);
        l.spec = std::move(spec);
        l.init.kind = "uniform";
        l.init.seed = seed;
        n.layers.push_back(std::move(l));
        return { name, std::move(n) };
    }
} // namespace

std::vector<BenchCase> normCases()
{
    return {
        oneLayer("layer_norm [8, 4096, 2048] over 2048 (256 MiB)", { 8, 4096, 2048 }, LayerNorm { { 2048 } }, 400),
        oneLayer("layer_norm ViT-B [64, 197, 768]", { 64, 197, 768 }, LayerNorm { { 768 } }, 401),
        oneLayer("group_norm 32 groups [8, 512, 128, 128] (256 MiB)", { 8, 512, 128, 128 }, GroupNorm { 32 }, 402),
        oneLayer("instance_norm [8, 512, 128, 128] (256 MiB)", { 8, 512, 128, 128 }, InstanceNorm { 1e-5, true }, 403),
    };
}

} // namespace convscope::cli
