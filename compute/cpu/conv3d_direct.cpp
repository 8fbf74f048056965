// conv3d, direct: conv2d's loops with one more axis, one output voxel at a time.
//
//   out[n, oc, od, oh, ow] = bias[oc] + Σ_{ic < C_in/g} Σ_{a < kd} Σ_{b < kh} Σ_{c < kw}
//       in[n, g·C_in/g + ic, od·s_d − pad.front + a·d_d, oh·s_h − pad.top + b·d_h, ow·s_w − pad.left + c·d_w]
//       · W[oc, ic, a, b, c]
//
// where g = oc / (C_out / groups) and taps in the padding read zero. Sums in double: this is the reference every
// other 3-D algorithm (cpu's vol2col GEMM, oneDNN, the GPU kernels) is checked against. The two outer loops are
// shared across the CPU team, as conv2d's.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/volume_common.h"

namespace convscope::cpu::direct {

void conv3d(
    const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv3d& spec, const Padding3d& pad, Tensor& out)
{
    const detail::ConvSizes3d g = detail::checkConvolution3d(in, weight, bias, spec, out, "conv3d", false);
    const auto [sd, sh, sw] = spec.stride;
    const auto [dd, dh, dw] = spec.dilation;

    // One output plane (an image's output channel) a task across the CPU team: every element is still one double sum
    // in the loops' order, computed by one thread, so the result does not depend on the thread count.
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t oc = 0; oc < g.outC; ++oc) {
            const int64_t firstIn = (oc / g.outPerGroup) * g.inPerGroup;
            for (int64_t od = 0; od < g.outD; ++od) {
                for (int64_t oh = 0; oh < g.outH; ++oh) {
                    for (int64_t ow = 0; ow < g.outW; ++ow) {
                        double acc = bias ? bias->data()[oc] : 0.0;
                        for (int64_t ic = 0; ic < g.inPerGroup; ++ic) {
                            for (int64_t a = 0; a < g.kd; ++a) {
                                const int64_t id = od * sd - pad.front + a * dd;
                                if (id < 0 || id >= g.inD)
                                    continue; // zero padding
                                for (int64_t b = 0; b < g.kh; ++b) {
                                    const int64_t ih = oh * sh - pad.top + b * dh;
                                    if (ih < 0 || ih >= g.inH)
                                        continue;
                                    for (int64_t c = 0; c < g.kw; ++c) {
                                        const int64_t iw = ow * sw - pad.left + c * dw;
                                        if (iw < 0 || iw >= g.inW)
                                            continue;
                                        acc += double(in.at(n, firstIn + ic, id, ih, iw))
                                            * double(weight.at(oc, ic, a, b, c));
                                    }
                                }
                            }
                        }
                        out.at(n, oc, od, oh, ow) = static_cast<float>(acc);
                    }
                }
            }
        }
    }
}

} // namespace convscope::cpu::direct
