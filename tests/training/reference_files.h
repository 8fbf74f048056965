// Reading PyTorch's reference files in the training tests (torch_reference_test.cpp, gan_test.cpp): .npy files as
// tensors, and the relative L2 that tolerates gradients that are zero by the mathematics.
#pragma once

#include "compute/npy.h"
#include "tests/training/gradcheck.h"

#include <filesystem>

namespace convscope::test {

inline Tensor fromNpy(const std::filesystem::path& path, const Shape& shape)
{
    const NpyArray a = readNpy(path);
    REQUIRE(a.numel() == shape.numel());
    Tensor t(shape);
    std::copy(a.data.begin(), a.data.end(), t.data());
    return t;
}

inline Tensor flat(const std::filesystem::path& path)
{
    const NpyArray a = readNpy(path);
    return fromNpy(path, Shape::features(1, a.numel()));
}

// Relative L2, except against a gradient that is zero by the mathematics (a convolution's bias before batch norm,
// which subtracts the batch mean: PyTorch's float64 gives ~1e-17, float32 sums ~1e-9). There the error is absolute.
inline double relL2Flat(const Tensor& value, const Tensor& reference)
{
    Tensor v(Shape::features(1, value.numel()));
    std::copy(value.data(), value.data() + value.numel(), v.data());
    double norm = 0;
    for (int64_t i = 0; i < reference.numel(); ++i)
        norm += double(reference.data()[i]) * reference.data()[i];
    if (std::sqrt(norm) < 1e-12) {
        double own = 0;
        for (int64_t i = 0; i < v.numel(); ++i)
            own += double(v.data()[i]) * v.data()[i];
        return std::sqrt(own) * 10; // below 1e-5 when |value| < 1e-6
    }
    return relL2(v, reference);
}

} // namespace convscope::test
