// Reports of a run: one row per layer and selection. CSV (RFC 4180, units in the headers), JSON (the
// full result, every sample included), Markdown, and the Chrome trace event format (opens in Perfetto and
// chrome://tracing; one process per backend, one track per selection).
#pragma once

#include "compute/network.h"
#include "compute/profiler.h"

#include <filesystem>
#include <string>

namespace convscope {

std::string reportCsv(const Network& net, const RunResult& run);
std::string reportJson(const Network& net, const RunResult& run);
std::string reportMarkdown(const Network& net, const RunResult& run);
std::string reportChromeTrace(const Network& net, const RunResult& run);

// Picks the format from the extension (.csv, .json, .md) and writes atomically; throws InputError for
// another extension.
void writeReport(const std::filesystem::path& path, const Network& net, const RunResult& run);

// Shared by the reports and the command line: "1.23 M", "4.5 G" and friends.
std::string humanCount(double value);
std::string formatMs(double ms);
// A CSV field as RFC 4180 writes it: quoted (quotes doubled) when it holds a comma, a quote or a line break.
std::string csvField(const std::string& s);

// Error figures against the reference, as every report and the window write them: "3.1e-3" (two significant
// digits, an unpadded exponent: errors span many decades), and with the math mode's rounding bound
// (ErrorMetrics::bound, compute/rounding_bound.h) when one is stated: "3.1e-3 (bound 1.9e-2)". Empty when the
// error is not valid.
std::string shortScientific(double value);
std::string relL2Text(const ErrorMetrics& error);
// A valid error above its stated bound: more than rounding alone explains (a bug, or sums that cancel strongly).
bool exceedsBound(const ErrorMetrics& error);

} // namespace convscope
