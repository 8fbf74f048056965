// conv_transpose3d, direct: each output voxel gathers the input voxels whose scattered kernel lands on it.
//
// Input voxel (id, ih, iw) with tap (a, b, c) lands on the full output at (id·s_d + a·d_d, ih·s_h + b·d_h,
// iw·s_w + c·d_w); PyTorch then crops pad.front / pad.top / pad.left at the start (the back/bottom/right crop and
// output_padding only change the size, which shape inference fixed). As a gather, in conv3d's loop order:
//
//   out[n, oc, od, oh, ow] = bias[oc] + Σ_{ic, a, b, c} in[n, g·C_in/g + ic, id, ih, iw] · W[g·C_in/g + ic,
//       oc mod (C_out/g), a, b, c]   where od + pad.front = id·s_d + a·d_d (likewise H, W; exact multiples only).
//
// Weight layout [C_in, C_out/groups, kd, kh, kw] as in PyTorch. Sums in double: this is the reference.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/volume_common.h"

namespace convscope::cpu::direct {

namespace {
    // The input index whose tap lands on output position t (already shifted by the crop), or -1.
    inline int64_t source(int64_t t, int64_t stride, int64_t extent)
    {
        if (t < 0 || t % stride != 0 || t / stride >= extent)
            return -1;
        return t / stride;
    }
} // namespace

void convTranspose3d(const Tensor& in, const Tensor& weight, const Tensor* bias, const ConvTranspose3d& spec,
    const Padding3d& pad, Tensor& out)
{
    const detail::ConvSizes3d g = detail::checkConvolution3d(in, weight, bias, spec, out, "conv_transpose3d", true);
    const auto [sd, sh, sw] = spec.stride;
    const auto [dd, dh, dw] = spec.dilation;

    // One output plane (an image's output channel) a task across the CPU team: every element is still one double sum
    // in the loops' order, computed by one thread, so the result does not depend on the thread count.
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t oc = 0; oc < g.outC; ++oc) {
            const int64_t firstIn = (oc / g.outPerGroup) * g.inPerGroup;
            const int64_t ocInGroup = oc % g.outPerGroup;
            for (int64_t od = 0; od < g.outD; ++od) {
                for (int64_t oh = 0; oh < g.outH; ++oh) {
                    for (int64_t ow = 0; ow < g.outW; ++ow) {
                        double acc = bias ? bias->data()[oc] : 0.0;
                        for (int64_t ic = 0; ic < g.inPerGroup; ++ic) {
                            for (int64_t a = 0; a < g.kd; ++a) {
                                const int64_t id = source(od + pad.front - a * dd, sd, g.inD);
                                if (id < 0)
                                    continue; // no input plane lands here with this tap
                                for (int64_t b = 0; b < g.kh; ++b) {
                                    const int64_t ih = source(oh + pad.top - b * dh, sh, g.inH);
                                    if (ih < 0)
                                        continue;
                                    for (int64_t c = 0; c < g.kw; ++c) {
                                        const int64_t iw = source(ow + pad.left - c * dw, sw, g.inW);
                                        if (iw < 0)
                                            continue;
                                        acc += double(in.at(n, firstIn + ic, id, ih, iw))
                                            * double(weight.at(firstIn + ic, ocInGroup, a, b, c));
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
