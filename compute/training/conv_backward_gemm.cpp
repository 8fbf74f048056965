// The fast CPU backward of conv2d, conv_transpose2d and linear: im2col / col2im + detail::parallelSgemm (the
// forward's GEMM, compute/cpu/parallel_sgemm.cpp), image by image and group by group.
//
// One column matrix serves all four convolution gradients. For a source plane set (C channels of H × W) and a grid
// of positions (PH × PW), col[(c·kh + ki)·kw + kj][ph·PW + pw] = src[c, ph·s_h − pad.top + ki·d_h, pw·s_w − pad.left
// + kj·d_w] (0 outside). conv2d takes its input as the source over its output grid; conv_transpose2d takes its output
// gradient as the source over its input grid. Then, per group (K = channels per group · kh · kw):
//   conv2d            gcol = W_gᵀ·gy_g, gx = col2im(gcol)       gw_g += gy_g · colᵀ(x)
//   conv_transpose2d  gx_g = W_g · col(gy)                      gw_g += x_g · colᵀ(gy)
// The column buffer is K × positions floats for one image and group at a time.
#include "compute/training/cpu_backward_ops.h"

#include "compute/cpu/op_common.h"

#include <algorithm>
#include <cstring>

namespace convscope::cpu::grad::fast {

namespace {

    struct Geometry {
        int64_t channels, srcH, srcW, posH, posW, kh, kw, sh, sw, top, left, dh, dw;
        int64_t rows() const { return channels * kh * kw; }
        int64_t positions() const { return posH * posW; }
    };

    void im2col(const float* src, const Geometry& g, float* col)
    {
        for (int64_t c = 0; c < g.channels; ++c)
            for (int64_t ki = 0; ki < g.kh; ++ki)
                for (int64_t kj = 0; kj < g.kw; ++kj) {
                    float* row = col + ((c * g.kh + ki) * g.kw + kj) * g.positions();
                    for (int64_t ph = 0; ph < g.posH; ++ph) {
                        const int64_t sy = ph * g.sh - g.top + ki * g.dh;
                        float* dst = row + ph * g.posW;
                        if (sy < 0 || sy >= g.srcH) {
                            std::fill(dst, dst + g.posW, 0.0f);
                            continue;
                        }
                        const float* line = src + (c * g.srcH + sy) * g.srcW;
                        for (int64_t pw = 0; pw < g.posW; ++pw) {
                            const int64_t sx = pw * g.sw - g.left + kj * g.dw;
                            dst[pw] = (sx < 0 || sx >= g.srcW) ? 0.0f : line[sx];
                        }
                    }
                }
    }

    // The adjoint of im2col: every column element added onto the source pixel it was read from (dst zeroed first).
    void col2im(const float* col, const Geometry& g, float* dst)
    {
        std::fill(dst, dst + g.channels * g.srcH * g.srcW, 0.0f);
        for (int64_t c = 0; c < g.channels; ++c)
            for (int64_t ki = 0; ki < g.kh; ++ki)
                for (int64_t kj = 0; kj < g.kw; ++kj) {
                    const float* row = col + ((c * g.kh + ki) * g.kw + kj) * g.positions();
                    for (int64_t ph = 0; ph < g.posH; ++ph) {
                        const int64_t sy = ph * g.sh - g.top + ki * g.dh;
                        if (sy < 0 || sy >= g.srcH)
                            continue;
                        float* line = dst + (c * g.srcH + sy) * g.srcW;
                        for (int64_t pw = 0; pw < g.posW; ++pw) {
                            const int64_t sx = pw * g.sw - g.left + kj * g.dw;
                            if (sx >= 0 && sx < g.srcW)
                                line[sx] += row[ph * g.posW + pw];
                        }
                    }
                }
    }

    template <typename Spec>
    Geometry geometry(
        const Spec& spec, const Padding2d& pad, int64_t channels, const Shape& src, const Shape& positions)
    {
        return { channels, src.h, src.w, positions.h, positions.w, spec.kernel_size[0], spec.kernel_size[1],
            spec.stride[0], spec.stride[1], pad.top, pad.left, spec.dilation[0], spec.dilation[1] };
    }

    void biasGrad(const Tensor& gy, Tensor* gb)
    {
        if (!gb)
            return;
        const Shape& s = gy.shape();
        const int64_t area = s.h * s.w;
        for (int64_t c = 0; c < s.c; ++c) {
            double sum = 0;
            for (int64_t n = 0; n < s.n; ++n)
                sum += detail::sumInDouble(gy.data() + (n * s.c + c) * area, area);
            gb->data()[c] = static_cast<float>(sum);
        }
    }

} // namespace

void conv2dData(const Tensor& gy, const Tensor& weight, const Conv2d& spec, const Padding2d& pad, Tensor& gx)
{
    const Shape& is = gx.shape();
    const Shape& os = gy.shape();
    detail::requireGroups(is.c, os.c, spec.groups, "conv2d backward");
    const int64_t icpg = is.c / spec.groups, ocpg = os.c / spec.groups;
    detail::requireWeight(weight, os.c, icpg, spec.kernel_size[0], spec.kernel_size[1], "conv2d backward");
    const Geometry g = geometry(spec, pad, icpg, is, os);
    const int64_t K = g.rows(), P = g.positions();
    detail::requireBlasDimensions({ K, P, ocpg }, "conv2d backward");
    auto col = detail::allocateWorkspace(K * P, "conv2d backward");
    for (int64_t n = 0; n < is.n; ++n)
        for (int64_t grp = 0; grp < spec.groups; ++grp) {
            const float* w = weight.data() + grp * ocpg * K;
            const float* dy = gy.data() + (n * os.c + grp * ocpg) * P;
            detail::parallelSgemm(true, false, K, P, ocpg, w, K, dy, P, 0.0f, col.get(), P);
            col2im(col.get(), g, gx.data() + (n * is.c + grp * icpg) * is.h * is.w);
        }
}

void conv2dWeights(const Tensor& gy, const Tensor& x, const Conv2d& spec, const Padding2d& pad, Tensor& gw, Tensor* gb)
{
    const Shape& is = x.shape();
    const Shape& os = gy.shape();
    detail::requireGroups(is.c, os.c, spec.groups, "conv2d backward");
    const int64_t icpg = is.c / spec.groups, ocpg = os.c / spec.groups;
    detail::requireWeight(gw, os.c, icpg, spec.kernel_size[0], spec.kernel_size[1], "conv2d backward");
    detail::requireVector(gb, os.c, "conv2d backward", "bias gradient");
    const Geometry g = geometry(spec, pad, icpg, is, os);
    const int64_t K = g.rows(), P = g.positions();
    detail::requireBlasDimensions({ K, P, ocpg }, "conv2d backward");
    auto col = detail::allocateWorkspace(K * P, "conv2d backward");
    for (int64_t n = 0; n < is.n; ++n)
        for (int64_t grp = 0; grp < spec.groups; ++grp) {
            im2col(x.data() + (n * is.c + grp * icpg) * is.h * is.w, g, col.get());
            const float* dy = gy.data() + (n * os.c + grp * ocpg) * P;
            detail::parallelSgemm(
                false, true, ocpg, K, P, dy, P, col.get(), P, n == 0 ? 0.0f : 1.0f, gw.data() + grp * ocpg * K, K);
        }
    biasGrad(gy, gb);
}

void convTranspose2dData(
    const Tensor& gy, const Tensor& weight, const ConvTranspose2d& spec, const Padding2d& pad, Tensor& gx)
{
    const Shape& is = gx.shape();
    const Shape& os = gy.shape();
    detail::requireGroups(is.c, os.c, spec.groups, "conv_transpose2d backward");
    const int64_t icpg = is.c / spec.groups, ocpg = os.c / spec.groups;
    detail::requireWeight(weight, is.c, ocpg, spec.kernel_size[0], spec.kernel_size[1], "conv_transpose2d backward");
    const Geometry g = geometry(spec, pad, ocpg, os, is);
    const int64_t K = g.rows(), P = g.positions();
    detail::requireBlasDimensions({ K, P, icpg }, "conv_transpose2d backward");
    auto col = detail::allocateWorkspace(K * P, "conv_transpose2d backward");
    for (int64_t n = 0; n < is.n; ++n)
        for (int64_t grp = 0; grp < spec.groups; ++grp) {
            im2col(gy.data() + (n * os.c + grp * ocpg) * os.h * os.w, g, col.get());
            detail::parallelSgemm(false, false, icpg, P, K, weight.data() + grp * icpg * K, K, col.get(), P, 0.0f,
                gx.data() + (n * is.c + grp * icpg) * P, P);
        }
}

void convTranspose2dWeights(
    const Tensor& gy, const Tensor& x, const ConvTranspose2d& spec, const Padding2d& pad, Tensor& gw, Tensor* gb)
{
    const Shape& is = x.shape();
    const Shape& os = gy.shape();
    detail::requireGroups(is.c, os.c, spec.groups, "conv_transpose2d backward");
    const int64_t icpg = is.c / spec.groups, ocpg = os.c / spec.groups;
    detail::requireWeight(gw, is.c, ocpg, spec.kernel_size[0], spec.kernel_size[1], "conv_transpose2d backward");
    detail::requireVector(gb, os.c, "conv_transpose2d backward", "bias gradient");
    const Geometry g = geometry(spec, pad, ocpg, os, is);
    const int64_t K = g.rows(), P = g.positions();
    detail::requireBlasDimensions({ K, P, icpg }, "conv_transpose2d backward");
    auto col = detail::allocateWorkspace(K * P, "conv_transpose2d backward");
    for (int64_t n = 0; n < is.n; ++n)
        for (int64_t grp = 0; grp < spec.groups; ++grp) {
            im2col(gy.data() + (n * os.c + grp * ocpg) * os.h * os.w, g, col.get());
            detail::parallelSgemm(false, true, icpg, K, P, x.data() + (n * is.c + grp * icpg) * P, P, col.get(), P,
                n == 0 ? 0.0f : 1.0f, gw.data() + grp * icpg * K, K);
        }
    biasGrad(gy, gb);
}

void linearData(const Tensor& gy, const Tensor& weight, Tensor& gx)
{
    const int64_t batch = gy.shape().n, out = gy.shape().c, in = weight.shape().c;
    detail::require(weight.shape().n == out && gx.numel() == batch * in, "linear backward",
        "weight " + weight.shape().str() + " does not fit the gradient " + gy.shape().str());
    detail::requireBlasDimensions({ batch, in, out }, "linear backward");
    // gx [N, in] = gy [N, out] · W [out, in]
    detail::parallelSgemm(false, false, batch, in, out, gy.data(), out, weight.data(), in, 0.0f, gx.data(), in);
}

void linearWeights(const Tensor& gy, const Tensor& x, Tensor& gw, Tensor* gb)
{
    const int64_t batch = gy.shape().n, out = gy.shape().c, in = x.numel() / std::max<int64_t>(batch, 1);
    detail::require(gw.numel() == out * in, "linear backward",
        "weight gradient " + gw.shape().str() + " does not fit " + std::to_string(out) + "×" + std::to_string(in));
    detail::requireVector(gb, out, "linear backward", "bias gradient");
    detail::requireBlasDimensions({ batch, in, out }, "linear backward");
    // gw [out, in] = gyᵀ [out, N] · x [N, in]
    detail::parallelSgemm(true, false, out, in, batch, gy.data(), out, x.data(), in, 0.0f, gw.data(), in);
    if (gb)
        for (int64_t o = 0; o < out; ++o) {
            double acc = 0;
            for (int64_t n = 0; n < batch; ++n)
                acc += gy.data()[n * out + o];
            gb->data()[o] = static_cast<float>(acc);
        }
}

} // namespace convscope::cpu::grad::fast
