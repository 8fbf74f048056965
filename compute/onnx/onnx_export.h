// Network → ModelProto: any ConvScope network, weights included, as an ONNX model of opset 17 (ONNX 1.12's newest,
// which onnxruntime and PyTorch read) that ONNX's checker accepts. See compute/onnx_model.h for the contract.
#pragma once

#include "compute/network.h"

#include <string>

namespace onnx {
class ModelProto;
}

namespace convscope::onnx {

inline constexpr int64_t kExportOpset = 17;

// The model for `net` (its parameters are materialised here when they are not yet). Throws InputError naming the
// layer for what ONNX cannot say (avgpool2d's divisor_override), or when the network's shapes do not hold.
::onnx::ModelProto exportModel(const Network& net);
// The same, serialised, after onnx::checker::check_model (a failure there is a bug here: Error).
std::string exportModelBytes(const Network& net);

} // namespace convscope::onnx
