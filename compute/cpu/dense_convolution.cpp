// dense_convolution.h: the convolutions that are linear layers, as single GEMMs.
#include "compute/cpu/dense_convolution.h"

#include "compute/cpu/op_common.h"

namespace convscope::cpu::fast {

namespace {

    bool noPadding(const Padding2d& pad) { return pad.top == 0 && pad.bottom == 0 && pad.left == 0 && pad.right == 0; }

    // y (rows × cols) += b per block of `perBias` columns.
    void addBias(const Tensor* bias, int64_t rows, int64_t cols, int64_t perBias, float* y)
    {
        if (!bias)
            return;
#pragma omp parallel for schedule(static) if (rows * cols >= detail::kMinParallelElements)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c)
                y[r * cols + c] += bias->data()[c / perBias];
    }

} // namespace

bool conv2dIsDense(const Conv2d& spec, const Padding2d& pad, const Shape& in, const Shape& out)
{
    return spec.groups == 1 && noPadding(pad) && spec.dilation[0] == 1 && spec.dilation[1] == 1
        && spec.kernel_size[0] == in.h && spec.kernel_size[1] == in.w && out.h == 1 && out.w == 1 && in.d == 1;
}

bool convTranspose2dIsDense(const ConvTranspose2d& spec, const Padding2d& pad, const Shape& in, const Shape& out)
{
    return spec.groups == 1 && noPadding(pad) && spec.dilation[0] == 1 && spec.dilation[1] == 1
        && spec.output_padding[0] == 0 && spec.output_padding[1] == 0 && in.h == 1 && in.w == 1 && in.d == 1
        && out.h == spec.kernel_size[0] && out.w == spec.kernel_size[1];
}

void denseConv2d(const Tensor& in, const Tensor& weight, const Tensor* bias, Tensor& out)
{
    const int64_t n = in.shape().n, k = in.numel() / n, o = out.shape().c;
    detail::requireBlasDimensions({ n, k, o }, "conv2d");
    detail::linearForwardProduct(in.data(), weight.data(), out.data(), n, k, o);
    addBias(bias, n, o, 1, out.data());
}

void denseConvTranspose2d(const Tensor& in, const Tensor& weight, const Tensor* bias, Tensor& out)
{
    const int64_t n = in.shape().n, c = in.shape().c, m = out.numel() / n;
    detail::requireBlasDimensions({ n, c, m }, "conv_transpose2d");
    detail::linearDataProduct(
        in.data(), weight.data(), out.data(), n, m, c); // y = x · W: a linear layer's data product
    addBias(bias, n, m, out.shape().h * out.shape().w, out.data());
}

void denseConv2dData(const Tensor& gy, const Tensor& weight, Tensor& gx)
{
    const int64_t n = gx.shape().n, k = gx.numel() / n, o = gy.numel() / n;
    detail::linearDataProduct(gy.data(), weight.data(), gx.data(), n, k, o);
}

void denseConv2dWeights(const Tensor& gy, const Tensor& x, Tensor& gw)
{
    const int64_t n = x.shape().n, k = x.numel() / n, o = gy.numel() / n;
    detail::linearWeightsProduct(gy.data(), x.data(), gw.data(), n, k, o);
}

void denseConvTranspose2dData(const Tensor& gy, const Tensor& weight, Tensor& gx)
{
    const int64_t n = gx.shape().n, c = gx.numel() / n, m = gy.numel() / n;
    detail::linearForwardProduct(gy.data(), weight.data(), gx.data(), n, m, c); // gx = gy · Wᵀ
}

void denseConvTranspose2dWeights(const Tensor& gy, const Tensor& x, Tensor& gw)
{
    const int64_t n = x.shape().n, c = x.numel() / n, m = gy.numel() / n;
    detail::linearWeightsProduct(x.data(), gy.data(), gw.data(), n, m, c); // gw = xᵀ · gy
}

} // namespace convscope::cpu::fast
