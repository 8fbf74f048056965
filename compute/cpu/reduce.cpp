// reduce (mean, sum, max, min, l2) over any axes: every output element is the reduction of the inputs that share its
// kept coordinates (compute/reduce.h: the plan puts the kept axes first and the reduced ones last, with the input's
// strides). mean, sum and l2 sum in double on both paths, as torch's CPU sums are accurate to about FP32 rounding;
// max and min propagate NaN, as torch.amax / amin do. direct:: walks one output after the other; fast:: splits the
// outputs across the OpenMP team, or, when there are fewer outputs than threads (a global mean), each output's inputs.
#include "compute/reduce.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <cmath>
#include <limits>

namespace convscope::cpu {

namespace {

    ReducePlan planOf(const Tensor& in, const Reduce& spec, const Tensor& out)
    {
        detail::requireNonEmpty(in, out, "reduce");
        const std::vector<int64_t> dims = in.shape().dims();
        const std::vector<int64_t> outDims = reduceOutputDims(spec, dims);
        detail::require(out.shape() == Shape::of(outDims), "reduce", "output shape differs from the reduction's");
        return reducePlan(spec, dims, contiguousStrides(dims), contiguousStrides(outDims));
    }

    // The input offset of element `k` of the axes [first, last) of the plan (row-major over them).
    int64_t offsetOf(const ReducePlan& p, int first, int last, int64_t k)
    {
        int64_t off = 0;
        for (int a = last - 1; a >= first; --a) {
            off += (k % p.dims[a]) * p.strides[a];
            k /= p.dims[a];
        }
        return off;
    }

    struct Accumulator {
        Reduce::Op op;
        double value;
        explicit Accumulator(Reduce::Op o)
            : op(o)
            , value(o == Reduce::Op::Max     ? -std::numeric_limits<double>::infinity()
                      : o == Reduce::Op::Min ? std::numeric_limits<double>::infinity()
                                             : 0.0)
        {
        }
        void add(double x)
        {
            switch (op) {
            case Reduce::Op::Mean:
            case Reduce::Op::Sum:
                value += x;
                break;
            case Reduce::Op::L2:
                value += x * x;
                break;
            case Reduce::Op::Max:
                value = (x > value || std::isnan(x)) && !std::isnan(value) ? x : value;
                break;
            case Reduce::Op::Min:
                value = (x < value || std::isnan(x)) && !std::isnan(value) ? x : value;
                break;
            }
        }
        void merge(const Accumulator& o)
        {
            if (op == Reduce::Op::Max || op == Reduce::Op::Min)
                add(o.value);
            else
                value += o.value;
        }
        float result(int64_t count) const
        {
            if (op == Reduce::Op::Mean)
                return static_cast<float>(value / double(count));
            if (op == Reduce::Op::L2)
                return static_cast<float>(std::sqrt(value));
            return static_cast<float>(value);
        }
    };

    Accumulator reduceOne(const ReducePlan& p, Reduce::Op op, const float* base, int64_t first, int64_t last)
    {
        Accumulator acc(op);
        if (p.rank - p.keptAxes == 1) { // one reduced axis: a strided walk
            const int64_t stride = p.strides[p.keptAxes];
            for (int64_t r = first; r < last; ++r)
                acc.add(base[r * stride]);
        } else {
            for (int64_t r = first; r < last; ++r)
                acc.add(base[offsetOf(p, p.keptAxes, p.rank, r)]);
        }
        return acc;
    }

} // namespace

void direct::reduce(const Tensor& in, const Reduce& spec, Tensor& out)
{
    const ReducePlan p = planOf(in, spec, out);
    for (int64_t k = 0; k < p.kept; ++k) {
        const float* base = in.data() + offsetOf(p, 0, p.keptAxes, k);
        out.data()[k] = reduceOne(p, spec.op, base, 0, p.reduced).result(p.reduced);
    }
}

void fast::reduce(const Tensor& in, const Reduce& spec, Tensor& out)
{
    const ReducePlan p = planOf(in, spec, out);
    const bool parallel = in.numel() >= detail::kMinParallelElements;
    if (p.kept >= 64 || !parallel) {
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t k = 0; k < p.kept; ++k) {
            const float* base = in.data() + offsetOf(p, 0, p.keptAxes, k);
            out.data()[k] = reduceOne(p, spec.op, base, 0, p.reduced).result(p.reduced);
        }
        return;
    }
    // Few outputs, many inputs each: the team splits every output's inputs into equal parts, merged in part order.
    constexpr int64_t kParts = 64;
    for (int64_t k = 0; k < p.kept; ++k) {
        const float* base = in.data() + offsetOf(p, 0, p.keptAxes, k);
        std::vector<Accumulator> parts(size_t(kParts), Accumulator(spec.op));
#pragma omp parallel for schedule(static)
        for (int64_t part = 0; part < kParts; ++part)
            parts[size_t(part)]
                = reduceOne(p, spec.op, base, p.reduced * part / kParts, p.reduced * (part + 1) / kParts);
        Accumulator acc(spec.op);
        for (const Accumulator& a : parts)
            acc.merge(a);
        out.data()[k] = acc.result(p.reduced);
    }
}

} // namespace convscope::cpu
