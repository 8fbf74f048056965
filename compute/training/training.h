// The training step (issue 33): forward with what the backward needs kept, a loss, the backward, an optimizer's
// update, every phase of every layer timed apart. Semantics are PyTorch's autograd and torch.optim's exactly.
//
// A backend that can train makes a TrainingSession through Backend::createTrainingSession (compute/backend.h); the
// CPU backend is the first (compute/training/cpu_training_session.cpp, for cpu.direct and the fast CPU algorithms).
// A GPU backend plugs in the same way: its module's Backend overrides createTrainingSession and returns a session
// that keeps the tensors on the device; trainNetwork() (train_run.h) times and reports it like the CPU's. A CPU library
// (the onednn module) plugs its own ops into the CPU's session instead (host_layer_ops.h).
#pragma once

#include "compute/backend.h"
#include "compute/network.h"
#include "compute/shape_inference.h"
#include "compute/tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace convscope {

// PyTorch's losses with reduction='mean':
//   CrossEntropy   nn.CrossEntropyLoss on logits [N, C] (or [N, C, 1, 1]) with class indices [N] (integers in [0, C))
//   MSE            nn.MSELoss, target of the output's shape
//   BCEWithLogits  nn.BCEWithLogitsLoss, target of the output's shape (values in [0, 1])
enum class LossKind { CrossEntropy, MSE, BCEWithLogits };
LossKind parseLossKind(const std::string& text); // "ce", "mse", "bce"; throws InputError
std::string lossKindName(LossKind kind); // "ce", "mse", "bce"
// Throws InputError naming the shapes when a target of `targetDims` (as its .npy gives them) does not fit the loss and
// the network's output, or (ce) holds a value that is not a class index of the output.
void checkLossTarget(LossKind kind, const Shape& output, const std::vector<int64_t>& targetDims);
void checkClassIndices(const Shape& output, const Tensor& target);
// The loss (computed in double) and its gradient with respect to `output` (gradient gets output's shape).
double computeLoss(LossKind kind, const Tensor& output, const Tensor& target, Tensor& gradient);

// torch.optim.SGD (dampening 0, nesterov off) and torch.optim.Adam (bias-corrected, eps added outside the square
// root, amsgrad off), both with L2 weight_decay added to the gradient as PyTorch does.
struct OptimizerSpec {
    enum class Kind { SGD, Adam };
    Kind kind = Kind::SGD;
    double lr = 0.01;
    double momentum = 0; // SGD
    double weightDecay = 0;
    double beta1 = 0.9, beta2 = 0.999, eps = 1e-8; // Adam
};
OptimizerSpec::Kind parseOptimizerKind(const std::string& text); // "sgd", "adam"; throws InputError
// Throws InputError for a learning rate, momentum, beta, eps or weight decay that is not a finite number in range.
void checkOptimizer(const OptimizerSpec& spec);

// One parameter tensor's optimizer state and its update (the CPU's; a GPU backend keeps its own on the device).
class ParameterUpdate {
public:
    ParameterUpdate(const OptimizerSpec& spec, int64_t count);
    // param -= the optimizer's step for `grad`; step counts from 1 (Adam's bias correction).
    void apply(float* param, const float* grad, int64_t step);
    void reset(); // as a freshly made optimizer (zero moments, no momentum buffer)

private:
    OptimizerSpec m_spec;
    std::vector<double> m_first, m_second; // SGD: momentum buffer in m_first; Adam: exp_avg, exp_avg_sq
    bool m_started = false;
};

class ProcessGroup; // distributed.h

struct TrainingOptions {
    LossKind loss = LossKind::CrossEntropy;
    OptimizerSpec optimizer;
    double batchNormMomentum = 0.1; // PyTorch's default
    uint64_t dropoutSeed = 1; // step s draws its masks from dropoutSeed + s
    bool inputGradient = false; // also compute ∂L/∂input (the first layer's backward-data); else it is skipped
    // The caller passes the same input and target at every step (trainNetwork: one batch, --steps times). The GPU
    // sessions then upload them at the first step only and keep them on the device, as a training loop keeps a
    // resident batch (and as the PyTorch anchor does); a changed input or target must not be passed with this set.
    bool sameInputEveryStep = false;
    // Data parallel (distributed.h): this process is one rank of the group; the session all-reduces (averages) the
    // gradients across the ranks, each of which trains on its slice of the batch. Null: one process.
    std::shared_ptr<ProcessGroup> group;
    double collectiveTimeoutSeconds = 60; // NCCL's setup and every step's all-reduce end within this, or fail
};

// "layer 3 (c1, conv2d)": how a training session names a layer in its messages.
std::string trainingLayerLabel(const Network& net, size_t i);

// Dropout's mask in training, the same on every backend: layer `layer` at step `step` draws from ConvScope's seeded
// generator (compute/random.h) seeded with dropoutMaskSeed, one uniform per element in order, 0 where it is below p,
// else 1 / (1 − p). `mask` keeps its size.
uint64_t dropoutMaskSeed(uint64_t dropoutSeed, int64_t step, size_t layer);
void drawDropoutMask(double p, uint64_t seed, std::vector<float>& mask);

// Milliseconds of one layer's phases in one step; -1 where the phase does not exist for the layer (no weights: no
// backward-weights or update; the first layer's backward-data unless the input gradient is asked for).
struct LayerPhaseMs {
    double forward = 0, backwardData = -1, backwardWeights = -1, update = -1;
};

// Data parallel: one bucket's all-reduce in one step, on the session's communication stream. Offsets are from the
// start of the backward on the compute stream (CUDA events on both streams); hidden is the part of the all-reduce
// that ran while the backward was still running, the rest (allReduceMs − hiddenMs) is exposed.
struct BucketTiming {
    size_t firstLayer = 0, lastLayer = 0; // the highest and the lowest layer index in the bucket
    int64_t bytes = 0;
    double startMs = 0, allReduceMs = 0, hiddenMs = 0;
};

// One call of a deferred phased step (TrainingSession::deferReads), as collectPasses returns it.
struct DeferredPass {
    enum class Kind { Forward, Loss, Backward, Update };
    Kind kind = Kind::Forward;
    std::vector<LayerPhaseMs> times; // Forward, Backward, Update: the layers' phases, as the per-pass calls fill them
    Tensor logits; // Loss: the output it read, FP32
    double lossMs = 0; // Loss: its kernels
    bool skipped = false; // Update: FP16 skipped it (a gradient overflowed)
    std::vector<BucketTiming> buckets; // Backward under data parallel: its all-reduces (the collect's last such pass)
};

struct StepResult {
    double loss = 0; // data parallel: the mean of the ranks' losses (the whole batch's loss)
    double lossMs = 0; // the loss and its gradient
    std::vector<LayerPhaseMs> layers;
    std::vector<BucketTiming> buckets; // data parallel only, in launch order
    double backwardMs = -1; // data parallel: from the first backward op to the last (compute stream)
    double wallMs = -1; // the whole step() call on the host clock (trainNetwork): gaps and waits included
    // FP16 mixed precision (torch.cuda.amp.GradScaler's rule): the loss scale this step ran with (0: no loss
    // scaling), and whether a gradient overflowed, so the update was skipped and the scale halved.
    double lossScale = 0;
    bool skipped = false;
};

// The trainable parameters of one layer, in PyTorch's state_dict order and names.
struct ParameterRef {
    size_t layer;
    std::string name; // "weight", "bias" (batch norm's running statistics are buffers, not parameters)
};

class TrainingSession {
public:
    virtual ~TrainingSession() = default;
    // Untimed: copies the network's parameters (materialised) into the session's own, allocates every buffer. Throws
    // UnsupportedError naming the kind and the layer for a layer this backend cannot train, InputError for a network
    // with no trainable parameter.
    virtual void prepare(const Network& net, const ShapeReport& shapes, const TrainingOptions& options) = 0;
    // One step: forward, loss, backward, update. `step` counts from 1. Throws InputError naming the step and the
    // first layer (in backward order) whose gradient is not finite when the loss or a gradient is NaN or infinite.
    virtual StepResult step(const Tensor& input, const Tensor& target, int64_t step) = 0;
    // Back to the parameters, running statistics and optimizer state prepare() started from (after warm-up steps).
    virtual void reset() = 0;
    // The network with the session's current parameters and running statistics (new tensors; the layers' init
    // rules unchanged).
    virtual Network trainedNetwork() const = 0;
    // Host copies of the last step's gradients: of parameter `ref`, and (with inputGradient) of the input.
    virtual Tensor parameterGradient(const ParameterRef& ref) const = 0;
    virtual Tensor inputGradient() const = 0;
    virtual std::vector<ParameterRef> parameters() const = 0;
    virtual std::map<std::string, std::string> metadata() const { return {}; }

    // The phased step, for loops that are not one network under one loss (the DCGAN pair, gan_run.h), as PyTorch's
    // zero_grad / forward / backward / optimizer.step: forwardPass runs the training-mode forward, keeps what the
    // backward needs and returns the output; backwardPass takes the gradient of the output, computes every layer's
    // gradients (and the input's with TrainingOptions::inputGradient) and ADDS the parameter gradients to sums that
    // zeroGradients clears, so two passes before one update accumulate as loss.backward() twice does;
    // updateParameters applies the optimizer to those sums and returns whether it did (false: FP16 skipped it, below).
    // Each fills `times` (one per layer) with its own phases.
    // The default throws UnsupportedError: a backend that only has step() cannot run such a loop.
    virtual Tensor forwardPass(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times);
    virtual void zeroGradients();
    virtual void backwardPass(const Tensor& outputGradient, int64_t step, std::vector<LayerPhaseMs>& times);
    virtual bool updateParameters(int64_t step, std::vector<LayerPhaseMs>& times);
    // FP16 in the phased step, as torch.amp.GradScaler with one scaler across the loop's optimizers (grad_scaler.h):
    // lossScale() is the scale the session's math starts from (65536, or --option loss_scale=S), 0 when its math mode
    // has no loss scaling (the default). The loop owns the scaler: it calls setLossScale with the scaler's scale before
    // a step's passes and passes backwardPass output gradients multiplied by it (scaler.scale(loss).backward()); the
    // backward then runs whole whatever overflows, and updateParameters divides the sums by the scale (unscale_) or,
    // when one is not finite, changes nothing and returns false (scaler.step skipping optimizer.step, which Adam's
    // bias correction does not count). parameterGradient and inputGradient return the gradients divided by the scale.
    virtual double lossScale() const { return 0; }
    virtual void setLossScale(double /*scale*/) { }
    // Handing tensors between two sessions of one loop without the host (the DCGAN loop: G's output is D's input, D's
    // input gradient is G's output gradient). handsOffTo(other): whether this session can read `other`'s tensors where
    // they lie (two GPU sessions of one backend, device and storage type); then
    //   forwardPassResident: forwardPass, its output left on the device (nothing downloaded; lastOutput() gets it);
    //   forwardPassOn(producer): forwardPass on `producer`'s last forward output;
    //   backwardPassOn(consumer): backwardPass from `consumer`'s last input gradient (TrainingOptions::inputGradient
    //     set there), as it lies: under FP16 it carries the loss scale both sessions run with (the loop sets both).
    // The defaults: handsOffTo false, the others throw UnsupportedError (the loop then goes through the host).
    virtual bool handsOffTo(const TrainingSession& /*other*/) const { return false; }
    virtual void forwardPassResident(const Tensor& input, int64_t step, std::vector<LayerPhaseMs>& times);
    virtual Tensor forwardPassOn(const TrainingSession& producer, int64_t step, std::vector<LayerPhaseMs>& times);
    virtual void backwardPassOn(const TrainingSession& consumer, int64_t step, std::vector<LayerPhaseMs>& times);
    virtual Tensor lastOutput() const; // the last forward pass's output, on the host
    // Whether prepare() accepts TrainingOptions::group with more than one rank (the cudnn session built with NCCL).
    // Data parallel covers step() and the phased step alike: every backwardPass averages the pass's gradients across
    // the ranks (PyTorch DDP's all-reduce at every backward()) before they are added to the sums.
    virtual bool dataParallel() const { return false; }
    // Data parallel: the last backwardPass's all-reduces, one per bucket, as StepResult::buckets (empty otherwise, and
    // after a pass that did not synchronise).
    virtual std::vector<BucketTiming> passBuckets() const { return {}; }
    // Data parallel in the phased step, as PyTorch DDP's no_sync(): with false, the backward passes that follow add
    // this rank's own gradients to the sums and talk to no other rank; the next pass with true (the default) averages
    // the sums so far together with its own gradients, in the same buckets. The sums before an update are then the
    // ranks' average as with every pass synchronised (to rounding), with fewer all-reduces and fewer points where the
    // ranks wait for each other. An unsynchronised pass checks its gradients on this rank only. No effect without data
    // parallel.
    virtual void setGradientSync(bool /*sync*/) { }
    // The phased step read once (the DCGAN loop on a GPU pair): deferReads(true) returns whether the session defers
    // (the GPU sessions; false, changing nothing, elsewhere). Then no call waits for its work: forwardPass* return an
    // empty tensor, `times` comes back empty, updateParameters returns true; labelLoss(label) puts the gradient of
    // BCE-with-logits of the last output against `label` (times the loss scale) where backwardPassFromLoss reads it,
    // without the host; collectPasses(step) waits once (and for the ranks, within the collective timeout) and returns
    // every call's record in order. It throws InputError, as the passes would have, for a gradient that is not finite
    // (naming the step and the first layer; the update after it was skipped on the device). One update a collect
    // under FP16 (its skip is known only then). deferReads(false) goes back to the per-pass calls.
    virtual bool deferReads(bool /*on*/) { return false; }
    virtual void labelLoss(float label);
    virtual void backwardPassFromLoss(int64_t step, std::vector<LayerPhaseMs>& times);
    virtual std::vector<DeferredPass> collectPasses(int64_t step);
};

// The first layer of the network that the CPU's training cannot run, as the message train refuses with
// ("layer 4 (c1, conv2d): a fused activation is unsupported in training ..."), or empty when every layer can train
// there. Every layer kind has its CPU backward; what is refused is a convolution the fusion pass changed.
std::string cpuTrainingRefusal(const Network& net);

} // namespace convscope
