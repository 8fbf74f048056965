// An autoencoder cut in two at a named layer (the lecture's `latent`), and the latent vectors between two inputs:
// what `convscope-cli interpolate` and the window's interpolation strip run.
#pragma once

#include "compute/network.h"
#include "compute/shape.h"
#include "compute/tensor.h"

#include <string>
#include <vector>

namespace convscope {

struct SplitNetwork {
    Network encoder; // the input up to and including the cut layer; its output is the latent
    Network decoder; // every layer after the cut, reading the latent as its input
    Shape latent; // the cut layer's output for one item (batch 1)
    size_t cut = 0; // the cut layer's index in the whole network
};

// Cuts `net` after the layer named `at`. Both halves keep their layers' names, specs and init rules, so their
// parameters are the whole network's. Throws InputError (naming the layer) when no layer has that name, when it is
// the last layer (no decoder), when the network's shapes are invalid, or when a layer after the cut reads a layer
// before it (a skip across the cut: the decoder would need more than the latent).
SplitNetwork splitNetworkAt(const Network& net, const std::string& at);

// The same network for a batch of `batch` items (the input's batch; every shape follows from it).
Network withBatch(Network net, int64_t batch);

// t_k = k / (steps − 1) for k = 0 … steps − 1 (0, 0.1, …, 1 for 11 steps); {0} for one step.
std::vector<double> interpolationTimes(int steps);
// new_z = (1 − t)·z1 + t·z2 for each t, stacked along the batch: [ts.size(), ...]. z1 and z2 are one item each (batch
// 1) of the same shape; throws InputError otherwise.
Tensor interpolateLatents(const Tensor& z1, const Tensor& z2, const std::vector<double>& ts);
// Item `index` of a batch, as a batch-1 tensor; items [first, first + count) stacked.
Tensor batchItem(const Tensor& t, int64_t index);
Tensor stackItems(const std::vector<const Tensor*>& items);

} // namespace convscope
