// cpu.direct's backward of conv2d, conv_transpose2d and linear: the readable loops, one double sum per gradient
// element (the reference the fast path and the finite-difference tests are checked against).
//
// conv2d: output (oh, ow) reads input row oh·s_h − pad.top + ki·d_h with tap ki (columns likewise), so
//   gx[n, ic, ih, iw] = Σ gy[n, oc, oh, ow] · w[oc, ic mod C_in/g, ki, kj] over the (oc of ic's group, ki, kj) whose
//                       tap lands on (ih, iw): ih + pad.top − ki·d_h = oh·s_h for a whole oh in range;
//   gw[oc, j, ki, kj]  = Σ over n, oh, ow of gy[n, oc, oh, ow] · x[n, input channel j of oc's group, that tap];
//   gb[oc]             = Σ over n, oh, ow of gy[n, oc, oh, ow].
// conv_transpose2d is the same pair of maps with input and output swapped (its input (ih, iw) feeds output
// ih·s_h − pad.top + ki·d_h), and its weight is [C_in, C_out/g, kh, kw].
#include "compute/training/cpu_backward_ops.h"

#include "compute/cpu/op_common.h"

namespace convscope::cpu::grad::direct {

namespace {
    void checkGrad(const Tensor& t, const Shape& want, const char* op, const char* what)
    {
        detail::require(t.shape().numel() == want.numel() && t.shape().n == want.n && t.shape().c == want.c, op,
            std::string(what) + " is " + t.shape().str() + " but should be " + want.str());
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
                for (int64_t i = 0; i < area; ++i)
                    sum += gy.data()[(n * s.c + c) * area + i];
            gb->data()[c] = static_cast<float>(sum);
        }
    }
} // namespace

void conv2dData(const Tensor& gy, const Tensor& weight, const Conv2d& spec, const Padding2d& pad, Tensor& gx)
{
    const Shape& is = gx.shape();
    const Shape& os = gy.shape();
    detail::requireGroups(is.c, os.c, spec.groups, "conv2d backward");
    const int64_t inPerGroup = is.c / spec.groups, outPerGroup = os.c / spec.groups;
    detail::requireWeight(weight, os.c, inPerGroup, spec.kernel_size[0], spec.kernel_size[1], "conv2d backward");
    const int64_t sh = spec.stride[0], sw = spec.stride[1];
    // One (image, channel) plane a task across the CPU team: each element one thread's double sum, in the same order.
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < is.n; ++n)
        for (int64_t ic = 0; ic < is.c; ++ic) {
            const int64_t group = ic / inPerGroup, j = ic % inPerGroup;
            for (int64_t ih = 0; ih < is.h; ++ih)
                for (int64_t iw = 0; iw < is.w; ++iw) {
                    double acc = 0;
                    for (int64_t o = 0; o < outPerGroup; ++o) {
                        const int64_t oc = group * outPerGroup + o;
                        for (int64_t ki = 0; ki < spec.kernel_size[0]; ++ki) {
                            const int64_t th = ih + pad.top - ki * spec.dilation[0];
                            if (th < 0 || th % sh != 0 || th / sh >= os.h)
                                continue;
                            for (int64_t kj = 0; kj < spec.kernel_size[1]; ++kj) {
                                const int64_t tw = iw + pad.left - kj * spec.dilation[1];
                                if (tw < 0 || tw % sw != 0 || tw / sw >= os.w)
                                    continue;
                                acc += double(gy.at(n, oc, th / sh, tw / sw)) * double(weight.at(oc, j, ki, kj));
                            }
                        }
                    }
                    gx.at(n, ic, ih, iw) = static_cast<float>(acc);
                }
        }
}

void conv2dWeights(const Tensor& gy, const Tensor& x, const Conv2d& spec, const Padding2d& pad, Tensor& gw, Tensor* gb)
{
    const Shape& is = x.shape();
    const Shape& os = gy.shape();
    detail::requireGroups(is.c, os.c, spec.groups, "conv2d backward");
    const int64_t inPerGroup = is.c / spec.groups, outPerGroup = os.c / spec.groups;
    detail::requireWeight(gw, os.c, inPerGroup, spec.kernel_size[0], spec.kernel_size[1], "conv2d backward");
    detail::requireVector(gb, os.c, "conv2d backward", "bias gradient");
    // One output channel's weight rows a task across the CPU team: each element one thread's double sum, same order.
#pragma omp parallel for schedule(static)
    for (int64_t oc = 0; oc < os.c; ++oc) {
        const int64_t firstIn = (oc / outPerGroup) * inPerGroup;
        for (int64_t j = 0; j < inPerGroup; ++j)
            for (int64_t ki = 0; ki < spec.kernel_size[0]; ++ki)
                for (int64_t kj = 0; kj < spec.kernel_size[1]; ++kj) {
                    double acc = 0;
                    for (int64_t n = 0; n < os.n; ++n)
                        for (int64_t oh = 0; oh < os.h; ++oh) {
                            const int64_t ih = oh * spec.stride[0] - pad.top + ki * spec.dilation[0];
                            if (ih < 0 || ih >= is.h)
                                continue;
                            for (int64_t ow = 0; ow < os.w; ++ow) {
                                const int64_t iw = ow * spec.stride[1] - pad.left + kj * spec.dilation[1];
                                if (iw < 0 || iw >= is.w)
                                    continue;
                                acc += double(gy.at(n, oc, oh, ow)) * double(x.at(n, firstIn + j, ih, iw));
                            }
                        }
                    gw.at(oc, j, ki, kj) = static_cast<float>(acc);
                }
    }
    biasGrad(gy, gb);
}

void convTranspose2dData(
    const Tensor& gy, const Tensor& weight, const ConvTranspose2d& spec, const Padding2d& pad, Tensor& gx)
{
    const Shape& is = gx.shape();
    const Shape& os = gy.shape();
    detail::requireGroups(is.c, os.c, spec.groups, "conv_transpose2d backward");
    const int64_t inPerGroup = is.c / spec.groups, outPerGroup = os.c / spec.groups;
    detail::requireWeight(
        weight, is.c, outPerGroup, spec.kernel_size[0], spec.kernel_size[1], "conv_transpose2d backward");
    // One (image, channel) plane a task across the CPU team: each element one thread's double sum, in the same order.
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < is.n; ++n)
        for (int64_t ic = 0; ic < is.c; ++ic) {
            const int64_t firstOut = (ic / inPerGroup) * outPerGroup;
            for (int64_t ih = 0; ih < is.h; ++ih)
                for (int64_t iw = 0; iw < is.w; ++iw) {
                    double acc = 0;
                    for (int64_t o = 0; o < outPerGroup; ++o)
                        for (int64_t ki = 0; ki < spec.kernel_size[0]; ++ki) {
                            const int64_t oh = ih * spec.stride[0] - pad.top + ki * spec.dilation[0];
                            if (oh < 0 || oh >= os.h)
                                continue;
                            for (int64_t kj = 0; kj < spec.kernel_size[1]; ++kj) {
                                const int64_t ow = iw * spec.stride[1] - pad.left + kj * spec.dilation[1];
                                if (ow < 0 || ow >= os.w)
                                    continue;
                                acc += double(gy.at(n, firstOut + o, oh, ow)) * double(weight.at(ic, o, ki, kj));
                            }
                        }
                    gx.at(n, ic, ih, iw) = static_cast<float>(acc);
                }
        }
}

void convTranspose2dWeights(
    const Tensor& gy, const Tensor& x, const ConvTranspose2d& spec, const Padding2d& pad, Tensor& gw, Tensor* gb)
{
    const Shape& is = x.shape();
    const Shape& os = gy.shape();
    detail::requireGroups(is.c, os.c, spec.groups, "conv_transpose2d backward");
    const int64_t inPerGroup = is.c / spec.groups, outPerGroup = os.c / spec.groups;
    detail::requireWeight(gw, is.c, outPerGroup, spec.kernel_size[0], spec.kernel_size[1], "conv_transpose2d backward");
    detail::requireVector(gb, os.c, "conv_transpose2d backward", "bias gradient");
    // One input channel's weight rows a task across the CPU team: each element one thread's double sum, same order.
#pragma omp parallel for schedule(static)
    for (int64_t ic = 0; ic < is.c; ++ic) {
        const int64_t firstOut = (ic / inPerGroup) * outPerGroup;
        for (int64_t o = 0; o < outPerGroup; ++o)
            for (int64_t ki = 0; ki < spec.kernel_size[0]; ++ki)
                for (int64_t kj = 0; kj < spec.kernel_size[1]; ++kj) {
                    double acc = 0;
                    for (int64_t n = 0; n < is.n; ++n)
                        for (int64_t ih = 0; ih < is.h; ++ih) {
                            const int64_t oh = ih * spec.stride[0] - pad.top + ki * spec.dilation[0];
                            if (oh < 0 || oh >= os.h)
                                continue;
                            for (int64_t iw = 0; iw < is.w; ++iw) {
                                const int64_t ow = iw * spec.stride[1] - pad.left + kj * spec.dilation[1];
                                if (ow < 0 || ow >= os.w)
                                    continue;
                                acc += double(x.at(n, ic, ih, iw)) * double(gy.at(n, firstOut + o, oh, ow));
                            }
                        }
                    gw.at(ic, o, ki, kj) = static_cast<float>(acc);
                }
    }
    biasGrad(gy, gb);
}

void linearData(const Tensor& gy, const Tensor& weight, Tensor& gx)
{
    // The rows: every position of the leading axes (linear on the last axis of any rank: compute/linear_geometry.h).
    const int64_t out = weight.shape().n, in = weight.shape().c, batch = gy.numel() / std::max<int64_t>(out, 1);
    detail::require(gy.numel() == batch * out && gx.numel() == batch * in, "linear backward",
        "weight " + weight.shape().str() + " does not fit the gradient " + gy.shape().str());
    checkGrad(gx, gx.shape(), "linear backward", "input gradient");
    for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < in; ++i) {
            double acc = 0;
            for (int64_t o = 0; o < out; ++o)
                acc += double(gy.data()[n * out + o]) * double(weight.data()[o * in + i]);
            gx.data()[n * in + i] = static_cast<float>(acc);
        }
}

void linearWeights(const Tensor& gy, const Tensor& x, Tensor& gw, Tensor* gb)
{
    const int64_t out = gw.shape().n, in = gw.shape().c, batch = gy.numel() / std::max<int64_t>(out, 1);
    detail::require(gw.numel() == out * in && x.numel() == batch * in, "linear backward",
        "weight gradient " + gw.shape().str() + " does not fit " + std::to_string(out) + "×" + std::to_string(in));
    detail::requireVector(gb, out, "linear backward", "bias gradient");
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) {
            double acc = 0;
            for (int64_t n = 0; n < batch; ++n)
                acc += double(gy.data()[n * out + o]) * double(x.data()[n * in + i]);
            gw.data()[o * in + i] = static_cast<float>(acc);
        }
    if (gb)
        for (int64_t o = 0; o < out; ++o) {
            double acc = 0;
            for (int64_t n = 0; n < batch; ++n)
                acc += gy.data()[n * out + o];
            gb->data()[o] = static_cast<float>(acc);
        }
}

} // namespace convscope::cpu::grad::direct
