// Tensor: float32, NCHW or NCDHW, owning 64-byte aligned storage. Copies are explicit (clone()) because feature
// maps can be hundreds of megabytes; moves are cheap.
#pragma once

#include "compute/shape.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace convscope {

class Tensor {
public:
    Tensor() = default;
    // Allocates (uninitialised) storage; throws InputError on overflow and Error if allocation fails.
    explicit Tensor(const Shape& shape);
    static Tensor zeros(const Shape& shape);
    static Tensor filled(const Shape& shape, float value);

    Tensor(Tensor&&) noexcept = default;
    Tensor& operator=(Tensor&&) noexcept = default;
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;
    Tensor clone() const;

    const Shape& shape() const { return m_shape; }
    // Same data, new shape of equal element count (flatten is a view in every backend, a reshape here).
    void reshape(const Shape& shape);
    int64_t numel() const { return m_numel; }
    bool empty() const { return m_numel == 0; }

    float* data() { return m_data.get(); }
    const float* data() const { return m_data.get(); }
    float& at(int64_t n, int64_t c, int64_t h, int64_t w)
    {
        return m_data[((n * m_shape.c + c) * m_shape.h + h) * m_shape.w + w];
    }
    float at(int64_t n, int64_t c, int64_t h, int64_t w) const
    {
        return m_data[((n * m_shape.c + c) * m_shape.h + h) * m_shape.w + w];
    }
    // A volume's element (rank 5, NCDHW); on an image d must be 0.
    float& at(int64_t n, int64_t c, int64_t d, int64_t h, int64_t w)
    {
        return m_data[(((n * m_shape.c + c) * m_shape.d + d) * m_shape.h + h) * m_shape.w + w];
    }
    float at(int64_t n, int64_t c, int64_t d, int64_t h, int64_t w) const
    {
        return m_data[(((n * m_shape.c + c) * m_shape.d + d) * m_shape.h + h) * m_shape.w + w];
    }
    void fill(float value);

private:
    struct FreeDeleter {
        void operator()(float* p) const;
    };
    Shape m_shape;
    int64_t m_numel = 0;
    std::unique_ptr<float[], FreeDeleter> m_data;
};

// Differences of one tensor against a reference, as the profiler reports them.
struct ErrorMetrics {
    double maxAbs = 0; // max |a - ref|
    double maxRel = 0; // max |a - ref| / max(|ref|, tiny)
    double relL2 = 0; // ||a - ref||_2 / ||ref||_2 (or ||a - ref||_2 when ref is all zeros)
    bool valid = false; // false when shapes differ or a value is not finite
    std::string note; // why not valid
    // The relL2 that the run's math mode's rounding may cause on this layer (compute/rounding_bound.h); 0 in FP32,
    // where no bound is stated. Set by the profiler, not by compare().
    double bound = 0;
};
ErrorMetrics compare(const Tensor& value, const Tensor& reference);

} // namespace convscope
