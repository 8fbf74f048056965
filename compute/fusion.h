// The fusion pass behind a "+fused" selection, as the lecture notes teach it:
//   - batch norm folded into the convolution before it: with s = γ / √(σ² + ε),
//       y = γ(w∗x + b − μ)/√(σ² + ε) + β = (s·w)∗x + (s·(b − μ) + β),
//     so the conv keeps its shape with new weights and bias, and the batch-norm layer disappears;
//   - the activation after the convolution (or after the folded batch norm) moved into the convolution's
//     epilogue (Conv2d::fused_activation), when the backend says it can (Backend::fusesActivation);
//   - else the residual add across a skip (ResNet's `out = relu(bn2(conv2(x)) + identity)`), when the backend says
//     it can (Backend::fusesResidual): the conv (after any batch-norm folding) whose output only an `add` of exactly
//     two inputs reads becomes one conv that reads the add's other input, the skip, as its second input
//     (Conv2d::fused_residual; its layer then names two inputs) and computes y = act(conv(x) + b + skip) in its
//     epilogue; the add disappears, and so does an activation right after the add that only reads it and that the
//     backend fuses (else it stays a layer of its own, reading the fused conv). The fused conv stays at the conv's
//     place in the list, so the skip must exist by then: an add whose skip is produced after the conv (a
//     downsample branch listed after the main branch) is not folded into that conv — the downsample conv, listed
//     later, folds it instead, its skip being the main branch. An add listed after other layers moves up to the conv
//     (its readers, and any layer that read "the layer above", then name what they read), except where it, or the
//     activation after it, ends the network (the fused network would end on another layer). A conv whose own
//     activation was fused keeps its add
//     (the epilogue applies one activation, after the add). Whether the sum is rounded once (fused) or twice
//     (unfused, the conv's output stored before the add) is the only difference, within the storage format's
//     tolerance.
// Only conv2d is fused. The fused network has fewer layers; LayerMap says, for every layer of the original
// network, which fused layer holds its time and whether its own output still exists: a folded layer's output
// is produced only at the last layer of its group (the conv's own pre-batch-norm output never exists; nor the
// conv's output before a folded add). The fused network is internal: the network-file writer refuses a fused
// residual conv (a conv2d of two inputs is no file's layer, and the add would be lost).
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
// an activation kind in its convolution epilogue, `canFuseResidual` whether it adds a skip tensor there.
FusedNetwork fuseNetwork(const Network& net, const ShapeReport& shapes,
    const std::function<bool(FusedActivation::Kind)>& canFuse, bool canFuseResidual = false);

// The activation layer spec as an epilogue, or None when `spec` is not an activation.
FusedActivation fusedActivationOf(const LayerSpec& spec);
// The activation layer an epilogue stands for (for backends that run it as their activation op).
LayerSpec activationSpecOf(const FusedActivation& act);

} // namespace convscope
