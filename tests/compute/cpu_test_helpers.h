// Helpers shared by the CPU op and backend tests: tensors from literal numbers, shapes from shape inference,
// and the fast-vs-reference comparison every sweep makes.
#pragma once

#include "compute/shape_inference.h"
#include "compute/tensor.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>

namespace convscope::test {

inline Tensor tensorOf(const Shape& shape, std::initializer_list<float> values)
{
    Tensor t(shape);
    REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
    int64_t i = 0;
    for (float v : values)
        t.data()[i++] = v;
    return t;
}

inline std::shared_ptr<const Tensor> shared(Tensor t) { return std::make_shared<const Tensor>(std::move(t)); }

inline Padding2d explicitPad(int64_t top, int64_t bottom, int64_t left, int64_t right)
{
    return { Padding2d::Mode::Explicit, top, bottom, left, right };
}

// "conv2d →4 k3 on [1, 3, 7, 9] -> [1, 4, 7, 9] pad [1 1 1 1]": which case of a sweep failed.
inline std::string describe(const Shape& in, const LayerSpec& spec, const LayerShape& s)
{
    std::ostringstream o;
    o << layerSummary(spec) << " on " << in.str() << " -> " << s.out.str() << " pad [" << s.resolvedPadding.top << " "
      << s.resolvedPadding.bottom << " " << s.resolvedPadding.left << " " << s.resolvedPadding.right << "]";
    return o.str();
}

// The output shape and resolved padding, exactly as a backend session would get them.
inline LayerShape shapeOf(const LayerSpec& spec, const Shape& in)
{
    LayerShape s = inferLayer(spec, in);
    INFO("shape inference: " << s.error);
    REQUIRE(s.ok);
    return s;
}

// A poisoned (NaN) output of the inferred shape: an element an op forgets to write fails the comparison.
inline Tensor poisonedOutput(const LayerShape& s)
{
    Tensor t(s.out);
    poison(t);
    return t;
}

// compare() skips positions where the reference is not finite, so the reference is checked on its own.
inline bool allFinite(const Tensor& t)
{
    for (int64_t i = 0; i < t.numel(); ++i)
        if (!std::isfinite(t.data()[i]))
            return false;
    return true;
}

inline void requireClose(const Tensor& value, const Tensor& reference, double relL2 = 1e-5)
{
    REQUIRE(allFinite(reference));
    const ErrorMetrics e = compare(value, reference);
    INFO("compare: " << e.note << " maxAbs " << e.maxAbs << " relL2 " << e.relL2);
    REQUIRE(e.valid);
    REQUIRE(value.shape() == reference.shape());
    REQUIRE(e.relL2 <= relL2);
}

// Element-wise check against hand-computed numbers.
inline void requireValues(const Tensor& t, std::initializer_list<double> expected, double tolerance = 1e-6)
{
    REQUIRE(static_cast<int64_t>(expected.size()) == t.numel());
    int64_t i = 0;
    for (double e : expected) {
        INFO("element " << i);
        CHECK(t.data()[i] == Approx(e).margin(tolerance));
        ++i;
    }
}

} // namespace convscope::test
