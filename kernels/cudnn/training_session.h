// The cudnn backend's TrainingSession (issue 33): the training step with every tensor on the device — forward in
// training mode, the loss on the host, the backward through cuDNN's backward calls and cuBLAS, the optimizer's update
// in a kernel of ours — each phase of each layer timed with CUDA events inside an NVTX range named as the CPU's
// ("cudnn.auto · train · L3 conv2d c1 · backward-data"). See training_layers.h for the layer kinds and refusals.
#pragma once

#include "compute/training/training.h"

#include <memory>
#include <string>

namespace convscope::cudnn {

// Throws UnsupportedError for an unknown algorithm, a math mode other than FP32, or an unusable device (naming why).
std::unique_ptr<TrainingSession> makeTrainingSession(const std::string& algorithm, const SessionOptions& options);

} // namespace convscope::cudnn
