// linear: out[n, o] = Σ_i in[n, i] · W[o, i] + b[o], PyTorch's nn.Linear (weight [out, in], stored
// {out, in, 1, 1}). The input is read flat: its in_features are numel / batch, so [N, C, 1, 1] and [N, F]
// both work. direct:: is the double-accumulating triple loop; fast:: is one cblas_sgemm,
// out[N, O] = in[N, I] · Wᵀ, followed by the bias.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <cblas.h>

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
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(batch), blasint(outFeatures), blasint(inFeatures),
        1.0f, in.data(), blasint(inFeatures), weight.data(), blasint(inFeatures), 0.0f, out.data(),
        blasint(outFeatures));
    if (bias) {
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t o = 0; o < outFeatures; ++o)
                out.data()[n * outFeatures + o] += bias->data()[o];
    }
}

} // namespace convscope::cpu
