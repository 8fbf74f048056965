// The profiler runs a network for a list of selections. Each selection chains its own outputs through
// the whole network; every layer's output is compared with the reference selection's (cpu.direct by
// default). Warm-up passes, then timed repeats; every sample is kept. With several selections the
// repeats are interleaved (A B C A B C ...) so ratios between them are measured side by side.
#pragma once

#include "compute/backend.h"
#include "compute/error.h"
#include "compute/network.h"
#include "compute/shape_inference.h"
#include "compute/stats.h"
#include "compute/tensor.h"

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace convscope {

// Where a run is, for a person watching (the window's status bar).
struct RunProgress {
    double fraction = 0; // of the whole run, in [0, 1]
    std::string phase; // "preparing", "dropped", "warm-up", "timing", "reference", "comparing", "exploring", "done"
    std::string selection; // the selection at work (empty: none)
    int pass = 0, passes = 0; // 1-based pass of the warm-ups and repeats (0: not in a pass)
    int layer = -1, layers = 0; // 0-based layer at work, of `layers` (-1: none)
    std::string layerName;
    std::string dropped; // phase "dropped": why `selection` just dropped out (the others go on)
    std::string text() const; // "cpu.direct pass 3/13 · layer 5/69 conv1"
};

struct ProfileOptions {
    std::vector<Selection> selections;
    int warmup = 3;
    int repeat = 10;
    bool interleave = true;
    bool keepOutputs = false; // keep every layer's output of every selection (the window, --dump-outputs)
    bool explore = false; // ask each selection's backend for its algorithm explorer on every conv layer
    std::optional<Selection> reference = Selection { "cpu", "direct" }; // nullopt: no error check
    SessionOptions session;
    int64_t hostMemoryBudgetBytes = 0; // 0 = hostMemoryBudget() (compute/memory_budget.h)
    // Called from the running thread; `fraction` in [0, 1], `what` is RunProgress::text().
    std::function<void(double fraction, const std::string& what)> progress;
    // Called from the running thread at every step and between layers: wherever the profiler walks the layers itself
    // (preparing, the reference, comparing, exploring) and inside passes of the sessions that report their layers (the
    // CPU's), there at most every `layerProgressMs` (its clock is read after a layer's time is taken, never inside).
    // Unset, nothing is reported between layers.
    std::function<void(const RunProgress&)> layerProgress;
    int layerProgressMs = 50;
    const std::atomic<bool>* cancel = nullptr; // set to stop; run() then throws Cancelled
};

class Cancelled : public Error {
public:
    Cancelled()
        : Error("run cancelled")
    {
    }
};

struct LayerResult {
    size_t index = 0;
    std::vector<double> samplesMs; // compute time of each timed repeat
    Stats computeMs;
    ErrorMetrics error; // against the reference; valid == false when there is none
    std::string note; // from the backend (algorithm actually used, pad step, ...)
    std::optional<Tensor> output; // when keepOutputs
    std::string explorerJson; // the backend's algorithm explorer for this layer (cudnn), when asked
    double fetchMs = 0; // time to copy the output back for display (not compute)
};

struct SelectionResult {
    Selection selection;
    bool ok = false;
    std::string failure; // why the selection did not run (unavailable, unsupported layer, out of memory)
    bool unsupported = false; // failed because the backend is unavailable or does not support a layer
    std::vector<LayerResult> layers;
    Stats h2dMs, d2hMs, totalMs; // total = h2d + all layers + d2h per repeat
    std::map<std::string, std::string> metadata; // device, versions, math mode...
};

struct RunMetadata {
    std::string date; // ISO 8601 UTC
    std::string cpuModel;
    int cpuThreads = 0;
    std::string convscopeVersion;
    std::string mathMode;
    int warmup = 0, repeat = 0;
    bool interleaved = true;
    std::string reference;
    std::string timing; // how time was taken
    std::map<std::string, std::string> libraries; // openblas, ...
};

struct RunResult {
    std::string networkName;
    Network network; // the network as it ran: parameters materialised
    RunMetadata meta;
    ShapeReport shapes;
    std::vector<SelectionResult> selections;
    const SelectionResult* find(const Selection& s) const;
};

// Throws InputError, before anything is allocated, when the run would need more host memory than
// the budget allows (activations of every host-side copy plus parameters), saying how much it needs.
void checkMemoryBudget(const std::string& networkName, const ShapeReport& shapes, const ProfileOptions& options);

// Runs `net` (parameters materialised by the caller or here) on `input`. Throws InputError when the
// network is invalid or exceeds the memory budget (before allocating), Cancelled when cancelled.
// A selection that cannot run is recorded as failed; the others still run.
RunResult profile(Network net, const Tensor& input, const ProfileOptions& options);
// The whole run from the network's description: shapes inferred once, the memory budget checked before anything is
// allocated, the input loaded from net.input (into *input when given, for display), parameters materialised, then
// profiled as above. The window's engine and `convscope-cli run` start here.
RunResult profile(Network net, const ProfileOptions& options, Tensor* input = nullptr);

} // namespace convscope
