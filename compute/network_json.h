// The network file (docs/ARCHITECTURE.md §4): {"format": "convscope-network", "version": 1, ...}. Load, save and a
// lossless round trip. Unknown keys, wrong types, unknown layer types and impossible values are
// InputErrors that name the file, the layer (index and name) and the key.
#pragma once

#include "compute/network.h"

#include <filesystem>
#include <string>

namespace convscope {

Network loadNetwork(const std::filesystem::path& path); // sets baseDir to the file's folder
Network parseNetwork(const std::string& json, const std::string& what, const std::filesystem::path& baseDir);
// What a file that is not a network file looks like ("a PNG image ...", "an ONNX model (protobuf)", "a binary
// file"), from its first bytes; empty when it may be a network file (text).
std::string describeNonNetworkFile(const std::string& bytes);
std::string serializeNetwork(const Network& net); // pretty-printed, stable key order
// Written atomically (temporary file in the same folder, then rename): a failed save leaves the old file.
void saveNetwork(const Network& net, const std::filesystem::path& path);

} // namespace convscope
