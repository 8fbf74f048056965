// What the GPU backends' training tests share (cudnn_training_test.cpp, cuda_training_test.cpp, cudnn_gan_test.cpp,
// cuda_gan_test.cpp): a case (a network, its input and target), stepping a GPU session side by side with cpu.direct's
// and comparing everything after each step, PyTorch's reference cases (tests/data/training) on a GPU session, the
// refusals, and (gpu_gan_support.cpp) the phased step against step() and the DCGAN reference. Every failure names the
// selection, the step, the layer and the tensor; without the backend's device every case prints "SKIPPED: <reason>".
#pragma once

#include "compute/backend.h"
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
// `session` is the GPU session's (its math mode); cpu.direct runs FP32.
// `reference`: cpu.direct's own options (FP32 by default; the cuda session's fp16 and bf16 are held to cpu.direct's).
void trainSideBySide(const std::string& backend, const TrainCase& c, const OptimizerSpec& optimizer,
    const std::string& algorithm, int steps, StepTolerance tolerance, const SessionOptions& session = {},
    const SessionOptions& reference = {});

OptimizerSpec sgdMomentumForTests(); // lr 0.05, momentum 0.9, weight decay 1e-3
OptimizerSpec adamForTests(); // lr 1e-3, weight decay 1e-4

// One step of every PyTorch reference case in tests/data/training on <backend>.<algorithm>: the loss, the input
// gradient, every parameter's gradient and the parameters after the step within `tolerance` relative L2. A case the
// session refuses must be refused with UnsupportedError naming a layer; it is printed and counted out. Returns the
// names of the cases trained.
std::vector<std::string> runTorchReferenceCases(
    const std::string& backend, const std::string& algorithm, double tolerance);

// prepare() of the network `json` (MSE, default optimizer) on <backend>.<algorithm> throws UnsupportedError whose
// message names `layer` ("layer 1 (up, resize)").
void expectTrainingRefused(
    Backend& backend, const std::string& algorithm, const std::string& json, const std::string& layer);

// softmax and log_softmax along H, W and the batch after a convolution, then a linear layer: the case both GPU
// sessions are held to cpu.direct on (c1 has no bias: log_softmax over H cancels a per-channel bias exactly, so its
// true gradient is 0 and Adam would turn each backend's rounding noise into full-size steps of either sign).
Network softmaxAxesNetwork(const std::string& name);

// The step's loss on the device (kernels/common/loss_kernels.cuh) on <backend>.<algorithm>: cross-entropy over 20
// rows (three blocks of rows), MSE and BCE-with-logits over 5120 outputs (20 blocks) match cpu.direct's loss and
// gradients over two steps; a NaN in the input makes the step throw naming the step and "the loss", and no
// parameter changes (the optimizer kernels read the loss's flag); a finite loss whose backward overflows names the
// layer whose gradient is not finite, as cpu.direct does.
void checkDeviceLosses(const std::string& backend, const std::string& algorithm, StepTolerance tolerance);

// Relative L2 of `value` against `reference` below `tolerance`, the message naming `what`.
void expectTrainClose(const Tensor& value, const Tensor& reference, const std::string& what, double tolerance);
// Every layer's weight, bias and running statistics of `value` against `reference`'s (the same layers), each within
// `tolerance`; the messages read "<who>: c1.weight <when>".
void expectSameParameters(
    const Network& value, const Network& reference, const std::string& who, const std::string& when, double tolerance);

// gpu_gan_support.cpp
// The phased step (zeroGradients, forwardPass, computeLoss on the host, backwardPass, updateParameters: training.h)
// equals step() on <backend>.<algorithm>, two sessions from the same weights with Adam for `steps` steps: each step's
// loss, input gradient and parameter gradients, which phases each pass timed, and the parameters and running
// statistics after the steps, within `tolerance` relative L2.
void checkPhasedEqualsStep(
    const std::string& backend, const std::string& algorithm, const TrainCase& c, int steps, double tolerance);
// The DCGAN loop (compute/training/gan_run.h) on <backend>.<algorithm>: one warm-up step, a reset, and the two steps
// of tests/data/training/dcgan (tools/make_gan_reference.py, PyTorch in float64) give PyTorch's losses and both
// networks' parameters and batch-norm statistics within `tolerance` (relative L2; every phase timed).
void checkDcganReference(const std::string& backend, const std::string& algorithm, double tolerance);
// The toy DCGAN pair's networks (tests/data/training/dcgan/<name>.json: "generator", "discriminator") as a case
// trained with MSE toward a random target.
TrainCase dcganCase(const std::string& name, uint64_t seed);

} // namespace convscope::test
