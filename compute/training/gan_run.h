// The DCGAN training step (issue 33, the DCGAN report's loop), as PyTorch's DCGAN tutorial runs it, every phase timed:
//   discriminator step: zero D's gradients; D(real) against label 1; fake = G(z); D(fake) against label 0 (G not
//                       reached: fake is detached); both backward passes summed; D's optimizer step;
//   generator step:     zero G's gradients; D(fake) (D just updated) against label 1; the gradient flows through D
//                       into fake (D's own gradients are discarded) and on through G; G's optimizer step.
// Losses are BCE; a discriminator that ends in a sigmoid is trained without it, on BCE-with-logits, which is the same
// loss and gradient as Sigmoid + BCELoss (PyTorch's tutorial) without the log's clamp, and is put back in the trained
// network. Batch norm runs in training mode in every D pass, so its running statistics move three times a step, as
// in PyTorch. Both networks run on one selection through TrainingSession's phased step (training.h). In fp16 one
// GradScaler spans both optimizers, as PyTorch's recipe for several models and optimizers: every backward runs on its
// loss times the scale, the discriminator's and the generator's updates are each skipped when their own gradients
// overflowed, and the scale is updated once a step, halving when either overflowed (grad_scaler.h).
// Data parallel (GanRunOptions::group): each rank runs the loop on its slice of the batch. D's real-batch backward adds
// to the rank's own sums and its fake-batch backward averages both across the ranks (DDP's no_sync, setGradientSync);
// the generator step's pass through D averages nothing, since D's gradients from it are dropped; G's backward averages
// G's. So each network is all-reduced once a step (PyTorch's recipe with both networks in DDP all-reduces at all four
// backward() calls): the same sums to rounding, half the traffic, and two points a step where the ranks wait.
#pragma once

#include "compute/training/training.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace convscope {

// A batch of `batch` seeded "real" colour images for the discriminator: 1 to 3 filled discs and squares of random
// colours on a random dark background, values in [-1, 1] (the generator's tanh range), [batch, channels, h, w].
// Image i of the batch is drawn from its own generator (seed and first + i), so a rank of a data-parallel run makes
// only its slice of the whole batch (first: the slice's first row), the same images one process makes.
Tensor ganRealImages(int64_t batch, int64_t channels, int64_t height, int64_t width, uint64_t seed, int64_t first = 0);
// A batch of the generator's codes: standard normal values (Box-Muller over ConvScope's seeded generator), of `shape`,
// each row (shape.n of them) from its own generator, as the images.
Tensor ganNoise(const Shape& shape, uint64_t seed, int64_t first = 0);

struct GanRunOptions {
    Selection selection;
    SessionOptions session;
    OptimizerSpec generatorOptimizer, discriminatorOptimizer; // the tutorial's: Adam, lr 2e-4, betas (0.5, 0.999)
    double batchNormMomentum = 0.1;
    int64_t batch = 16;
    int warmup = 1; // untimed steps, after which both sessions reset to the starting weights
    int steps = 10;
    uint64_t seed = 1; // step s draws its real images from seed + s and its codes from seed + s + 1e6
    // Fixed data instead of the generated images and codes (the PyTorch reference check): every step uses these.
    const Tensor* realImages = nullptr;
    const Tensor* noise = nullptr;
    // Data parallel (distributed.h; the cudnn selection built with NCCL), as PyTorch DDP wraps both networks: every
    // rank makes the whole batch's images and codes from the same seed and trains on its slice of `batch`; each
    // backward pass averages its gradients across the ranks, so the updates, FP16's skips and the weights stay the same
    // on every rank; batch norm uses each rank's own batch statistics (DDP without SyncBatchNorm). Null: one process.
    std::shared_ptr<ProcessGroup> group;
    double collectiveTimeoutSeconds = 60;
    // A GPU pair runs each step without waiting until its end (TrainingSession::deferReads: the losses' gradients on
    // the device, every pass's times and D's scores read once a step). True reads them after every pass instead (one
    // synchronisation a pass, the loop as it was before; `gan --sync-each-pass`), to see what those waits cost.
    bool syncEachPass = false;
    std::function<void(int, double, double)> stepDone; // step, loss D, loss G
};

// Milliseconds of one step's phases (each the sum of the layers' times in that pass).
struct GanPhaseMs {
    double dRealForward = 0, dRealBackward = 0; // D on the real batch
    double gForward = 0; // fake = G(z)
    double dFakeForward = 0, dFakeBackward = 0; // D on the detached fake batch
    double dUpdate = 0;
    double gdForward = 0, gdBackward = 0; // the generator step's pass through the updated D
    double gBackward = 0, gUpdate = 0;
    double loss = 0; // the three BCE losses and their gradients
    // Data parallel: the step's all-reduces (every bucket of its two averaging backward passes) and the part of
    // them hidden behind the backward; they overlap the backward phases above and are not added to total().
    double allReduce = 0, allReduceHidden = 0;
    double total() const;
};

struct GanStep {
    // Data parallel: the whole batch's, the mean of the ranks' (each rank's losses are over its slice).
    double lossD = 0; // loss(D(real), 1) + loss(D(fake), 0), as the tutorial's errD
    double lossG = 0; // loss(D(G(z)), 1)
    double dReal = 0, dFake = 0; // mean probability D gives the real and the fake batch
    // FP16: the loss scale the step ran with (0: no loss scaling) and whether each network's update was skipped
    // because one of its summed gradients overflowed (the scale then halves for the next step).
    double lossScale = 0;
    bool dSkipped = false, gSkipped = false;
    GanPhaseMs phases;
    // The whole step on the host clock (copies, the losses, every wait, and under data parallel the all-reduces that
    // the backward did not hide): what a training loop sees; phases.total() is the GPU's work. Making the step's real
    // images and codes on the host (a data loader's work; the PyTorch anchor's real batch is fixed) is dataMs, not in
    // it.
    double wallMs = 0, dataMs = 0;
    std::vector<LayerPhaseMs> generator, discriminator; // per layer, summed over the step's passes
};

struct GanResult {
    Network generator, discriminator; // the trained networks (the discriminator with its sigmoid back)
    ShapeReport generatorShapes, discriminatorShapes;
    GanRunOptions options;
    std::vector<GanStep> steps; // the timed steps
    std::map<std::string, std::string> metadata;
    bool sigmoidFolded = false; // the discriminator's last sigmoid went into the loss
    Tensor lastFake; // the last step's generated batch (data parallel: this rank's slice of it)
    // Data parallel: this rank and the group's size; on rank 0, every rank's timed steps in rank order (rank 0's own
    // first, as `steps` but with this rank's losses) and the largest relative L2 distance between a rank's trained
    // parameters and rank 0's (0 when the ranks stayed equal, as they must).
    int rank = 0, worldSize = 1;
    std::vector<std::vector<GanStep>> rankSteps;
    double maxParamRelL2 = 0;
    int64_t localBatch() const { return options.batch / worldSize; }
};

// Throws InputError for networks that do not fit together (G's output is not D's input, D does not give one score
// per image), a batch or step count out of range, or a non-finite loss (naming the step and the phase);
// UnsupportedError for a selection that cannot train or has no phased step.
GanResult trainGan(Network generator, Network discriminator, const GanRunOptions& options);

// Data parallel, rank 0: every rank's steps (losses and times) and trained parameters gathered, `steps`' losses made
// the ranks' mean, rankSteps and maxParamRelL2 filled; the other ranks send theirs and return (gan_distributed.cpp).
void gatherGanRanks(GanResult& result, ProcessGroup& group);

// Reports: the phases' median / min / mean over the timed steps and the losses of every step.
std::string ganReportMarkdown(const GanResult& result);
std::string ganReportJson(const GanResult& result);
std::string ganReportCsv(const GanResult& result);
void writeGanReport(const std::filesystem::path& path, const GanResult& result); // by extension, atomically
// FP16: "loss scale A (step 1) → B (step N); updates skipped (a gradient overflowed FP16): the discriminator's at k of
// N steps, the generator's at j" — empty without loss scaling.
std::string ganLossScaleLine(const GanResult& result);
// Data parallel: "data parallel: 2 ranks, a batch of 64 split 32 per rank; all-reduce A ms a step (median, D's fake
// pass and G's), B of it hidden behind the backward; step median by rank: …; the ranks' parameters differ by D" — empty
// on one process.
std::string ganDataParallelLine(const GanResult& result);

} // namespace convscope
