// Helpers shared by the test suites: random tensors, poisoning, paths to test data and examples.
#pragma once

#include "compute/tensor.h"

#include <cstdint>
#include <filesystem>
#include <string>

namespace convscope::test {

// Fresh uniform(-1, 1) data from a seed.
Tensor randomTensor(const Shape& shape, uint64_t seed);
// Fills with NaN so an element a kernel forgot to write fails the comparison.
void poison(Tensor& t);
std::filesystem::path dataDir(); // tests/data
std::filesystem::path examplesDir(); // resources/networks
std::filesystem::path cliPath(); // the built convscope-cli
// A fresh temporary folder removed at destruction.
struct TempDir {
    TempDir();
    ~TempDir();
    std::filesystem::path path;
};

} // namespace convscope::test
