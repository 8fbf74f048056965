// The backward of layer_norm, group_norm and instance_norm (compute/normalization.h's plan), autograd's formulas with
// each row's statistics recomputed from the forward's input in double (two passes): x̂ = (x − mean)·rstd, g = dy·w[p],
//   dx = rstd · (g − mean(g) − x̂ · mean(g · x̂))   over the row,
//   dw[p] = Σ dy · x̂,  db[p] = Σ dy                  over every element that reads parameter p.
// Rows are split across the OpenMP team for dx, parameters for dw and db (each sums its rows in order): bit-identical
// to one thread.
#include "compute/cpu/op_common.h"
#include "compute/training/cpu_backward_ops.h"

#include <cmath>
#include <vector>

namespace convscope::cpu::grad {

namespace {
    struct RowStats {
        std::vector<double> mean, rstd;
    };

    RowStats rowStats(const Tensor& x, const NormPlan& p, bool parallel)
    {
        RowStats s { std::vector<double>(size_t(p.rows)), std::vector<double>(size_t(p.rows)) };
        const int64_t len = p.rowLength;
#pragma omp parallel for schedule(static) if (parallel && x.numel() >= detail::kMinParallelElements)
        for (int64_t r = 0; r < p.rows; ++r) {
            const float* xr = x.data() + r * len;
            double sum = 0, squares = 0;
            for (int64_t j = 0; j < len; ++j)
                sum += xr[j];
            const double mean = sum / double(len);
            for (int64_t j = 0; j < len; ++j)
                squares += (xr[j] - mean) * (xr[j] - mean);
            s.mean[size_t(r)] = mean;
            s.rstd[size_t(r)] = 1.0 / std::sqrt(squares / double(len) + p.eps);
        }
        return s;
    }

    void check(const Tensor& gy, const Tensor& x, const NormPlan& p, const char* what)
    {
        detail::require(gy.numel() == x.numel() && x.numel() == p.rows * p.rowLength, what,
            "the gradient " + gy.shape().str() + " does not match the input " + x.shape().str());
    }
} // namespace

void normalizationData(
    const Tensor& gy, const Tensor& x, const Tensor& weight, const NormPlan& p, Tensor& gx, bool parallel)
{
    check(gy, x, p, "normalization backward");
    const RowStats s = rowStats(x, p, parallel);
    const int64_t len = p.rowLength;
#pragma omp parallel for schedule(static) if (parallel && x.numel() >= detail::kMinParallelElements)
    for (int64_t r = 0; r < p.rows; ++r) {
        const float* xr = x.data() + r * len;
        const float* gr = gy.data() + r * len;
        float* out = gx.data() + r * len;
        const double mean = s.mean[size_t(r)], rstd = s.rstd[size_t(r)];
        double sumG = 0, sumGX = 0;
        for (int64_t j = 0; j < len; ++j) {
            const double g = double(gr[j]) * weight.data()[p.paramIndex(r, j)];
            sumG += g;
            sumGX += g * (xr[j] - mean) * rstd;
        }
        const double mG = sumG / double(len), mGX = sumGX / double(len);
        for (int64_t j = 0; j < len; ++j) {
            const double g = double(gr[j]) * weight.data()[p.paramIndex(r, j)];
            const double xhat = (xr[j] - mean) * rstd;
            out[j] = static_cast<float>(rstd * (g - mG - xhat * mGX));
        }
    }
}

void normalizationWeights(const Tensor& gy, const Tensor& x, const NormPlan& p, Tensor* gw, Tensor* gb, bool parallel)
{
    check(gy, x, p, "normalization weight gradient");
    const RowStats s = rowStats(x, p, parallel);
    const int64_t perRow = p.rowLength / p.inner, params = p.groups * perRow;
#pragma omp parallel for schedule(static) if (parallel && x.numel() >= detail::kMinParallelElements)
    for (int64_t k = 0; k < params; ++k) {
        const int64_t g = k / perRow, q = k % perRow;
        double sw = 0, sb = 0;
        for (int64_t r = g; r < p.rows; r += p.groups)
            for (int64_t j = q * p.inner; j < (q + 1) * p.inner; ++j) {
                const int64_t i = r * p.rowLength + j;
                sw += double(gy.data()[i]) * (x.data()[i] - s.mean[size_t(r)]) * s.rstd[size_t(r)];
                sb += gy.data()[i];
            }
        if (gw)
            gw->data()[k] = static_cast<float>(sw);
        if (gb)
            gb->data()[k] = static_cast<float>(sb);
    }
}

} // namespace convscope::cpu::grad
