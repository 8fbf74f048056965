// linear: out[n, o] = Σ_i in[n, i] · W[o, i] + b[o], PyTorch's nn.Linear (weight [out, in], stored
// {out, in, 1, 1}). The input is read flat: its in_features are numel / batch, so [N, C, 1, 1] and [N, F]
// both work. direct:: is the double-accumulating triple loop; fast:: is out[N, O] = in[N, I] · Wᵀ split across the
// OpenMP team by blocks of output features, onto the bias. At batch 1 it is a GEMV that reads the weights once:
// bandwidth-bound, so every core's share of the memory bandwidth counts (our AVX-512 rows, gemv_avx512.cpp, where
// the CPU has them).
#include "compute/cpu/conv2d_tap_avx512.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/gemv_avx512.h"
#include "compute/cpu/op_common.h"

#include <algorithm>

namespace convscope::cpu {

namespace {

    struct LinearSizes {
        int64_t batch, inFeatures, outFeatures;
    };

    LinearSizes checkLinear(const Tensor& in, const Tensor& weight, const Tensor* bias, const Tensor& out)
    {
        const std::string op = "linear";
        detail::requireNonEmpty(in, out, op);
        const int64_t batch = in.shape().n;
        detail::require(batch > 0 && out.shape().n == batch, op, "output batch differs from the input batch");
        const int64_t inFeatures = in.numel() / batch;
        const int64_t outFeatures = out.numel() / batch;
        detail::requireWeight(weight, outFeatures, inFeatures, 1, 1, op);
        detail::requireVector(bias, outFeatures, op, "bias");
        detail::requireBlasDimensions({ batch, inFeatures, outFeatures }, op);
        return { batch, inFeatures, outFeatures };
    }

} // namespace

void direct::linear(const Tensor& in, const Tensor& weight, const Tensor* bias, Tensor& out)
{
    const auto [batch, inFeatures, outFeatures] = checkLinear(in, weight, bias, out);
    for (int64_t n = 0; n < batch; ++n) {
        for (int64_t o = 0; o < outFeatures; ++o) {
            double acc = bias ? bias->data()[o] : 0.0;
            for (int64_t i = 0; i < inFeatures; ++i)
                acc += double(in.data()[n * inFeatures + i]) * double(weight.data()[o * inFeatures + i]);
            out.data()[n * outFeatures + o] = static_cast<float>(acc);
        }
    }
}

void fast::linear(const Tensor& in, const Tensor& weight, const Tensor* bias, Tensor& out)
{
    const auto [batch, inFeatures, outFeatures] = checkLinear(in, weight, bias, out);
    if (batch == 1 && avx512::haveAvx512()) {
        // A GEMV: rows of W split across the team in blocks of 64 (gemv_avx512.cpp says why not OpenBLAS's).
        const int64_t blocks = (outFeatures + 63) / 64;
        const float* init = bias ? bias->data() : nullptr;
#pragma omp parallel for schedule(static) if (outFeatures * inFeatures >= detail::kMinParallelElements)
        for (int64_t blk = 0; blk < blocks; ++blk) {
            const int64_t r0 = blk * 64, rows = std::min<int64_t>(64, outFeatures - r0);
            avx512::gemvRows(weight.data() + r0 * inFeatures, rows, inFeatures, in.data(), init ? init + r0 : nullptr,
                out.data() + r0);
        }
        return;
    }
    if (bias) {
        for (int64_t n = 0; n < batch; ++n)
            std::copy(bias->data(), bias->data() + outFeatures, out.data() + n * outFeatures);
    }
    detail::parallelSgemm(false, true, batch, outFeatures, inFeatures, in.data(), inFeatures, weight.data(), inFeatures,
        bias ? 1.0f : 0.0f, out.data(), outFeatures);
}

} // namespace convscope::cpu
