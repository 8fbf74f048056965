// reduce (mean, sum, max, min, l2) over any axes: every output element is the reduction of the inputs that share its
// kept coordinates (compute/reduce.h: the plan puts the kept axes first and the reduced ones last, with the input's
// strides). mean, sum and l2 sum in double on both paths, as torch's CPU sums are accurate to about FP32 rounding;
// max and min propagate NaN, as torch.amax / amin do. direct:: walks one output after the other; fast:: reduces whole
// rows where the kept axes end in a contiguous run, else splits the outputs across the OpenMP team, or, when there are
// fewer outputs than threads (a global mean), each output's inputs.
#include "compute/reduce.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <algorithm>
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

    // The op outside the loop, so the sums over a contiguous run vectorise.
    Accumulator reduceOne(const ReducePlan& p, Reduce::Op op, const float* base, int64_t first, int64_t last)
    {
        const bool strided = p.rank - p.keptAxes == 1; // one reduced axis (after compactPlan): a plain stride
        const int64_t stride = strided ? p.strides[p.keptAxes] : 0;
        const auto walk = [&](auto&& f) {
            if (strided && stride == 1)
                for (int64_t r = first; r < last; ++r)
                    f(base[r]);
            else if (strided)
                for (int64_t r = first; r < last; ++r)
                    f(base[r * stride]);
            else
                for (int64_t r = first; r < last; ++r)
                    f(base[offsetOf(p, p.keptAxes, p.rank, r)]);
        };
        Accumulator acc(op);
        double v = acc.value;
        if (strided && stride == 1 && op != Reduce::Op::Max && op != Reduce::Op::Min) {
            // Eight partial sums: one chain of dependent additions would wait on each add's latency.
            const bool squares = op == Reduce::Op::L2;
            double part[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
            int64_t r = first;
            for (; r + 8 <= last; r += 8)
                for (int j = 0; j < 8; ++j) {
                    const double x = base[r + j];
                    part[j] += squares ? x * x : x;
                }
            for (; r < last; ++r) {
                const double x = base[r];
                part[0] += squares ? x * x : x;
            }
            acc.value = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
            return acc;
        }
        switch (op) {
        case Reduce::Op::Mean:
        case Reduce::Op::Sum:
            walk([&v](float x) { v += double(x); });
            break;
        case Reduce::Op::L2:
            walk([&v](float x) { v += double(x) * double(x); });
            break;
        case Reduce::Op::Max:
            walk([&v](float x) { v = (double(x) > v || std::isnan(x)) && !std::isnan(v) ? double(x) : v; });
            break;
        case Reduce::Op::Min:
            walk([&v](float x) { v = (double(x) < v || std::isnan(x)) && !std::isnan(v) ? double(x) : v; });
            break;
        }
        acc.value = v;
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

namespace {
    // The kept axes end in a run of stride 1 (a mean over the channels of NCHW images, a max over the batch): each
    // output row of `inner` is the element-wise reduction of input rows, so whole rows stream in order (one output at a
    // time would walk a column at the reduced axes' stride). Blocks of 256 outputs across the team, double sums.
    template <Reduce::Op Op> void reduceRows(const ReducePlan& p, const float* x, float* y, bool parallel)
    {
        constexpr int64_t kBlock = 256;
        const int64_t inner = p.dims[p.keptAxes - 1], outer = p.kept / inner;
        const int64_t blocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (parallel)
        for (int64_t i = 0; i < outer * blocks; ++i) {
            const int64_t ko = i / blocks, p0 = (i % blocks) * kBlock, count = std::min(kBlock, inner - p0);
            const float* base = x + offsetOf(p, 0, p.keptAxes - 1, ko) + p0;
            double acc[kBlock];
            const double init = Op == Reduce::Op::Max ? -std::numeric_limits<double>::infinity()
                : Op == Reduce::Op::Min               ? std::numeric_limits<double>::infinity()
                                                      : 0.0;
            std::fill(acc, acc + count, init);
            for (int64_t r = 0; r < p.reduced; ++r) {
                const float* row = base + offsetOf(p, p.keptAxes, p.rank, r);
                for (int64_t q = 0; q < count; ++q) {
                    const double v = row[q];
                    if constexpr (Op == Reduce::Op::Mean || Op == Reduce::Op::Sum)
                        acc[q] += v;
                    else if constexpr (Op == Reduce::Op::L2)
                        acc[q] += v * v;
                    else if constexpr (Op == Reduce::Op::Max)
                        acc[q] = (v > acc[q] || std::isnan(v)) && !std::isnan(acc[q]) ? v : acc[q];
                    else
                        acc[q] = (v < acc[q] || std::isnan(v)) && !std::isnan(acc[q]) ? v : acc[q];
                }
            }
            float* dst = y + ko * inner + p0;
            for (int64_t q = 0; q < count; ++q)
                dst[q] = static_cast<float>(Op == Reduce::Op::Mean ? acc[q] / double(p.reduced)
                        : Op == Reduce::Op::L2                     ? std::sqrt(acc[q])
                                                                   : acc[q]);
        }
    }
} // namespace

void fast::reduce(const Tensor& in, const Reduce& spec, Tensor& out)
{
    const ReducePlan p = planOf(in, spec, out);
    const bool parallel = in.numel() >= detail::kMinParallelElements;
    if (p.keptAxes > 0 && p.rank > p.keptAxes && p.strides[p.keptAxes - 1] == 1) {
        switch (spec.op) {
        case Reduce::Op::Mean:
            return reduceRows<Reduce::Op::Mean>(p, in.data(), out.data(), parallel);
        case Reduce::Op::Sum:
            return reduceRows<Reduce::Op::Sum>(p, in.data(), out.data(), parallel);
        case Reduce::Op::Max:
            return reduceRows<Reduce::Op::Max>(p, in.data(), out.data(), parallel);
        case Reduce::Op::Min:
            return reduceRows<Reduce::Op::Min>(p, in.data(), out.data(), parallel);
        case Reduce::Op::L2:
            return reduceRows<Reduce::Op::L2>(p, in.data(), out.data(), parallel);
        }
    }
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
