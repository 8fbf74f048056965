#include "compute/tensor.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/memory_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace convscope {

int64_t Shape::numel() const
{
    if (n < 0 || c < 0 || h < 0 || w < 0 || d < 0 || e < 0)
        throw InputError("shape " + str() + " has a negative size");
    return checkedProduct({ n, c, d, h, w }, "tensor " + str());
}

int64_t Shape::bytes() const { return checkedMul(numel(), int64_t(sizeof(float)), "tensor " + str()); }

std::string Shape::str() const
{
    std::string s = "[";
    for (const int64_t v : dims())
        s += (s.size() > 1 ? ", " : "") + std::to_string(v);
    return s + "]";
}

std::vector<int64_t> Shape::dims() const
{
    if (flat)
        return { n, c };
    switch (rank) {
    case 1:
        return { n };
    case 3:
        return { n, c, h };
    case 5:
        return { n, c, d, h, w };
    case 6:
        return { n, c, e, e > 0 ? d / e : 0, h, w };
    default:
        return { n, c, h, w };
    }
}

std::string Shape::rankText() const
{
    if (flat)
        return "2-D [N, F]";
    if (rank == 4)
        return "4-D [N, C, H, W]";
    if (rank == 5)
        return "5-D [N, C, D, H, W]";
    return std::to_string(rank) + "-D tensor";
}

Shape Shape::of(const std::vector<int64_t>& dims)
{
    std::string text = "[";
    for (const int64_t v : dims)
        text += (text.size() > 1 ? ", " : "") + std::to_string(v);
    text += "]";
    if (dims.empty() || dims.size() > size_t(kMaxRank))
        throw InputError("a tensor has 1 to " + std::to_string(kMaxRank) + " dims, not " + std::to_string(dims.size())
            + " (" + text + ")");
    for (const int64_t v : dims)
        if (v < 0)
            throw InputError("shape " + text + " has a negative size");
    switch (dims.size()) {
    case 1:
        return { dims[0], 1, 1, 1, false, 1, 1 };
    case 2:
        return features(dims[0], dims[1]);
    case 3:
        return { dims[0], dims[1], dims[2], 1, false, 1, 3 };
    case 4:
        return nchw(dims[0], dims[1], dims[2], dims[3]);
    case 5:
        return ncdhw(dims[0], dims[1], dims[2], dims[3], dims[4]);
    default:
        if (dims[2] == 0)
            throw InputError("shape " + text + ": a 6-D tensor needs a non-zero dim 2");
        return { dims[0], dims[1], dims[4], dims[5], false, checkedMul(dims[2], dims[3], "tensor " + text), 6,
            dims[2] };
    }
}

void Tensor::FreeDeleter::operator()(float* p) const { std::free(p); }

Tensor::Tensor(const Shape& shape)
    : m_shape(shape)
    , m_numel(shape.numel())
{
    if (m_numel == 0)
        return;
    // 64-byte alignment: a cache line and an AVX-512 vector; aligned_alloc wants a multiple of it.
    const int64_t bytes = checkedMul(m_numel, int64_t(sizeof(float)), "tensor " + shape.str());
    const int64_t rounded = checkedAdd(bytes, 63, "tensor " + shape.str()) / 64 * 64;
    // Before asking the allocator: a size from a file must never reach malloc unchecked (ASan aborts on
    // "allocation-size-too-big", glibc overcommits and the OOM killer ends the program later).
    checkHostAllocation(rounded, "tensor " + shape.str());
    void* p = std::aligned_alloc(64, size_t(rounded));
    if (!p)
        throw Error("out of host memory allocating " + std::to_string(bytes >> 20) + " MiB for tensor " + shape.str());
    m_data.reset(static_cast<float*>(p));
}

Tensor Tensor::zeros(const Shape& shape) { return filled(shape, 0.0f); }

Tensor Tensor::filled(const Shape& shape, float value)
{
    Tensor t(shape);
    t.fill(value);
    return t;
}

Tensor Tensor::clone() const
{
    Tensor t(m_shape);
    if (m_numel)
        std::memcpy(t.data(), data(), size_t(m_numel) * sizeof(float));
    return t;
}

void Tensor::reshape(const Shape& shape)
{
    if (shape.numel() != m_numel)
        throw Error("cannot reshape " + m_shape.str() + " to " + shape.str());
    m_shape = shape;
}

void Tensor::fill(float value) { std::fill(m_data.get(), m_data.get() + m_numel, value); }

ErrorMetrics compare(const Tensor& value, const Tensor& reference)
{
    ErrorMetrics e;
    if (value.numel() != reference.numel() || value.shape().n != reference.shape().n
        || value.shape().c != reference.shape().c) {
        e.note = "shape " + value.shape().str() + " differs from the reference " + reference.shape().str();
        return e;
    }
    double diff2 = 0, ref2 = 0;
    const float* a = value.data();
    const float* r = reference.data();
    for (int64_t i = 0; i < value.numel(); ++i) {
        const double d = double(a[i]) - double(r[i]);
        if (!std::isfinite(a[i]) && std::isfinite(r[i])) {
            e.note = "element " + std::to_string(i) + " is " + std::to_string(a[i]) + " (reference "
                + std::to_string(r[i]) + ")";
            e.maxAbs = e.maxRel = e.relL2 = std::numeric_limits<double>::infinity();
            return e;
        }
        if (!std::isfinite(r[i])) {
            // The same infinity on both sides (a max pool over padding only) agrees; anything else — a NaN
            // in the reference above all — means an element was never written, and must not pass silently.
            if (std::isinf(r[i]) && a[i] == r[i])
                continue;
            e.note = "reference element " + std::to_string(i) + " is " + std::to_string(r[i]) + " (value "
                + std::to_string(a[i]) + ")";
            e.maxAbs = e.maxRel = e.relL2 = std::numeric_limits<double>::infinity();
            return e;
        }
        const double ad = std::fabs(d);
        e.maxAbs = std::max(e.maxAbs, ad);
        e.maxRel = std::max(e.maxRel, ad / std::max(std::fabs(double(r[i])), 1e-30));
        diff2 += d * d;
        ref2 += double(r[i]) * double(r[i]);
    }
    e.relL2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    e.valid = true;
    return e;
}

} // namespace convscope
