// The CPU backend's TrainingSession (cpu.direct: the reference loops; cpu.im2col_gemm: im2col + parallel sgemm for
// the convolutions and linear layers), made by the CPU backend's createTrainingSession.
#pragma once

#include "compute/training/training.h"

#include <memory>
#include <string>

namespace convscope {

// Throws UnsupportedError for a CPU algorithm without a training path (fft, tap_gemm).
std::unique_ptr<TrainingSession> makeCpuTrainingSession(const std::string& algorithm, const SessionOptions& options);

} // namespace convscope
