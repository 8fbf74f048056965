// What the GPU backend tests share: skipping without a usable backend, and fresh random parameters in
// PyTorch's layouts for every layer of a network.
#pragma once

#include "compute/backend.h"
#include "compute/network.h"
#include "compute/shape_inference.h"

#include <memory>
#include <random>
#include <string>

namespace convscope::test {

// The backend, or null after printing "SKIPPED: <reason>" (CTest then reports the test skipped).
std::shared_ptr<Backend> backendOrSkip(const std::string& name);
// uniform(-1, 1) data from a seed; `positive` makes every value |x| + 0.1 (variances).
std::shared_ptr<const Tensor> param(const Shape& s, uint64_t seed, bool positive = false);
Shape vec(int64_t c); // a 1-D parameter [C] as stored: {C, 1, 1, 1}
// A network of one layer on an input of shape `in` (random source), for the sweeps.
Network oneLayer(const Shape& in, LayerSpec spec);

// Integers for randomized sweeps; the tests print the seed so a failure can be replayed.
struct Rng {
    std::mt19937_64 gen;
    explicit Rng(uint64_t seed)
        : gen(seed)
    {
    }
    int64_t operator()(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); }
    bool coin() { return (*this)(0, 1) == 1; }
};

// Fresh random parameters for every layer (batch norm without affine gets weight 1 and bias 0).
void randomParameters(Network& net, const ShapeReport& shapes, uint64_t seed);

} // namespace convscope::test
