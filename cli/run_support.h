// What `run` and `bench` share: parsing selections, the per-layer result table, and turning failed
// selections into the exit status (3 when unavailable / unsupported).
#pragma once

#include "compute/network.h"
#include "compute/profiler.h"

#include <CLI/CLI.hpp>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace convscope::cli {

// A network file (.json) or an ONNX model; `batch` > 0 (--batch) sets the batch: an ONNX model's symbolic batch
// dimension, or a network file's input batch. Every command that opens a network opens it here.
Network openNetwork(const std::string& path, int64_t batch);
// Adds --batch to a command.
void addBatchOption(CLI::App* cmd, int64_t& batch);

// `withFusedTwins` (--fuse) adds "S+fused" right after every selection S that is not fused already.
std::vector<Selection> parseSelections(const std::string& commaSeparated, bool withFusedTwins = false);
// "auto": cpu.direct when it is among the selections, else cpu.im2col_gemm (itself checked against
// cpu.direct by the test suite); "none": no check; else a selection.
std::optional<Selection> parseReference(const std::string& text, const std::vector<Selection>& selections);
// --option KEY=VALUE, repeated, as SessionOptions::extra; throws InputError naming a malformed one.
std::map<std::string, std::string> parseBackendOptions(const std::vector<std::string>& keyValues);
// A number the whole of `text` spells, finite; else InputError naming the option (train's --lr, --momentum, ...).
double parseNumber(const std::string& text, const std::string& option);
void printResultTable(std::ostream& out, const Network& net, const RunResult& run);
// Prints why each failed selection failed; returns 0, 3 (unsupported / unavailable) or 1.
int reportFailures(std::ostream& err, const RunResult& run);

} // namespace convscope::cli
