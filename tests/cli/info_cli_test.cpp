// `convscope-cli info` names the CPU's vector and matrix extensions (compute/cpu_features.h, read from CPUID), checked
// here against the kernel's own list (the flags line of /proc/cpuinfo), and says which half-precision formats the CPU
// computes natively.
#include "tests/cli/cli_runner.h"
#include "tests/test_support.h"

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <sys/wait.h>

namespace {

std::string infoOutput(int& status)
{
    const convscope::test::CliResult r = convscope::test::runCli("info");
    status = r.status;
    return r.output;
}

// The words after "<key>: " on the first line that starts with it.
std::set<std::string> wordsOf(const std::string& text, const std::string& key)
{
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        // "key: ..." (info) or "key\t\t: ..." (/proc/cpuinfo), after any indentation.
        const auto start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line.compare(start, key.size(), key) != 0)
            continue;
        const auto colon = line.find_first_not_of(" \t", start + key.size());
        if (colon == std::string::npos || line[colon] != ':')
            continue;
        std::istringstream words(line.substr(colon + 1));
        std::set<std::string> set;
        for (std::string w; words >> w;)
            set.insert(w);
        return set;
    }
    return {};
}

std::string lineOf(const std::string& text, const std::string& prefix)
{
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind(prefix, 0) == 0)
            return line;
    return {};
}

} // namespace

TEST_CASE("info lists the CPU's vector and matrix extensions as /proc/cpuinfo does", "[cli]")
{
    std::ifstream in("/proc/cpuinfo");
    std::string cpuinfo((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::set<std::string> kernel = wordsOf(cpuinfo, "flags");
    if (kernel.empty()) {
        std::cout << "SKIPPED: /proc/cpuinfo has no flags line here (not x86 Linux)" << std::endl;
        return;
    }
    int status = -1;
    const std::string out = infoOutput(status);
    REQUIRE(status == 0);
    const std::set<std::string> ours = wordsOf(out, "cpu_isa");
    INFO(out);
    REQUIRE_FALSE(ours.empty());
    for (const char* flag : { "avx2", "fma", "avx_vnni", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16",
             "amx_tile", "amx_bf16", "amx_fp16", "amx_int8" }) {
        INFO(flag);
        CHECK(ours.count(flag) == kernel.count(flag));
    }
    const bool bf16 = kernel.count("avx512_bf16") || kernel.count("amx_bf16");
    const std::string line = lineOf(out, "CPU BF16: ");
    CHECK_FALSE(line.empty());
    CHECK((line.find("none") == std::string::npos) == bf16);
    CHECK_FALSE(lineOf(out, "CPU FP16: ").empty());
    CHECK(lineOf(out, "CPU AMX: ") == (kernel.count("amx_tile") ? "CPU AMX: yes" : "CPU AMX: no"));
}
