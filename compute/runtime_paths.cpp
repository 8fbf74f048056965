#include "compute/runtime_paths.h"

#include "convscope_config.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <sstream>

namespace convscope {

namespace {

    std::filesystem::path normal(const std::filesystem::path& p)
    {
        std::error_code ec;
        auto c = std::filesystem::weakly_canonical(p, ec);
        return ec ? p.lexically_normal() : c;
    }

    bool isDir(const std::filesystem::path& p)
    {
        std::error_code ec;
        return !p.empty() && std::filesystem::is_directory(p, ec);
    }

} // namespace

std::filesystem::path executableDir()
{
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path() : exe.parent_path();
}

std::filesystem::path engineLibraryDir()
{
    Dl_info info {};
    if (!dladdr(reinterpret_cast<void*>(&engineLibraryDir), &info) || !info.dli_fname || !*info.dli_fname)
        return {};
    return normal(std::filesystem::absolute(info.dli_fname).parent_path());
}

std::vector<std::filesystem::path> moduleSearchDirs()
{
    std::vector<std::filesystem::path> dirs;
    if (const char* env = std::getenv("CONVSCOPE_MODULE_PATH")) {
        std::stringstream ss(env);
        std::string item;
        while (std::getline(ss, item, ':'))
            if (!item.empty())
                dirs.emplace_back(item);
    }
    if (auto lib = engineLibraryDir(); !lib.empty())
        dirs.push_back(lib);
    if (auto exe = executableDir(); !exe.empty()) {
        dirs.push_back(exe);
        dirs.push_back(exe / CONVSCOPE_REL_MODULE_DIR);
    }
    std::vector<std::filesystem::path> unique;
    for (const auto& d : dirs) {
        auto n = normal(d);
        if (std::find(unique.begin(), unique.end(), n) == unique.end())
            unique.push_back(std::move(n));
    }
    return unique;
}

std::filesystem::path dataDir()
{
    if (const char* env = std::getenv("CONVSCOPE_DATA_DIR"); env && *env)
        return isDir(env) ? normal(env) : std::filesystem::path();
    const auto exe = executableDir();
    if (exe.empty())
        return {};
    const auto dir = normal(exe / CONVSCOPE_REL_DATA_DIR);
    return isDir(dir) ? dir : std::filesystem::path();
}

std::filesystem::path examplesDir()
{
    const auto data = dataDir();
    return isDir(data / "networks") ? data / "networks" : std::filesystem::path();
}

} // namespace convscope
