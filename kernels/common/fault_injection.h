// Fault injection, off by default: a way to make a GPU session hit each failure the profiler must survive, so
// tests (tests/kernels/fault_injection_test.cpp) and a person at the command line can check that the fault is
// reported for the selection that hit it while the other selections finish and the program stays up.
//
// Switched on by SessionOptions::extra["fault_inject"] or, when that is absent, the environment variable
// CONVSCOPE_FAULT_INJECT: a comma-separated list of KIND or KIND@SELECTION, e.g. "oom@cuda.tiled,launch@cudnn.auto".
//   oom          prepare asks cudaMalloc for 1 PiB: the real cudaErrorMemoryAllocation path (OutOfMemoryError)
//   unsupported  prepare refuses the configuration (UnsupportedError), as cuDNN does with NOT_SUPPORTED
//   launch       each timed pass launches a kernel with an impossible block size: a launch error, not sticky
//   poison       each timed pass launches a kernel that writes through a null pointer: cudaErrorIllegalAddress at
//                the pass's synchronisation, a sticky error that leaves the CUDA context unusable for the rest of
//                the process (every GPU backend then reports itself unavailable, with the reason)
// Without @SELECTION the fault applies to every GPU selection. An unknown kind is an InputError.
#pragma once

#include "compute/backend.h"

#include <cuda_runtime_api.h>

#include <string>

namespace convscope::gpu {

enum class Fault { None, OutOfMemory, Unsupported, Launch, Poison };

// The fault configured for this selection ("cuda", "tiled"), or Fault::None.
Fault injectedFault(const std::string& backend, const std::string& algorithm, const SessionOptions& options);

// Called by GpuSessionBase::prepare before it allocates; throws for oom and unsupported.
void injectPrepareFault(Fault fault, const std::string& selection);
// Called by GpuSessionBase::runPass after the input is on the device; enqueues the launch or poison kernel.
void injectPassFault(Fault fault, const std::string& selection, cudaStream_t stream);

} // namespace convscope::gpu
