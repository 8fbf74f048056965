// The memory-bound layers of a bench (resize, transpose, softmax, normalisation, copies) judged against the copy
// bandwidth each backend reaches, measured in the same run: issue 30's "≥ 60% of the device's copy bandwidth".
#pragma once

#include "compute/network.h"
#include "compute/profiler.h"
#include "compute/session.h"

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace convscope::cli {

class BandwidthFractions {
public:
    explicit BandwidthFractions(const ProfileOptions& options)
        : opt_(options)
    {
    }
    // Every layer of the case that moves at least kMinBytes at less than kMaxFlopsPerByte.
    void addCase(const std::string& caseName, const Network& net, const RunResult& run);
    // Calibrates each backend that ran such a layer (its copy bandwidth) and prints one line per layer and selection;
    // nothing when no layer qualified.
    void print(std::ostream& out, nlohmann::ordered_json& json) const;

    static constexpr double kMinBytes = 64.0 * 1024 * 1024;
    // Below this arithmetic intensity a layer is bound by memory on every device we run (the H200 balances at ~15
    // FP32 FLOP/byte, a CPU core at ~5): resize bilinear does 1.6, layer norm about 2.
    static constexpr double kMaxFlopsPerByte = 4.0;

private:
    struct Entry {
        std::string layer; // "case: layer type output"
        std::string selection, backend;
        double bytes = 0, ms = 0;
    };
    const ProfileOptions& opt_;
    std::vector<Entry> entries_;
};

} // namespace convscope::cli
