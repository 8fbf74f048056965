// kernels/common/gpu_clocks.h: the GPU clocks recorded in the run metadata. Without the NVIDIA driver (CI, the
// development machine) the reading must come back as one entry saying why, never an exception; with it (the GPU
// machine) every key must be there and hold a plausible value or NVML's reason. The reasons decoder is pure and
// checked bit by bit against NVML's nvmlClocksEventReason* values.
#include "kernels/common/gpu_clocks.h"

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <map>
#include <string>
#include <vector>

using convscope::gpu::describeClockEventReasons;
using convscope::gpu::gpuClocks;

namespace {

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool isNumber(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789.") == std::string::npos; }

} // namespace

TEST_CASE("clock-event reasons: each NVML bit in words, 0 as none", "[clocks]")
{
    CHECK(describeClockEventReasons(0) == "none");
    CHECK(describeClockEventReasons(0x1) == "gpu idle");
    CHECK(describeClockEventReasons(0x2) == "applications clocks setting");
    CHECK(describeClockEventReasons(0x4) == "sw power cap");
    CHECK(describeClockEventReasons(0x8) == "hw slowdown");
    CHECK(describeClockEventReasons(0x10) == "sync boost");
    CHECK(describeClockEventReasons(0x20) == "sw thermal slowdown");
    CHECK(describeClockEventReasons(0x40) == "hw thermal slowdown");
    CHECK(describeClockEventReasons(0x80) == "hw power brake");
    CHECK(describeClockEventReasons(0x100) == "display clock setting");
}

TEST_CASE("clock-event reasons: several bits in bit order, unknown bits kept in hex", "[clocks]")
{
    CHECK(describeClockEventReasons(0x24) == "sw power cap, sw thermal slowdown");
    CHECK(describeClockEventReasons(0xc8) == "hw slowdown, hw thermal slowdown, hw power brake");
    CHECK(describeClockEventReasons(0x200) == "other (0x200)");
    CHECK(describeClockEventReasons(0x1ULL | (1ULL << 40)) == "gpu idle, other (0x10000000000)");
    // Every known bit at once: nine reasons, nothing left over.
    const std::string all = describeClockEventReasons(0x1ff);
    CHECK(all.find("other") == std::string::npos);
    CHECK(std::count(all.begin(), all.end(), ',') == 8);
}

TEST_CASE("gpuClocks never throws and says why when nothing can be read", "[clocks]")
{
    std::map<std::string, std::string> clocks;
    REQUIRE_NOTHROW(clocks = gpuClocks());
    REQUIRE_FALSE(clocks.empty());

    void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (nvml)
        dlclose(nvml);
    if (!nvml) {
        // No driver here: exactly one entry, naming the library that is missing.
        INFO(clocks.begin()->first << " = " << clocks.begin()->second);
        REQUIRE(clocks.size() == 1);
        REQUIRE(clocks.count("gpu_clocks") == 1);
        CHECK(startsWith(clocks["gpu_clocks"], "unavailable: libnvidia-ml.so.1 not found"));
    } else if (clocks.count("gpu_clocks")) {
        // A driver but nothing to read (no device, NVML failing): still one entry with the reason.
        INFO(clocks["gpu_clocks"]);
        CHECK(clocks.size() == 1);
        CHECK(startsWith(clocks["gpu_clocks"], "unavailable: "));
        CHECK(clocks["gpu_clocks"].size() > std::string("unavailable: ").size());
    } else {
        // The GPU machine: every key, each a value or NVML's reason.
        for (const char* key : { "clock_sm_mhz", "clock_mem_mhz", "clock_sm_max_mhz", "clock_mem_max_mhz",
                 "clock_sm_app_mhz", "clock_mem_app_mhz", "gpu_temperature_c", "gpu_power_w", "gpu_power_limit_w",
                 "gpu_pstate", "clock_event_reasons", "clocks_read" }) {
            INFO(key);
            REQUIRE(clocks.count(key) == 1);
            CHECK_FALSE(clocks[key].empty());
        }
        CHECK(clocks["clocks_read"] == "NVML at the end of the run");
        for (const char* key : { "clock_sm_mhz", "clock_mem_mhz", "clock_sm_max_mhz", "clock_mem_max_mhz",
                 "gpu_temperature_c", "gpu_power_w", "gpu_power_limit_w" }) {
            INFO(key << " = " << clocks[key]);
            CHECK((isNumber(clocks[key]) || startsWith(clocks[key], "unavailable: ")));
        }
        if (isNumber(clocks["clock_sm_mhz"]) && isNumber(clocks["clock_sm_max_mhz"])) {
            CHECK(std::stoi(clocks["clock_sm_mhz"]) > 0);
            CHECK(std::stoi(clocks["clock_sm_mhz"]) <= std::stoi(clocks["clock_sm_max_mhz"]));
        }
        CHECK((startsWith(clocks["gpu_pstate"], "P") || clocks["gpu_pstate"] == "unknown"
            || startsWith(clocks["gpu_pstate"], "unavailable: ")));
        std::printf("CLOCKS sm %s/%s MHz, mem %s/%s MHz, %s C, %s/%s W, %s, reasons: %s\n",
            clocks["clock_sm_mhz"].c_str(), clocks["clock_sm_max_mhz"].c_str(), clocks["clock_mem_mhz"].c_str(),
            clocks["clock_mem_max_mhz"].c_str(), clocks["gpu_temperature_c"].c_str(), clocks["gpu_power_w"].c_str(),
            clocks["gpu_power_limit_w"].c_str(), clocks["gpu_pstate"].c_str(), clocks["clock_event_reasons"].c_str());
    }
}

TEST_CASE("gpuClocks loads NVML once: concurrent and repeated calls agree on the outcome", "[clocks]")
{
    std::vector<std::future<std::map<std::string, std::string>>> calls;
    for (int i = 0; i < 8; ++i)
        calls.push_back(std::async(std::launch::async, [] { return gpuClocks(); }));
    const auto first = gpuClocks();
    for (auto& call : calls) {
        const auto clocks = call.get();
        // The readings themselves move (clocks, power); whether and why they could be read does not.
        CHECK(clocks.count("gpu_clocks") == first.count("gpu_clocks"));
        if (first.count("gpu_clocks"))
            CHECK(clocks == first);
        else
            CHECK(clocks.size() == first.size());
    }
}
