// conv2d, direct: the seven nested loops of the lecture, one output element at a time.
//
//   out[n, oc, oh, ow] = bias[oc] + Σ_{ic < C_in/g} Σ_{ki < kh} Σ_{kj < kw}
//                        in[n, g·C_in/g + ic, oh·s_h − pad.top + ki·d_h, ow·s_w − pad.left + kj·d_w] · W[oc, ic, ki,
//                        kj]
//
// where g = oc / (C_out / groups) is the group the output channel belongs to and taps that fall into the
// padding read zero. Sums run in double: this is the reference every other algorithm is checked against, so
// its own rounding error should be far below theirs. The loops stay the lecture's; only the two outer ones are
// shared across the CPU team (DESIGN: every CPU kind parallel where its work allows), since the profiler and the
// window check every run against this reference (ResNet-50 at batch 1: 13.4 s on one core).
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

namespace convscope::cpu::direct {

void conv2d(
    const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec, const Padding2d& pad, Tensor& out)
{
    const std::string op = "conv2d";
    const detail::ConvSizes g = detail::checkConvolution(in, weight, bias, spec, out, op, false);
    const int64_t batch = g.batch, inH = g.inH, inW = g.inW;
    const int64_t outC = g.outC, outH = g.outH, outW = g.outW, kh = g.kh, kw = g.kw;
    const int64_t inPerGroup = g.inPerGroup, outPerGroup = g.outPerGroup, inC = in.shape().c;

    // One output plane (an image's output channel) a task across the CPU team: every element is still one double sum
    // in the loops' order, computed by one thread, so the result does not depend on the thread count.
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < batch; ++n) {
        for (int64_t oc = 0; oc < outC; ++oc) {
            const int64_t firstIn = (oc / outPerGroup) * inPerGroup;
            for (int64_t oh = 0; oh < outH; ++oh) {
                for (int64_t ow = 0; ow < outW; ++ow) {
                    double acc = bias ? bias->data()[oc] : 0.0;
                    for (int64_t ic = 0; ic < inPerGroup; ++ic) {
                        for (int64_t ki = 0; ki < kh; ++ki) {
                            const int64_t ih = oh * spec.stride[0] - pad.top + ki * spec.dilation[0];
                            if (ih < 0 || ih >= inH)
                                continue; // zero padding
                            // The input row in[n, firstIn + ic, ih, ·] and the kernel row W[oc, ic, ki, ·].
                            const float* inRow = in.data() + ((n * inC + firstIn + ic) * inH + ih) * inW;
                            const float* wRow = weight.data() + ((oc * inPerGroup + ic) * kh + ki) * kw;
                            for (int64_t kj = 0; kj < kw; ++kj) {
                                const int64_t iw = ow * spec.stride[1] - pad.left + kj * spec.dilation[1];
                                if (iw < 0 || iw >= inW)
                                    continue;
                                acc += double(inRow[iw]) * double(wRow[kj]);
                            }
                        }
                    }
                    out.at(n, oc, oh, ow) = static_cast<float>(acc);
                }
            }
        }
    }
}

} // namespace convscope::cpu::direct
