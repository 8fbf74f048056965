// The layers that join branches: add (a residual connection), mul (a gate, with [N, C, 1, 1] broadcast over H and
// W as squeeze-and-excitation uses it) and concat (U-Net's skips, along channels). direct:: works in double on one
// thread; fast:: in float across OpenMP threads, summing in the order the inputs are named as PyTorch's x + y + z
// does.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <cstring>
#include <utility>
#include <vector>

namespace convscope::cpu {

namespace {

    void checkSameShape(const std::vector<const Tensor*>& ins, const Tensor& out, const char* op)
    {
        detail::require(!ins.empty(), op, "no inputs");
        for (const Tensor* t : ins) {
            detail::require(t != nullptr, op, "a null input");
            detail::require(t->shape() == out.shape(), op,
                std::string("input ") + t->shape().str() + " differs from the output " + out.shape().str());
        }
    }

    template <typename Real> void addImpl(const std::vector<const Tensor*>& ins, Tensor& out, bool parallel)
    {
        checkSameShape(ins, out, "add");
        const int64_t count = out.numel();
        float* dst = out.data();
#pragma omp parallel for schedule(static) if (parallel && count >= detail::kMinParallelElements)
        for (int64_t i = 0; i < count; ++i) {
            Real sum = static_cast<Real>(ins[0]->data()[i]);
            for (size_t k = 1; k < ins.size(); ++k)
                sum += static_cast<Real>(ins[k]->data()[i]);
            dst[i] = static_cast<float>(sum);
        }
    }

    template <typename Real> void mulImpl(const Tensor& a, const Tensor& b, Tensor& out, bool parallel)
    {
        const Shape& o = out.shape();
        const auto broadcast = [&](const Tensor& t) {
            return t.shape() != o && t.shape().d == 1 && t.shape().h == 1 && t.shape().w == 1 && t.shape().n == o.n
                && t.shape().c == o.c;
        };
        const bool gateA = broadcast(a), gateB = broadcast(b);
        detail::require((a.shape() == o || gateA) && (b.shape() == o || gateB), "mul",
            std::string("inputs ") + a.shape().str() + " and " + b.shape().str() + " do not give the output "
                + out.shape().str());
        const int64_t planes = o.n * o.c, area = o.d * o.h * o.w; // d == 1 for images
        const float* pa = a.data();
        const float* pb = b.data();
        float* dst = out.data();
#pragma omp parallel for schedule(static) if (parallel && out.numel() >= detail::kMinParallelElements)
        for (int64_t p = 0; p < planes; ++p)
            for (int64_t j = 0; j < area; ++j) {
                const Real x = static_cast<Real>(gateA ? pa[p] : pa[p * area + j]);
                const Real y = static_cast<Real>(gateB ? pb[p] : pb[p * area + j]);
                dst[p * area + j] = static_cast<float>(x * y);
            }
    }

    void concatImpl(const std::vector<const Tensor*>& ins, Tensor& out, bool parallel)
    {
        const Shape& o = out.shape();
        int64_t channels = 0;
        for (const Tensor* t : ins) {
            detail::require(t != nullptr, "concat", "a null input");
            const Shape& s = t->shape();
            detail::require(s.n == o.n && s.d == o.d && s.h == o.h && s.w == o.w, "concat",
                std::string("input ") + t->shape().str() + " does not match the output " + out.shape().str()
                    + " outside channels");
            channels += s.c;
        }
        detail::require(channels == o.c, "concat", "the inputs' channels do not add up to the output's");
        const int64_t area = o.d * o.h * o.w; // d == 1 for images
        // One contiguous plane per (sample, output channel): a batch-1 concat of two inputs is as many copies as
        // channels, enough for every thread (one block per input kept two threads busy: 44% of the copy bandwidth).
        std::vector<std::pair<const Tensor*, int64_t>> source; // output channel -> (input, its channel)
        for (const Tensor* t : ins)
            for (int64_t c = 0; c < t->shape().c; ++c)
                source.emplace_back(t, c);
#pragma omp parallel for schedule(static) if (parallel && out.numel() >= detail::kMinParallelElements)
        for (int64_t item = 0; item < o.n * o.c; ++item) {
            const int64_t n = item / o.c, c = item % o.c;
            const auto [t, k] = source[size_t(c)];
            std::memcpy(
                out.data() + item * area, t->data() + (n * t->shape().c + k) * area, size_t(area) * sizeof(float));
        }
    }

} // namespace

void direct::add(const std::vector<const Tensor*>& ins, Tensor& out) { addImpl<double>(ins, out, false); }
void fast::add(const std::vector<const Tensor*>& ins, Tensor& out) { addImpl<float>(ins, out, true); }
void direct::mul(const Tensor& a, const Tensor& b, Tensor& out) { mulImpl<double>(a, b, out, false); }
void fast::mul(const Tensor& a, const Tensor& b, Tensor& out) { mulImpl<float>(a, b, out, true); }
void direct::concat(const std::vector<const Tensor*>& ins, Tensor& out) { concatImpl(ins, out, false); }
void fast::concat(const std::vector<const Tensor*>& ins, Tensor& out) { concatImpl(ins, out, true); }

} // namespace convscope::cpu
