// conv_transpose2d, GEMM + col2im (cpu.im2col_gemm).
//
// A transposed convolution is the adjoint of conv2d's im2col product, so it runs the same pieces backwards.
// For one image and one group, with Kc = (C_out/g)·kh·kw and the input's HW pixels:
//
//   col[Kc, HW] = Wᵀ · X       W is the group's weight rows viewed as [C_in/g, Kc] (PyTorch's layout
//                              [C_in, C_out/g, kh, kw] is exactly that), X is the input [C_in/g, HW]
//   col2im                     every column entry (oc, ki, kj) of input pixel (ih, iw) is added to
//                              out[oc, ih·s_h − pad.top + ki·d_h, iw·s_w − pad.left + kj·d_w] when that
//                              lands inside the output (the crop by padding, and output_padding rows that
//                              receive only the bias, fall out of this test)
//
// The column matrix is kh·kw times the input, so the input pixels are processed in chunks bounded by
// max(kMinWorkspaceBytes, input + output bytes), each chunk multiplied and scattered before the next.
// The scatter adds into overlapping output pixels, so it is split across OpenMP threads by output channel and
// slab of output rows, where no two threads ever touch the same element. The output starts as the bias (or zero).
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/dense_convolution.h"
#include "compute/cpu/op_common.h"

#include <omp.h>

#include <algorithm>

namespace convscope::cpu::fast {

void convTranspose2d(const Tensor& in, const Tensor& weight, const Tensor* bias, const ConvTranspose2d& spec,
    const Padding2d& pad, Tensor& out)
{
    const std::string op = "conv_transpose2d";
    const detail::ConvSizes g = detail::checkConvolution(in, weight, bias, spec, out, op, true);
    if (convTranspose2dIsDense(spec, pad, in.shape(), out.shape()))
        return denseConvTranspose2d(in, weight, bias, out); // a one-pixel input: a linear layer
    const int64_t batch = g.batch, inC = g.inC, inH = g.inH, inW = g.inW;
    const int64_t outC = g.outC, outH = g.outH, outW = g.outW, kh = g.kh, kw = g.kw;
    const int64_t inPerGroup = g.inPerGroup, outPerGroup = g.outPerGroup;
    const int64_t sh = spec.stride[0], sw = spec.stride[1], dh = spec.dilation[0], dw = spec.dilation[1];

    const int64_t rows = outPerGroup * kh * kw; // Kc
    const int64_t inPlane = inH * inW, outPlane = outH * outW;
    detail::requireBlasDimensions({ rows, inPlane, outPlane, inPerGroup }, op);
    const int64_t chunk
        = std::clamp<int64_t>(detail::workspaceBudgetBytes(in, out) / (rows * int64_t(sizeof(float))), 1, inPlane);
    std::unique_ptr<float[]> col = detail::allocateWorkspace(rows * chunk, op);

    // The scatter's work items: (output channel, slab of output rows), two or more per thread, so a layer with few
    // output channels (a generator's RGB output) still uses every thread; threads own disjoint rows.
    const int64_t slabs = std::clamp<int64_t>(
        (2 * int64_t(omp_get_max_threads()) + outPerGroup - 1) / outPerGroup, 1, std::max<int64_t>(1, outH / 4));
    const int64_t slabRows = (outH + slabs - 1) / slabs;
    const int64_t planes = batch * outC;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
        const float b = bias ? bias->data()[p % outC] : 0.0f;
        std::fill(out.data() + p * outPlane, out.data() + (p + 1) * outPlane, b);
    }

    for (int64_t n = 0; n < batch; ++n) {
        for (int64_t g = 0; g < spec.groups; ++g) {
            const float* x = in.data() + (n * inC + g * inPerGroup) * inPlane;
            const float* w = weight.data() + g * inPerGroup * rows;
            float* dst = out.data() + (n * outC + g * outPerGroup) * outPlane;
            for (int64_t p0 = 0; p0 < inPlane; p0 += chunk) {
                const int64_t count = std::min(chunk, inPlane - p0);
                detail::parallelSgemm(
                    true, false, rows, count, inPerGroup, w, rows, x + p0, inPlane, 0.0f, col.get(), count);
                const float* columns = col.get();
#pragma omp parallel for schedule(dynamic)
                for (int64_t item = 0; item < outPerGroup * slabs; ++item) {
                    const int64_t oc = item / slabs, slab = item % slabs;
                    const int64_t ohLo = slab * slabRows, ohHi = std::min(outH, ohLo + slabRows);
                    float* plane = dst + oc * outPlane;
                    for (int64_t ki = 0; ki < kh; ++ki) {
                        // oh = ih·s_h − top + ki·d_h ∈ [ohLo, ohHi): only the input rows that reach this slab.
                        const int64_t lowNum = ohLo + pad.top - ki * dh, highNum = ohHi - 1 + pad.top - ki * dh;
                        if (ohLo >= ohHi || highNum < 0)
                            continue;
                        const int64_t first = std::max(p0, (lowNum <= 0 ? 0 : (lowNum + sh - 1) / sh) * inW);
                        const int64_t last = std::min(p0 + count, (highNum / sh + 1) * inW);
                        for (int64_t kj = 0; kj < kw; ++kj) {
                            const float* src = columns + ((oc * kh + ki) * kw + kj) * count - p0;
                            int64_t ih = first / inW, iw = first % inW;
                            for (int64_t i = first; i < last; ++i) {
                                const int64_t oh = ih * sh - pad.top + ki * dh;
                                const int64_t ow = iw * sw - pad.left + kj * dw;
                                if (oh >= ohLo && oh < ohHi && ow >= 0 && ow < outW)
                                    plane[oh * outW + ow] += src[i];
                                if (++iw == inW) {
                                    iw = 0;
                                    ++ih;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

} // namespace convscope::cpu::fast
