// TrainingSession's phased step for a backend that has only step(): refused, naming the backend, so that a GAN loop
// on it fails with a message instead of training something else; and the device hand-off for one that has none.
#include "compute/error.h"
#include "compute/training/training.h"

namespace convscope {

namespace {
    [[noreturn]] void refusePhased(const TrainingSession& session)
    {
        const auto meta = session.metadata();
        const auto it = meta.find("algorithm");
        throw UnsupportedError((it != meta.end() ? it->second : std::string("this backend"))
            + ": the phased training step (forward, backward, update apart, which a GAN needs) is unsupported here; "
              "train on cpu.direct, cpu.im2col_gemm, onednn.auto, cudnn.auto, cuda.implicit_gemm or cuda.direct");
    }
} // namespace

Tensor TrainingSession::forwardPass(const Tensor&, int64_t, std::vector<LayerPhaseMs>&) { refusePhased(*this); }
void TrainingSession::zeroGradients() { refusePhased(*this); }
void TrainingSession::backwardPass(const Tensor&, int64_t, std::vector<LayerPhaseMs>&) { refusePhased(*this); }
bool TrainingSession::updateParameters(int64_t, std::vector<LayerPhaseMs>&) { refusePhased(*this); }

namespace {
    [[noreturn]] void refuseHandOff()
    {
        throw UnsupportedError("this session cannot hand tensors to another on the device (handsOffTo is false): "
                               "pass them through the host with forwardPass and backwardPass");
    }
} // namespace

void TrainingSession::forwardPassResident(const Tensor&, int64_t, std::vector<LayerPhaseMs>&) { refuseHandOff(); }
Tensor TrainingSession::forwardPassOn(const TrainingSession&, int64_t, std::vector<LayerPhaseMs>&) { refuseHandOff(); }
void TrainingSession::backwardPassOn(const TrainingSession&, int64_t, std::vector<LayerPhaseMs>&) { refuseHandOff(); }
Tensor TrainingSession::lastOutput() const { refuseHandOff(); }

namespace {
    [[noreturn]] void refuseDeferred()
    {
        throw UnsupportedError("this session runs every pass to its end (deferReads is false): compute the loss from "
                               "forwardPass's output and pass its gradient to backwardPass");
    }
} // namespace

void TrainingSession::labelLoss(float) { refuseDeferred(); }
void TrainingSession::backwardPassFromLoss(int64_t, std::vector<LayerPhaseMs>&) { refuseDeferred(); }
std::vector<DeferredPass> TrainingSession::collectPasses(int64_t) { refuseDeferred(); }

} // namespace convscope
