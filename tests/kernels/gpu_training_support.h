// What the GPU backends' training tests share (cudnn_training_test.cpp, cuda_training_test.cpp): a case (a network,
// its input and target), stepping a GPU session side by side with cpu.direct's and comparing everything after each
// step, and PyTorch's reference cases (tests/data/training) on a GPU session. Every failure names the selection, the
// step, the layer and the tensor; without the backend's device every case prints "SKIPPED: <reason>".
#pragma once

#include "compute/network.h"
#include "compute/shape_inference.h"
#include "compute/tensor.h"
#include "compute/training/training.h"

#include <string>

namespace convscope::test {

struct TrainCase {
    Network net;
    ShapeReport shapes;
    Tensor input, target;
    LossKind loss = LossKind::CrossEntropy;
};

// The network's parameters materialised, a random input of `seed`, and a target for the loss (class indices for
// cross-entropy, a random tensor of the output's shape otherwise).
TrainCase makeTrainCase(Network net, uint64_t seed, LossKind loss = LossKind::CrossEntropy);

// Relative L2 of a against b in double; where b is (nearly) zero the absolute L2 counts instead.
double trainRelDiff(const Tensor& a, const Tensor& b);

struct StepTolerance {
    double first; // the first step's loss and gradients
    double later; // later steps and the trained parameters (each trajectory has its own rounding by then)
};

// Steps cpu.direct and <backend>.<algorithm> side by side from the same weights `steps` times and compares each
// step's loss, phase times, input gradient and parameter gradients, then the parameters and running statistics, then
// that reset() repeats the first step's loss.
void trainSideBySide(const std::string& backend, const TrainCase& c, const OptimizerSpec& optimizer,
    const std::string& algorithm, int steps, StepTolerance tolerance);

OptimizerSpec sgdMomentumForTests(); // lr 0.05, momentum 0.9, weight decay 1e-3
OptimizerSpec adamForTests(); // lr 1e-3, weight decay 1e-4

// One step of every PyTorch reference case in tests/data/training on <backend>.<algorithm>: the loss, the input
// gradient, every parameter's gradient and the parameters after the step within `tolerance` relative L2. A case the
// session refuses must be refused with UnsupportedError naming a layer; it is printed and counted out. Returns the
// names of the cases trained.
std::vector<std::string> runTorchReferenceCases(
    const std::string& backend, const std::string& algorithm, double tolerance);

} // namespace convscope::test
