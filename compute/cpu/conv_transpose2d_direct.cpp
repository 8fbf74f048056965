// conv_transpose2d, direct: each output pixel gathers the input pixels whose scattered kernel lands on it.
//
// A transposed convolution scatters every input pixel, multiplied by the kernel, into the output at
// stride s: input (ih, iw) with tap (ki, kj) lands on the full output at (ih·s_h + ki·d_h, iw·s_w + kj·d_w).
// PyTorch then crops pad.top rows at the top and pad.left columns at the left (bottom/right cropping and
// output_padding only change the output size, which shape inference already fixed). Written as a gather so
// the loop order matches conv2d's:
//
//   out[n, oc, oh, ow] = bias[oc] + Σ_{ic, ki, kj} in[n, g·C_in/g + ic, ih, iw] · W[g·C_in/g + ic, oc mod (C_out/g),
//   ki, kj] where oh + pad.top = ih·s_h + ki·d_h and ow + pad.left = iw·s_w + kj·d_w (only exact multiples count).
//
// Weight layout [C_in, C_out/groups, kh, kw] as in PyTorch. Sums in double: this is the reference.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

namespace convscope::cpu::direct {

void convTranspose2d(const Tensor& in, const Tensor& weight, const Tensor* bias, const ConvTranspose2d& spec,
    const Padding2d& pad, Tensor& out)
{
    const std::string op = "conv_transpose2d";
    const detail::ConvSizes g = detail::checkConvolution(in, weight, bias, spec, out, op, true);
    const int64_t batch = g.batch, inH = g.inH, inW = g.inW;
    const int64_t outC = g.outC, outH = g.outH, outW = g.outW, kh = g.kh, kw = g.kw;
    const int64_t inPerGroup = g.inPerGroup, outPerGroup = g.outPerGroup;
    const int64_t sh = spec.stride[0], sw = spec.stride[1];

    // One output plane (an image's output channel) a task across the CPU team: every element is still one double sum
    // in the loops' order, computed by one thread, so the result does not depend on the thread count.
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < batch; ++n) {
        for (int64_t oc = 0; oc < outC; ++oc) {
            const int64_t firstIn = (oc / outPerGroup) * inPerGroup;
            const int64_t ocInGroup = oc % outPerGroup;
            for (int64_t oh = 0; oh < outH; ++oh) {
                for (int64_t ow = 0; ow < outW; ++ow) {
                    double acc = bias ? bias->data()[oc] : 0.0;
                    for (int64_t ic = 0; ic < inPerGroup; ++ic) {
                        for (int64_t ki = 0; ki < kh; ++ki) {
                            const int64_t th = oh + pad.top - ki * spec.dilation[0];
                            if (th < 0 || th % sh != 0 || th / sh >= inH)
                                continue; // no input row lands here with this tap
                            const int64_t ih = th / sh;
                            for (int64_t kj = 0; kj < kw; ++kj) {
                                const int64_t tw = ow + pad.left - kj * spec.dilation[1];
                                if (tw < 0 || tw % sw != 0 || tw / sw >= inW)
                                    continue;
                                const int64_t iw = tw / sw;
                                acc += double(in.at(n, firstIn + ic, ih, iw))
                                    * double(weight.at(firstIn + ic, ocInGroup, ki, kj));
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
