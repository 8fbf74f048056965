// Weights for a network's layers: from each layer's init rule (PyTorch's default initialisation, the seeded rules,
// the classic 3x3 filters) or from .npy files, with the channel counts that shape inference found.
#pragma once

#include "compute/network.h"
#include "compute/shape_inference.h"

namespace convscope {

// Fills every layer's parameter tensors from its init rule or files, using the channel counts shape
// inference found. Throws InputError naming the layer and the key (a weight file of the wrong shape,
// a classic filter on a non-3x3 kernel, ...). Layers with invalid shapes are left empty.
void materializeParameters(Network& net, const ShapeReport& shapes);

} // namespace convscope
