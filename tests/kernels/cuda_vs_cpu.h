// What the cuda backend tests (cuda_backend_test.cpp, cuda_conv2d_test.cpp) share: running a network on cpu.direct
// and on every cuda algorithm with outputs poisoned and compared, the printed seed, random padding, the kernel note.
#pragma once

#include "compute/backend.h"
#include "compute/network.h"
#include "tests/kernels/gpu_test_support.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace convscope::test {

std::shared_ptr<Backend> cudaOrSkip(); // the cuda backend, or null after printing "SKIPPED: <reason>"

// Runs `net` on cpu.direct and on every cuda algorithm (with `extra` session options); compares every layer's output.
void checkAgainstCpu(Backend& cuda, Network net, uint64_t seed, const std::string& what,
    const std::map<std::string, std::string>& extra = {});

// Fresh data every run; the seed is printed so a failure can be replayed with --rng-seed.
uint64_t freshSeed();

Padding2d randomPadding(Rng& r, int64_t maxTop, int64_t maxLeft);

// The note a cuda session gives its only layer (which kernel ran), so a test can tell a fast path was taken.
std::string layerNoteOf(
    Backend& cuda, Network net, const std::string& algorithm, const std::map<std::string, std::string>& extra = {});

} // namespace convscope::test
