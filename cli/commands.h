// convscope-cli's subcommands. Each registers itself on the CLI11 app and returns its exit status:
// 0 success, 2 bad input, 3 a backend unavailable or a layer unsupported, 1 anything else. Errors travel
// as exceptions (compute/error.h) and main() turns them into those statuses.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace convscope::cli {

using Command = std::function<int()>;

Command addShapesCommand(CLI::App& app);
Command addRunCommand(CLI::App& app);
Command addBenchCommand(CLI::App& app);
Command addInfoCommand(CLI::App& app);
Command addAlgosCommand(CLI::App& app);
Command addExportCommand(CLI::App& app);
Command addInterpolateCommand(CLI::App& app);
Command addTrainCommand(CLI::App& app);
Command addGanCommand(CLI::App& app);

} // namespace convscope::cli
