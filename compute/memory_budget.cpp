#include "compute/memory_budget.h"

#include "compute/error.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace convscope {

namespace {
    std::atomic<int64_t> g_budget { 0 }; // 0: not set

    int64_t defaultBudget()
    {
        if (const char* env = std::getenv("CONVSCOPE_MEMORY_BUDGET"); env && *env) {
            try {
                return parseMemorySize(env, "CONVSCOPE_MEMORY_BUDGET");
            } catch (const InputError& e) {
                // A broken environment must not stop the program: say so once and use the default.
                static std::atomic<bool> warned { false };
                if (!warned.exchange(true))
                    std::fprintf(stderr, "convscope: %s; using half of the physical memory\n", e.what());
            }
        }
        return int64_t(double(physicalMemory()) * kDefaultHostMemoryShare);
    }
} // namespace

int64_t physicalMemory()
{
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? int64_t(pages) * int64_t(size) : int64_t(8) << 30;
}

int64_t hostMemoryBudget()
{
    const int64_t set = g_budget.load();
    return set > 0 ? set : defaultBudget();
}

void setHostMemoryBudget(int64_t bytes) { g_budget.store(bytes > 0 ? bytes : 0); }

int64_t parseMemorySize(const std::string& text, const std::string& what)
{
    const auto bad = [&]() -> InputError {
        return InputError(
            what + ": \"" + text + "\" is not a memory size (write it like 8G, 512MiB, 1.5GiB, 4000000000 or 25%)");
    };
    if (text.empty() || text.size() > 64)
        throw bad();
    const char* begin = text.c_str();
    char* end = nullptr;
    const double value = std::strtod(begin, &end);
    if (end == begin || !std::isfinite(value) || value <= 0 || (!(*begin >= '0' && *begin <= '9') && *begin != '.'))
        throw bad();
    std::string unit(end);
    while (!unit.empty() && unit.front() == ' ')
        unit.erase(0, 1);
    double bytes = 0;
    if (unit == "%") {
        if (value > 100)
            throw bad();
        bytes = double(physicalMemory()) * value / 100.0;
    } else {
        double scale = 0;
        static const struct {
            const char* names[4];
            double scale;
        } units[] = {
            { { "", "B", "bytes", nullptr }, 1.0 },
            { { "K", "KB", "KiB", "k" }, 1024.0 },
            { { "M", "MB", "MiB", nullptr }, 1024.0 * 1024 },
            { { "G", "GB", "GiB", nullptr }, 1024.0 * 1024 * 1024 },
            { { "T", "TB", "TiB", nullptr }, 1024.0 * 1024 * 1024 * 1024 },
        };
        for (const auto& u : units)
            for (const char* n : u.names)
                if (n && unit == n)
                    scale = u.scale;
        if (scale == 0)
            throw bad();
        bytes = value * scale;
    }
    if (!(bytes >= 1) || bytes > 9.0e18)
        throw bad();
    return int64_t(bytes);
}

std::string formatBytes(int64_t bytes)
{
    char buf[48];
    const double b = double(bytes);
    if (bytes < 1024)
        std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
    else if (b < 1024.0 * 1024)
        std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
    else if (b < 1024.0 * 1024 * 1024)
        std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
    else if (b < 1024.0 * 1024 * 1024 * 1024)
        std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    else
        std::snprintf(buf, sizeof buf, "%.2f TiB", b / (1024.0 * 1024 * 1024 * 1024));
    return buf;
}

void checkHostAllocation(int64_t bytes, const std::string& what)
{
    if (bytes < 0)
        throw InputError(what + ": negative size");
    const int64_t budget = hostMemoryBudget();
    if (bytes > budget)
        throw InputError(what + " would need " + formatBytes(bytes) + " of host memory but the memory budget is "
            + formatBytes(budget)
            + " (a setting: convscope-cli --memory-budget, the environment variable CONVSCOPE_MEMORY_BUDGET, "
              "default half of the physical memory)");
}

} // namespace convscope
