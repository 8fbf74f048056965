#include "cli/bench_bandwidth.h"
#include "cli/text_table.h"

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"

#include <cstdio>
#include <map>
#include <set>

namespace convscope::cli {

namespace {

    // Shape inference counts bytes as float32; the GPU backends store activations in 16 bits in fp16 and bf16.
    double storageScale(const std::string& backend, MathMode math)
    {
        const bool gpu = backend == "cuda" || backend == "cudnn";
        return gpu && (math == MathMode::FP16 || math == MathMode::BF16) ? 0.5 : 1.0;
    }

} // namespace

void BandwidthFractions::addCase(const std::string& caseName, const Network& net, const RunResult& run)
{
    for (size_t i = 0; i < net.layers.size() && i < run.shapes.layers.size(); ++i) {
        const auto& cost = run.shapes.layers[i].cost;
        const double bytes = cost.bytesRead + cost.bytesWritten;
        if (bytes < kMinBytes || cost.flops >= kMaxFlopsPerByte * bytes)
            continue;
        for (const auto& sel : run.selections) {
            if (!sel.ok || i >= sel.layers.size() || sel.layers[i].computeMs.median <= 0)
                continue;
            entries_.push_back({ caseName + ": " + net.layers[i].name + " " + layerTypeName(net.layers[i].spec) + " "
                    + run.shapes.layers[i].out.str(),
                sel.selection.str(), sel.selection.backend,
                bytes * storageScale(sel.selection.backend, opt_.session.math), sel.layers[i].computeMs.median });
        }
    }
}

void BandwidthFractions::print(std::ostream& out, nlohmann::ordered_json& json) const
{
    if (entries_.empty())
        return;
    // One calibration per backend: its best copy of a large buffer (a device-to-device cudaMemcpyAsync on the GPU,
    // memcpy on the CPU), read + written counted like the layers' bytes.
    std::map<std::string, DeviceCeilings> copy;
    std::set<std::string> backends;
    for (const auto& e : entries_)
        backends.insert(e.backend);
    for (const auto& backend : backends)
        for (const auto& c : calibrateBackends({ Selection { backend, "auto" } }, opt_.session))
            if (c.ceilings.bandwidthGBs > 0)
                copy[c.backend] = c.ceilings;
    for (const auto& [backend, c] : copy) {
        out << "copy bandwidth of " << backend << " measured in this run (" << c.bandwidthMethod
            << "): " << fixedDigits(c.bandwidthGBs, 1) << " GB/s\n";
        json["copy_bandwidth"][backend] = { { "gbs", c.bandwidthGBs }, { "method", c.bandwidthMethod } };
    }
    for (const auto& e : entries_) {
        const double gbs = e.bytes / (e.ms * 1e6);
        const auto it = copy.find(e.backend);
        std::string line = "  " + e.layer + " on " + e.selection + ": " + fixedDigits(gbs, 1) + " GB/s";
        nlohmann::ordered_json j = { { "layer", e.layer }, { "selection", e.selection }, { "bytes", e.bytes },
            { "median_ms", e.ms }, { "gbs", gbs } };
        if (it != copy.end()) {
            line += ", " + fixedDigits(100.0 * gbs / it->second.bandwidthGBs, 0) + "% of its copy bandwidth";
            j["fraction_of_copy"] = gbs / it->second.bandwidthGBs;
        }
        out << line << "\n";
        json["bandwidth"].push_back(j);
    }
}

} // namespace convscope::cli
