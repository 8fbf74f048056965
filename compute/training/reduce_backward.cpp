// The backward of softmax / log_softmax along any axis and of reduce (compute/training/cpu_backward_ops.h), autograd's
// formulas, each gradient element summed in double.
#include "compute/training/cpu_backward_ops.h"

#include "compute/cpu/op_common.h"
#include "compute/reduce.h"

#include <cmath>

namespace convscope::cpu::grad {

void softmax(const Tensor& gy, const Tensor& y, Tensor& gx, bool parallel, int64_t axis, bool log)
{
    detail::require(gy.shape() == y.shape() && gx.shape() == y.shape(), "softmax backward",
        "gradient shapes do not match " + y.shape().str());
    const AxisView v = axisView(y.shape().dims(), axis);
    const int64_t rows = v.outer * v.inner; // one softmax per (outer, inner) position
#pragma omp parallel for schedule(static) if (parallel && y.numel() >= detail::kMinParallelElements)
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t base = (row / v.inner) * v.size * v.inner + row % v.inner;
        double sum = 0; // Σ gy·y (softmax) or Σ gy (log_softmax)
        for (int64_t c = 0; c < v.size; ++c) {
            const int64_t k = base + c * v.inner;
            sum += log ? double(gy.data()[k]) : double(gy.data()[k]) * y.data()[k];
        }
        for (int64_t c = 0; c < v.size; ++c) {
            const int64_t k = base + c * v.inner;
            gx.data()[k] = log ? static_cast<float>(double(gy.data()[k]) - std::exp(double(y.data()[k])) * sum)
                               : static_cast<float>(double(y.data()[k]) * (double(gy.data()[k]) - sum));
        }
    }
}

void reduce(const Tensor& gy, const Tensor& x, const Tensor& y, const Reduce& spec, Tensor& gx)
{
    const std::vector<int64_t> dims = x.shape().dims();
    const std::vector<int64_t> outDims = reduceOutputDims(spec, dims);
    detail::require(gx.shape() == x.shape() && gy.numel() == y.numel() && Shape::of(outDims) == y.shape(),
        "reduce backward", "gradient shapes do not match " + x.shape().str());
    const ReducePlan p = reducePlan(spec, dims, contiguousStrides(dims), contiguousStrides(outDims));
    const auto offset = [&](int first, int last, int64_t k) {
        int64_t off = 0;
        for (int a = last - 1; a >= first; --a) {
            off += (k % p.dims[a]) * p.strides[a];
            k /= p.dims[a];
        }
        return off;
    };
    for (int64_t k = 0; k < p.kept; ++k) {
        const int64_t base = offset(0, p.keptAxes, k);
        const double g = gy.data()[k], out = y.data()[k];
        int64_t ties = 0;
        if (spec.op == Reduce::Op::Max || spec.op == Reduce::Op::Min)
            for (int64_t r = 0; r < p.reduced; ++r)
                ties += x.data()[base + offset(p.keptAxes, p.rank, r)] == y.data()[k] ? 1 : 0;
        for (int64_t r = 0; r < p.reduced; ++r) {
            const int64_t at = base + offset(p.keptAxes, p.rank, r);
            double v = 0;
            switch (spec.op) {
            case Reduce::Op::Mean:
                v = g / double(p.reduced);
                break;
            case Reduce::Op::Sum:
                v = g;
                break;
            case Reduce::Op::Max:
            case Reduce::Op::Min:
                v = x.data()[at] == y.data()[k] ? g / double(ties) : 0.0;
                break;
            case Reduce::Op::L2:
                v = out == 0 ? 0.0 : g * double(x.data()[at]) / out;
                break;
            }
            gx.data()[at] = static_cast<float>(v);
        }
    }
}

} // namespace convscope::cpu::grad
