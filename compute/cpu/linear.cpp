// linear: out[r, o] = Σ_i in[r, i] · W[o, i] + b[o], PyTorch's nn.Linear (weight [out, in], stored {out, in, 1, 1}) on
// the last axis of any rank: the rows r are every position of the leading axes, in_features the weight's second dim
// (so [N, F], [N, C, 1, 1] read as [N, C], and [B, T, F] all work: compute/linear_geometry.h says which axis).
// direct:: is the double-accumulating triple loop; fast:: is out[R, O] = in[R, I] · Wᵀ split across the OpenMP team by
// blocks of output features, onto the bias. With one row it is a GEMV that reads the weights once: bandwidth-bound,
// so every core's share of the memory bandwidth counts (our AVX-512 rows, gemv_avx512.cpp, where the CPU has them).
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
        const int64_t outFeatures = weight.shape().n, inFeatures = weight.shape().c;
        detail::require(inFeatures > 0 && in.numel() % inFeatures == 0, op,
            "the input's elements are not rows of in_features " + std::to_string(inFeatures));
        const int64_t batch = in.numel() / inFeatures; // the rows: every position of the leading axes
        detail::require(out.numel() == batch * outFeatures, op, "the output does not hold rows × out_features");
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
    detail::linearForwardProduct(
        in.data(), weight.data(), out.data(), batch, inFeatures, outFeatures, bias ? 1.0f : 0.0f);
}

} // namespace convscope::cpu
