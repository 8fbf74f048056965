// The network's input tensor from its InputSpec: a built-in sample picture, seeded random data, an image file or an
// .npy array.
#pragma once

#include "compute/network.h"
#include "compute/tensor.h"

#include <filesystem>

namespace convscope {

// The input tensor the network's InputSpec describes (throws InputError naming the source).
Tensor loadInput(const InputSpec& input, const std::filesystem::path& baseDir);

} // namespace convscope
