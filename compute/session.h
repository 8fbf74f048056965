// A saved session: what a run measured on one machine, to be looked at on another (a classroom laptop
// without a GPU shows what the GPU server measured). A folder:
//
//   session.json    {"format": "convscope-session", "version": 1, "files": ..., "ceilings": [...]}
//   network.json    the network as it ran (the network file format)
//   result.json     the full JSON report (compute/report.h), every sample, every explorer document
//   input.npy       the input tensor
//   outputs/<selection>/NN_<layer>.npy   every layer's output of every selection that ran
//   sweep.json      a sweep measured with the run (optional)
//
// Reading it back gives the same RunResult numbers (the report JSON is the lossless record).
#pragma once

#include "compute/backend.h"
#include "compute/network.h"
#include "compute/profiler.h"
#include "compute/sweep.h"
#include "compute/tensor.h"

#include <filesystem>
#include <string>
#include <vector>

namespace convscope {

struct CeilingsEntry {
    std::string backend; // "cpu", "cuda", "cudnn"
    DeviceCeilings ceilings;
};

struct SavedSession {
    Network network; // the description (parameters are not materialised)
    Tensor input;
    RunResult result; // layer outputs in result.selections[s].layers[i].output where the files exist
    std::vector<CeilingsEntry> ceilings;
    std::optional<SweepResult> sweep;
    std::filesystem::path dir;
};

// Writes the folder (created if needed; files written atomically). Outputs are written for every layer
// that kept one.
void writeSession(const std::filesystem::path& dir, const Network& net, const Tensor& input, const RunResult& run,
    const std::vector<CeilingsEntry>& ceilings);
// Adds sweep.json to a session folder.
void writeSessionSweep(const std::filesystem::path& dir, const SweepResult& sweep);
std::string sweepToJson(const SweepResult& sweep);
SweepResult sweepFromJson(const std::string& json, const std::string& what); // throws InputError
// Throws InputError naming the file and what is wrong.
SavedSession readSession(const std::filesystem::path& dir);

// The report JSON (reportJson) back into a RunResult; `shapes` come from the network. Throws InputError.
RunResult parseReportJson(const std::string& json, const ShapeReport& shapes, const std::string& what);

// Calibrates every backend among `selections` once (those that have a calibration); failures are skipped.
std::vector<CeilingsEntry> calibrateBackends(const std::vector<Selection>& selections, const SessionOptions& options);

std::string ceilingsToJson(const std::vector<CeilingsEntry>& entries);
std::vector<CeilingsEntry> ceilingsFromJson(const std::string& json);

} // namespace convscope
