// convscope-cli: the headless runner. shapes, run, bench and info over the same engine as the window.
#include "cli/commands.h"

#include "compute/cpu_threads.h"
#include "compute/error.h"

#include "convscope_config.h"

#include <iostream>

#include <unistd.h>

int main(int argc, char** argv)
{
    using namespace convscope;
    // Before anything runs: OpenBLAS chose its generic kernels on a CPU its build does not know (cpu_threads.h).
    if (chooseKnownBlasCore())
        execv("/proc/self/exe", argv); // returns only on failure: then run on as we are
    CLI::App app { "ConvScope " CONVSCOPE_VERSION
                   " — shapes, runs and benchmarks of CNN layers on the CPU, our CUDA kernels and cuDNN" };
    app.require_subcommand(1);
    app.set_version_flag("--version", CONVSCOPE_VERSION);
    std::vector<std::pair<CLI::App*, cli::Command>> commands;
    auto add = [&](cli::Command (*make)(CLI::App&)) {
        cli::Command c = make(app);
        commands.emplace_back(app.get_subcommands({}).back(), std::move(c));
    };
    add(cli::addShapesCommand);
    add(cli::addRunCommand);
    add(cli::addBenchCommand);
    add(cli::addInfoCommand);
    add(cli::addAlgosCommand);
    add(cli::addExportCommand);
    add(cli::addInterpolateCommand);
    add(cli::addTrainCommand);
    add(cli::addGanCommand);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }
    try {
        for (auto& [sub, run] : commands)
            if (sub->parsed())
                return run();
    } catch (const UnsupportedError& e) {
        std::cerr << "convscope-cli: " << e.what() << "\n";
        return 3;
    } catch (const InputError& e) {
        std::cerr << "convscope-cli: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "convscope-cli: " << e.what() << "\n";
        return 1;
    }
    return 1;
}
