// Finite differences for the backward ops' tests: the gradient of L = Σ gy · f(x) (a fixed random upstream gradient
// gy, the sum in double) with respect to every element of a tensor, by central differences of the forward op.
#pragma once

#include "compute/shape_inference.h"
#include "compute/tensor.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

namespace convscope::test {

// Relative L2 of `value` against `reference`, in double.
inline double relL2(const Tensor& value, const Tensor& reference)
{
    REQUIRE(value.numel() == reference.numel());
    double d = 0, r = 0;
    for (int64_t i = 0; i < value.numel(); ++i) {
        const double a = value.data()[i], b = reference.data()[i];
        d += (a - b) * (a - b);
        r += b * b;
    }
    return r > 0 ? std::sqrt(d / r) : std::sqrt(d);
}

// Σ gy · y in double.
inline double dot(const Tensor& gy, const Tensor& y)
{
    double s = 0;
    for (int64_t i = 0; i < y.numel(); ++i)
        s += double(gy.data()[i]) * double(y.data()[i]);
    return s;
}

// The numerical gradient of Σ gy · forward() with respect to `param` (perturbed in place and restored), step h.
inline Tensor numericalGradient(
    Tensor& param, const Tensor& gy, const Shape& outShape, const std::function<void(Tensor&)>& forward, double h)
{
    Tensor grad(param.shape());
    Tensor y(outShape);
    for (int64_t i = 0; i < param.numel(); ++i) {
        const float keep = param.data()[i];
        param.data()[i] = static_cast<float>(keep + h);
        const double up = (forward(y), dot(gy, y));
        const double hiStep = double(param.data()[i]) - keep;
        param.data()[i] = static_cast<float>(keep - h);
        const double down = (forward(y), dot(gy, y));
        const double loStep = keep - double(param.data()[i]);
        param.data()[i] = keep;
        grad.data()[i] = static_cast<float>((up - down) / (hiStep + loStep));
    }
    return grad;
}

// A convolution-like layer's backward (`data` and `weights`, on cpu.direct or the fast path), checked twice:
// cpu.direct's input, weight and bias gradients against finite differences of `forward`, then the fast path's (its
// outputs poisoned first) against cpu.direct's. `b` is null for a layer without bias. The forward reads x, w and b,
// which the finite differences perturb in place.
struct ConvBackward {
    std::function<void(Tensor& y)> forward;
    std::function<void(bool fast, Tensor& gx)> data;
    std::function<void(bool fast, Tensor& gw, Tensor* gb)> weights;
};

inline void checkConvBackward(Tensor& x, Tensor& w, Tensor* b, const Tensor& gy, const ConvBackward& op)
{
    const Shape& out = gy.shape();
    Tensor gx(x.shape()), gw(w.shape()), gb(b ? b->shape() : Shape {});
    op.data(false, gx);
    op.weights(false, gw, b ? &gb : nullptr);
    CHECK(relL2(gx, numericalGradient(x, gy, out, op.forward, 0.25)) < 1e-5);
    CHECK(relL2(gw, numericalGradient(w, gy, out, op.forward, 0.25)) < 1e-5);
    if (b)
        CHECK(relL2(gb, numericalGradient(*b, gy, out, op.forward, 0.25)) < 1e-5);
    Tensor fx(x.shape()), fw(w.shape()), fb(b ? b->shape() : Shape {});
    poison(fx);
    poison(fw);
    op.data(true, fx);
    op.weights(true, fw, b ? &fb : nullptr);
    CHECK(relL2(fx, gx) < 1e-5);
    CHECK(relL2(fw, gw) < 1e-5);
    if (b)
        CHECK(relL2(fb, gb) < 1e-6);
}

} // namespace convscope::test
