// Latent interpolation, as the autoencoder lecture does it (seeds/000): encode two inputs, blend their latents
// new_z = (1 − t)·z1 + t·z2 for t = 0, 0.1, …, 1, and decode every blend, timing the encoder and the decoder apart
// on each selection. The decoder runs the steps as one batch (one pass of `steps` items) or one by one (`steps`
// passes of one item), to show what batching buys; the lecture's workload (50 inputs, every ordered pair, 11 steps:
// 26,950 decoder runs) is runLectureWorkload.
//
// Each selection runs the whole pipeline on its own: its encoder's latents feed its decoder. Sessions are prepared
// once (untimed, as the profiler does) and then only passes are timed: a pass's time is its host→device copy, every
// layer and the device→host copy, what a pipeline that hands volumes back to the host pays. The memory budget is
// checked for the largest run (the batched decoder) before anything is allocated.
#pragma once

#include "compute/backend.h"
#include "compute/network_split.h"
#include "compute/stats.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace convscope {

enum class DecodeMode { Batched, OneByOne };
const char* decodeModeName(DecodeMode mode); // "batched", "one by one"

struct InterpolationOptions {
    std::string at = "latent";
    int steps = 11;
    std::vector<DecodeMode> modes { DecodeMode::Batched };
    std::vector<Selection> selections { { "cpu", "im2col_gemm" } };
    int warmup = 1, repeat = 3;
    SessionOptions session;
    int64_t hostMemoryBudgetBytes = 0; // 0 = hostMemoryBudget()
    std::function<void(double fraction, const std::string& what)> progress;
};

struct DecodeResult {
    DecodeMode mode = DecodeMode::Batched;
    Stats ms; // decoding every step once: one batched pass, or the sum of one pass per step
    Tensor decoded; // [steps, ...] the decoder's output for every t
};

struct InterpolationRun {
    Selection selection;
    bool ok = false;
    bool unsupported = false; // the backend is unavailable or refuses a layer (then `failure` says why)
    std::string failure;
    Stats encoderMs; // one pass encoding both inputs (a batch of 2)
    Tensor z1, z2; // this selection's latents of the two inputs
    std::vector<DecodeResult> decodes; // one per mode, in the options' order
};

struct InterpolationResult {
    SplitNetwork split;
    std::vector<double> ts;
    std::vector<InterpolationRun> runs; // one per selection
};

// `a` and `b` are one item each of the network's input shape (batch 1).
InterpolationResult interpolate(
    const Network& net, const Tensor& a, const Tensor& b, const InterpolationOptions& options);

struct LectureOptions {
    std::string at = "latent";
    int steps = 11;
    int64_t pairs = 0; // 0: every ordered pair of the inputs; else the first `pairs` of them
    std::vector<DecodeMode> modes { DecodeMode::Batched, DecodeMode::OneByOne };
    std::vector<Selection> selections { { "cpu", "im2col_gemm" } };
    SessionOptions session;
    int64_t hostMemoryBudgetBytes = 0;
    std::function<void(double fraction, const std::string& what)> progress;
};

struct LectureRun {
    Selection selection;
    bool ok = false, unsupported = false;
    std::string failure;
    double encodeMs = 0; // one pass encoding every input (a batch of all of them)
    int64_t pairs = 0, decoderRuns = 0; // decoder runs = pairs · steps (items decoded)
    std::vector<std::pair<DecodeMode, double>> decodeMs; // per mode: all pairs' decoder passes, summed
};

// `inputs` holds every input as one batch [N, ...] of the network's input shape.
std::vector<LectureRun> runLectureWorkload(const Network& net, const Tensor& inputs, const LectureOptions& options);

} // namespace convscope
