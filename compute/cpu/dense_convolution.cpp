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
    detail::parallelSgemm(false, true, n, o, k, in.data(), k, weight.data(), k, 0.0f, out.data(), o);
    addBias(bias, n, o, 1, out.data());
}

void denseConvTranspose2d(const Tensor& in, const Tensor& weight, const Tensor* bias, Tensor& out)
{
    const int64_t n = in.shape().n, c = in.shape().c, m = out.numel() / n;
    detail::requireBlasDimensions({ n, c, m }, "conv_transpose2d");
    detail::parallelSgemm(false, false, n, m, c, in.data(), c, weight.data(), m, 0.0f, out.data(), m);
    addBias(bias, n, m, out.shape().h * out.shape().w, out.data());
}

void denseConv2dData(const Tensor& gy, const Tensor& weight, Tensor& gx)
{
    const int64_t n = gx.shape().n, k = gx.numel() / n, o = gy.numel() / n;
    detail::parallelSgemm(false, false, n, k, o, gy.data(), o, weight.data(), k, 0.0f, gx.data(), k);
}

void denseConv2dWeights(const Tensor& gy, const Tensor& x, Tensor& gw)
{
    const int64_t n = x.shape().n, k = x.numel() / n, o = gy.numel() / n;
    detail::parallelSgemm(true, false, o, k, n, gy.data(), o, x.data(), k, 0.0f, gw.data(), k);
}

void denseConvTranspose2dData(const Tensor& gy, const Tensor& weight, Tensor& gx)
{
    const int64_t n = gx.shape().n, c = gx.numel() / n, m = gy.numel() / n;
    detail::parallelSgemm(false, true, n, c, m, gy.data(), m, weight.data(), m, 0.0f, gx.data(), c);
}

void denseConvTranspose2dWeights(const Tensor& gy, const Tensor& x, Tensor& gw)
{
    const int64_t n = x.shape().n, c = x.numel() / n, m = gy.numel() / n;
    detail::parallelSgemm(true, false, c, m, n, x.data(), c, gy.data(), m, 0.0f, gw.data(), m);
}

} // namespace convscope::cpu::fast
