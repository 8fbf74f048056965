// A training run: the training step of one network on one or more selections, each from the same starting weights,
// with untimed warm-up steps (after which the session resets to those weights), then N timed steps. What `train`
// (cli/train_command.cpp) runs and reports; the reports are in training_report.cpp.
#pragma once

#include "compute/training/training.h"

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace convscope {

struct TrainRunOptions {
    std::vector<Selection> selections;
    TrainingOptions training;
    SessionOptions session;
    int warmup = 1;
    int steps = 10;
    // Keep each layer's ∂L/∂weight of the last step (SelectionTraining::weightGradients): the window's Gradients page.
    bool keepWeightGradients = false;
    // Called after every timed step (selection index, step from 1, loss): the command line's progress.
    std::function<void(size_t, int, double)> stepDone;
};

struct SelectionTraining {
    Selection selection;
    std::vector<StepResult> steps; // the timed steps, in order
    std::map<std::string, std::string> metadata;
    Network trained; // the parameters after the timed steps
    // ∂L/∂input of the last step (TrainingOptions::inputGradient; empty otherwise): which input pixels the loss
    // depended on, the saliency map of a classifier.
    std::shared_ptr<const Tensor> inputGradient;
    // ∂L/∂weight of the last step, one entry per layer (null for a layer without a weight); filled with
    // TrainRunOptions::keepWeightGradients, empty otherwise.
    std::vector<std::shared_ptr<const Tensor>> weightGradients;
    // The largest parameterDrift of a trained parameter against the first selection's (0 for the first selection);
    // how far the fast path drifted from the reference over the steps.
    double maxParamRelL2 = 0;
    // Data parallel (TrainingOptions::group): which rank ran these steps (−1: one process). Rank 0's report holds
    // every rank's steps (gathered over the group); `trained` is rank 0's only, and a rank's maxParamRelL2 is how far
    // its parameters are from rank 0's after the steps (0 when the all-reduce kept them in step).
    int rank = -1;
    int worldSize = 1;
    // "cudnn.auto", or "cudnn.auto · rank 1" under data parallel: the report's and the trace's name for the track.
    std::string label() const;
};

struct TrainResult {
    Network network; // parameters materialised (the starting weights)
    ShapeReport shapes;
    TrainRunOptions options;
    std::vector<SelectionTraining> selections;
    int worldSize = 1; // data parallel: the ranks; shapes are then one rank's (its slice of the batch)
    int64_t globalBatch = 0; // the whole batch, split among the ranks
};

// How far a trained parameter is from the reference selection's: the relative L2 error, except for a parameter that
// is zero by the mathematics (a convolution's zero-initialised bias before batch norm, whose gradient is rounding
// noise of ~1e-9), whose relative error is noise over noise: there the RMS difference (below 1e-6 RMS of the
// reference, the error is absolute).
double parameterDrift(const Tensor& value, const Tensor& reference);
// Data parallel (train_distributed.cpp): a network's parameters (weights and biases, in layer order) as raw floats
// appended to `out`, for rank 0; and, on rank 0, the largest parameterDrift of such floats read from bytes[at...]
// (`at` moves past them) against `reference`'s. Throws Error when the bytes end too early.
void appendParameters(std::string& out, Network net);
double parametersDrift(const std::string& bytes, size_t& at, const Network& reference, int rank);

// Infers the shapes, materialises the parameters, checks the target against the loss, and runs every selection.
// With TrainingOptions::group of more than one rank (data parallel), `input` and `target` are the whole batch: each
// rank trains on its slice (splitBatch), the session all-reduces the gradients, and rank 0's result gathers every
// rank's steps (the other ranks' results hold their own only).
// Throws: InputError (bad input, a NaN / infinite gradient naming the step and the layer), UnsupportedError (a
// backend without training, a layer kind without a backward, naming the kind and the layer).
TrainResult trainNetwork(Network net, const Tensor& input, const Tensor& target, const TrainRunOptions& options);

// Data parallel: sends this rank's last selection (its steps, metadata and trained parameters) to rank 0, which
// appends one SelectionTraining per other rank, each with maxParamRelL2 against rank 0's parameters
// (train_distributed.cpp). Every rank calls it once per selection, in the same order.
void gatherRanks(TrainResult& result, ProcessGroup& group);

// The reports: one row per selection, layer and phase (forward, backward-data, backward-weights, update) with the
// median / min / mean over the timed steps, and the loss of every step.
std::string trainingReportCsv(const TrainResult& result);
std::string trainingReportJson(const TrainResult& result);
std::string trainingReportMarkdown(const TrainResult& result);
// The Chrome trace event format (Perfetto, chrome://tracing), as `run --trace` writes it: one track per selection,
// every step's phases laid end to end from their measured durations in the order they ran (each layer's forward, the
// loss, then from the last layer down its backward-data, backward-weights and update).
// Data parallel: one track per rank (its GPU) and beside it the rank's all-reduce buckets on the communication stream.
std::string trainingChromeTrace(const TrainResult& result);
// By extension (.csv, .json, .md), atomically; InputError for another extension.
void writeTrainingReport(const std::filesystem::path& path, const TrainResult& result);
// Every trained parameter as DIR/<layer>.<weight|bias|running_mean|running_var>.npy and DIR/network.json, a network
// file whose layers read those files (init "file", batch norm's statistics as .npy paths). Every file is written
// atomically (temporary file, then rename), so a failed save never leaves a half-written file in place of a good one.
void saveTrainedWeights(const std::filesystem::path& dir, const Network& trained);

} // namespace convscope
