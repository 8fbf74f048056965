// Sweep mode: one parameter of one layer over a range, every selection at every value, through the same
// profiler as a run (the window runs it on the engine's worker; `convscope-cli run --sweep` saves one in a
// session). A point may set several
// parameters at once, which is how the U-Net preset replays the unet-encoder suite's (C_in, C_out, size)
// cases exactly.
#pragma once

#include "compute/backend.h"
#include "compute/network.h"
#include "compute/stats.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace convscope {

enum class SweepParameter { InputSize, InChannels, OutChannels, KernelSize, Stride, Dilation, Batch };
std::string sweepParameterName(SweepParameter p); // "kernel size"
std::vector<SweepParameter> allSweepParameters();

struct SweepPoint {
    double x = 0; // where it sits on the chart's x axis
    std::string label; // tick label ("64→128 @256²"); empty: the number
    std::map<SweepParameter, int64_t> settings;
};

struct SweepSpec {
    std::string title; // "time against kernel size"
    size_t layer = 0; // the layer whose time is charted (and whose parameters change)
    SweepParameter parameter = SweepParameter::OutChannels; // the x axis
    std::vector<SweepPoint> points;
    std::optional<Network> network; // a preset's own network; nullopt: the window's network
    std::vector<Selection> selections; // a preset's suggestion; empty: what the run panel has checked
    std::string note; // what the preset shows and how to read it

    static SweepSpec range(size_t layer, SweepParameter p, int64_t from, int64_t to, int64_t step, bool doubling);
};

// The U-Net encoder convolutions of the lecture notes (batch 4, 3×3, padding 1; channels double as the image
// halves): `convscope-cli bench --suite unet-encoder` and the "unet-channels" preset run these, in this order.
struct UnetEncoderCase {
    int64_t cin, cout, size;
};
const std::vector<UnetEncoderCase>& unetEncoderCases();

// Presets: "unet-channels" (the unet-encoder suite), "crossover" (GPU against CPU as the input grows, with
// and without copies), "kernel-size" (time against kernel size on a large image). `points` "A-B" keeps
// points A to B (0-based) only. Throws InputError for an unknown name.
SweepSpec sweepPreset(const std::string& name, const std::string& points = {});
std::vector<std::string> sweepPresetNames();

// Applies a point's settings to a copy of `net`; throws InputError when the layer cannot take them.
Network applySweepPoint(const Network& net, size_t layer, const SweepPoint& point);

struct SweepSample {
    bool ok = false;
    std::string failure;
    Stats layerMs; // the swept layer's compute time
    double networkComputeMs = 0; // sum of every layer's median compute
    double networkWithCopiesMs = 0; // median of whole passes, host→device and device→host copies included
    double flops = 0; // the swept layer's
    double gflops() const { return layerMs.median > 0 ? flops / (layerMs.median * 1e6) : 0; }
};

struct SweepResult {
    SweepSpec spec;
    std::vector<Selection> selections;
    int warmup = 0, repeat = 0;
    std::string mathMode;
    // samples[point][selection]; a point not reached yet has no entry.
    std::vector<std::vector<SweepSample>> samples;
};
using SweepResultPtr = std::shared_ptr<const SweepResult>;

struct SweepOptions {
    std::vector<Selection> selections;
    int warmup = 1, repeat = 3;
    SessionOptions session;
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(const SweepResult& soFar, double fraction)> pointDone;
};

// Runs every point (throws Cancelled when cancelled; a point that cannot run is recorded as failed).
SweepResult runSweep(const Network& base, const SweepSpec& spec, const SweepOptions& options);

} // namespace convscope
