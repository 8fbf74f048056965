// Saving a network whose weights live only in memory (an imported ONNX model, init kind "embedded"): each such
// tensor goes to an .npy file in a folder beside the network file ("resnet18.weights/conv1.weight.npy"), and the
// saved layers name those files, so the saved JSON opens on its own and gives the same outputs.
#pragma once

#include "compute/network.h"

#include <filesystem>

namespace convscope {

// Does any layer carry weights that a plain saveNetwork would lose?
bool hasEmbeddedWeights(const Network& net);

// Writes every embedded tensor of `net` as .npy beside `jsonPath` (each file atomically) and returns the network
// with those layers pointing at them (init kind "file", batch norm's four tensors as explicit .npy paths). Layers
// without embedded weights are returned as they are. Throws InputError/Error naming the file on a write failure.
Network externalizeWeights(const Network& net, const std::filesystem::path& jsonPath);

// externalizeWeights, then saveNetwork: the weights are on disk before the JSON that names them replaces the old
// file, so a failure leaves the previous save intact.
void saveNetworkWithWeights(const Network& net, const std::filesystem::path& jsonPath);

} // namespace convscope
