// ONNX models in: an .onnx file opens as a ConvScope network (compute/onnx/ holds the reader, built when
// libonnx-dev was found; CONVSCOPE_WITH_ONNX in the config header).
#pragma once

#include "compute/network.h"

#include <filesystem>
#include <string>

namespace convscope {

// Is ONNX import/export built into this copy? When not, why (one line a person can act on).
bool onnxSupported();
std::string onnxUnsupportedReason();

// Does the path name an ONNX model (by its extension, or by its bytes: a protobuf ModelProto)?
bool isOnnxFile(const std::filesystem::path& path);

// Reads an ONNX model as a network: layers from the nodes (named after them), weights from the initializers
// (init kind "embedded"), the input shape from the graph's first input. A symbolic batch dimension becomes
// `batch` (1 when 0). Throws InputError (exit 2) for a model ConvScope cannot take, naming the node, its index
// and op type and listing what ConvScope takes; never shortens the network. UnsupportedError when this build has
// no ONNX support.
Network importOnnxModel(const std::filesystem::path& path, int64_t batch = 0);
// The same from bytes in memory (tests, the fuzzer); external data resolves against `baseDir`.
Network importOnnxBytes(
    const std::string& bytes, const std::string& what, const std::filesystem::path& baseDir, int64_t batch = 0);

// Writes `net`, weights included, as an ONNX model (opset 17, symbolic batch) that ONNX's checker accepts, atomically
// (nothing half-written on failure). Throws InputError naming the layer for what ONNX cannot say, UnsupportedError
// when this build has no ONNX support.
void exportOnnxModel(const Network& net, const std::filesystem::path& path);
// The model's bytes (tests, the window's export).
std::string exportOnnxBytes(const Network& net);

// The ONNX operators the reader takes, for messages: "Add, AveragePool, BatchNormalization, ...".
std::string onnxSupportedOperators();

} // namespace convscope
