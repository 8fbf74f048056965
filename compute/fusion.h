// The fusion pass behind a "+fused" selection, as the lecture notes teach it:
//   - batch norm folded into the convolution before it: with s = γ / √(σ² + ε),
//       y = γ(w∗x + b − μ)/√(σ² + ε) + β = (s·w)∗x + (s·(b − μ) + β),
//     so the conv keeps its shape with new weights and bias, and the batch-norm layer disappears;
//   - the activation after the convolution (or after the folded batch norm) moved into the convolution's
//     epilogue (Conv2d::fused_activation), when the backend says it can (Backend::fusesActivation).
// Only conv2d is fused. The fused network has fewer layers; LayerMap says, for every layer of the original
// network, which fused layer holds its time and whether its own output still exists: a folded layer's output
// is produced only at the last layer of its group (the conv's own pre-batch-norm output never exists).
#pragma once

#include "compute/layer_spec.h"
#include "compute/network.h"
#include "compute/shape_inference.h"

#include <functional>
#include <string>
#include <vector>

namespace convscope {

struct FusedLayerMap {
    size_t fusedIndex = 0; // the layer of the fused network that computes this one
    bool head = true; // this original layer is that fused layer's first: its time is reported here
    bool hasOutput = true; // this original layer's output equals the fused layer's output
    std::string note; // "batch norm folded into layer 0 (c1)", ...
};

struct FusedNetwork {
    Network net; // parameters materialised (folded weights are new tensors; the original's are untouched)
    ShapeReport shapes;
    std::vector<FusedLayerMap> map; // one per original layer
};

// `net` must have materialised parameters and `shapes` must be ok. `canFuse` says whether the backend applies
// an activation kind in its convolution epilogue.
FusedNetwork fuseNetwork(
    const Network& net, const ShapeReport& shapes, const std::function<bool(FusedActivation::Kind)>& canFuse);

// The activation layer spec as an epilogue, or None when `spec` is not an activation.
FusedActivation fusedActivationOf(const LayerSpec& spec);
// The activation layer an epilogue stands for (for backends that run it as their activation op).
LayerSpec activationSpecOf(const FusedActivation& act);

} // namespace convscope
