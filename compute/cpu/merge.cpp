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

    // torch.cat along `dim` (0..rank-1): every tensor is [outer, size, inner] around it, so each input's block of
    // size_k · inner elements per outer index goes to its offset in the output's.
    void concatImpl(const std::vector<const Tensor*>& ins, int64_t dim, Tensor& out, bool parallel)
    {
        const std::vector<int64_t> od = out.shape().dims();
        detail::require(dim >= 0 && dim < int64_t(od.size()), "concat", "dim out of range");
        int64_t outer = 1, inner = 1;
        for (int64_t a = 0; a < dim; ++a)
            outer *= od[size_t(a)];
        for (size_t a = size_t(dim) + 1; a < od.size(); ++a)
            inner *= od[a];
        // One item per (outer index, output slice along dim): a batch-1 concat of two inputs along channels is as many
        // copies as channels, enough for every thread (one block per input kept two threads busy: 44% of the copy
        // bandwidth). Short slices (inner < 256) are copied as whole blocks per (outer index, input) instead.
        struct Source {
            const Tensor* t;
            int64_t size, first, offset; // its size along dim, the first slice of this item, the output slice
        };
        std::vector<Source> source;
        int64_t total = 0;
        const bool perSlice = inner >= 256;
        for (const Tensor* t : ins) {
            detail::require(t != nullptr, "concat", "a null input");
            const std::vector<int64_t> d = t->shape().dims();
            bool ok = d.size() == od.size();
            for (size_t a = 0; ok && a < d.size(); ++a)
                ok = int64_t(a) == dim || d[a] == od[a];
            detail::require(ok, "concat",
                "input " + t->shape().str() + " does not match the output " + out.shape().str() + " outside dim "
                    + std::to_string(dim));
            const int64_t size = d[size_t(dim)];
            if (perSlice)
                for (int64_t j = 0; j < size; ++j)
                    source.push_back({ t, size, j, total + j });
            else
                source.push_back({ t, size, 0, total });
            total += size;
        }
        detail::require(
            total == od[size_t(dim)], "concat", "the inputs' sizes along dim do not add up to the output's");
        const int64_t items = int64_t(source.size());
#pragma omp parallel for schedule(static) if (parallel && out.numel() >= detail::kMinParallelElements)
        for (int64_t item = 0; item < outer * items; ++item) {
            const int64_t o = item / items;
            const Source& src = source[size_t(item % items)];
            const int64_t count = (perSlice ? 1 : src.size) * inner;
            std::memcpy(out.data() + (o * total + src.offset) * inner,
                src.t->data() + (o * src.size + src.first) * inner, size_t(count) * sizeof(float));
        }
    }

} // namespace

void direct::add(const std::vector<const Tensor*>& ins, Tensor& out) { addImpl<double>(ins, out, false); }
void fast::add(const std::vector<const Tensor*>& ins, Tensor& out) { addImpl<float>(ins, out, true); }
void direct::mul(const Tensor& a, const Tensor& b, Tensor& out) { mulImpl<double>(a, b, out, false); }
void fast::mul(const Tensor& a, const Tensor& b, Tensor& out) { mulImpl<float>(a, b, out, true); }
void direct::concat(const std::vector<const Tensor*>& ins, int64_t dim, Tensor& out)
{
    concatImpl(ins, dim, out, false);
}
void fast::concat(const std::vector<const Tensor*>& ins, int64_t dim, Tensor& out) { concatImpl(ins, dim, out, true); }

} // namespace convscope::cpu
