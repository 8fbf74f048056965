// Runs convscope-cli as a user would, through the shell with stdout and stderr together, for the CLI tests: one
// runner instead of one copy per test file.
#pragma once

#include "tests/test_support.h"

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace convscope::test {

struct CliResult {
    int status = -1; // the exit status; -1 when the process did not exit (a signal)
    std::string output; // stdout and stderr together
};

// `args` as a shell splits them: quote paths ('...').
inline CliResult runCli(const std::string& args)
{
    const std::string cmd = "'" + cliPath().string() + "' " + args + " 2>&1";
    CliResult r;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p);
    std::array<char, 4096> buf {};
    size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
        r.output.append(buf.data(), n);
    const int raw = pclose(p);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return r;
}

} // namespace convscope::test
