// Writing a file so that a crash or a full disk never leaves half of it: write a temporary file in the
// same folder, flush, then rename over the target. (The window uses QSaveFile for the same reason.)
#pragma once

#include <filesystem>
#include <string>

namespace convscope {

void writeFileAtomically(const std::filesystem::path& path, const std::string& bytes); // throws Error
std::string readFile(const std::filesystem::path& path, const std::string& what); // throws InputError

} // namespace convscope
