// ModelProto → Network (through Debian's libonnx generated classes). See compute/onnx_model.h for the contract.
#pragma once

#include "compute/network.h"
#include "compute/onnx/onnx_tensor.h"

#include <filesystem>
#include <map>
#include <string>

namespace convscope::onnx {

struct ImportOptions {
    int64_t batch = 0; // for a symbolic batch dimension; 0: 1
    // Graph inputs beyond the first bound to constants (ONNX's backend tests feed weights as inputs).
    std::map<std::string, ConstTensor> bound;
};

Network importModel(
    const std::string& bytes, const std::string& what, const std::filesystem::path& modelDir, int64_t batch);
Network importModel(const std::string& bytes, const std::string& what, const std::filesystem::path& modelDir,
    const ImportOptions& options);

std::string supportedOperators();

} // namespace convscope::onnx
