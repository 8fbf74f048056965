// Writing a file so that a crash or a full disk never leaves half of it: write a temporary file in the
// same folder, flush, then rename over the target. (The window uses QSaveFile for the same reason.)
#pragma once

#include <filesystem>
#include <string>

namespace convscope {

void writeFileAtomically(const std::filesystem::path& path, const std::string& bytes); // throws Error
std::string readFile(const std::filesystem::path& path, const std::string& what); // throws InputError
// A layer name as a file name: letters, digits, '-', '_' and '.' kept, anything else (the '/' of ONNX node names
// such as "/layer1/layer1.0/conv1/Conv") as '_'; never empty, never starting with '.'.
std::string safeFileName(const std::string& name);

} // namespace convscope
