// conv2d, im2col + GEMM (cpu.im2col_gemm).
//
// A convolution is a matrix product once the input windows are laid out as columns. For one image and one
// group, with K = (C_in/g)·kh·kw and P = H_out·W_out:
//
//   col[K, P]       col[(ic, ki, kj), (oh, ow)] = in[ic, oh·s_h − pad.top + ki·d_h, ow·s_w − pad.left + kj·d_w]
//                   (zero where the tap falls into the padding)
//   out[C_out/g, P] = W[C_out/g, K] · col[K, P]          one cblas_sgemm
//
// The column matrix is kh·kw times larger than the input, which for a big image is gigabytes. So the
// output pixels are processed in chunks: each chunk builds the columns of its pixels only and multiplies
// them straight into the matching columns of the output (ldc = P), keeping the workspace under
// max(kMinWorkspaceBytes, input + output bytes). A 1×1 convolution with stride 1 and no padding needs no
// im2col at all: the input plane already is the column matrix. Bias is added in a final parallel pass.
// im2col itself is split across OpenMP threads by column-matrix row; sgemm runs on OpenBLAS's threads.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <cblas.h>

#include <algorithm>

namespace convscope::cpu::fast {

namespace {

    struct ConvGeometry {
        int64_t inH, inW, outW, kh, kw, sh, sw, dh, dw, padTop, padLeft;
    };

    // Writes the columns of output pixels [p0, p0 + count) for `channels` input planes into col[K, count].
    void im2colChunk(
        const float* planes, int64_t channels, const ConvGeometry& g, int64_t p0, int64_t count, float* col)
    {
        const int64_t rows = channels * g.kh * g.kw;
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t ic = r / (g.kh * g.kw);
            const int64_t ki = (r / g.kw) % g.kh;
            const int64_t kj = r % g.kw;
            const float* plane = planes + ic * g.inH * g.inW;
            float* dst = col + r * count;
            int64_t oh = p0 / g.outW, ow = p0 % g.outW;
            // Walk the chunk one output row segment at a time so the row test is made once per segment.
            for (int64_t i = 0; i < count;) {
                const int64_t segment = std::min(g.outW - ow, count - i);
                const int64_t ih = oh * g.sh - g.padTop + ki * g.dh;
                if (ih < 0 || ih >= g.inH) {
                    std::fill(dst + i, dst + i + segment, 0.0f);
                } else {
                    const float* src = plane + ih * g.inW;
                    for (int64_t t = 0; t < segment; ++t) {
                        const int64_t iw = (ow + t) * g.sw - g.padLeft + kj * g.dw;
                        dst[i + t] = (iw >= 0 && iw < g.inW) ? src[iw] : 0.0f;
                    }
                }
                i += segment;
                ++oh;
                ow = 0;
            }
        }
    }

} // namespace

void conv2d(
    const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec, const Padding2d& pad, Tensor& out)
{
    const std::string op = "conv2d";
    const detail::ConvSizes g = detail::checkConvolution(in, weight, bias, spec, out, op, false);
    const int64_t batch = g.batch, inC = g.inC, inH = g.inH, inW = g.inW;
    const int64_t outC = g.outC, outH = g.outH, outW = g.outW, kh = g.kh, kw = g.kw;
    const int64_t inPerGroup = g.inPerGroup, outPerGroup = g.outPerGroup;

    const int64_t depth = inPerGroup * kh * kw; // K: the shared dimension of the product
    const int64_t pixels = outH * outW; // P
    const int64_t inPlane = inH * inW;
    const bool pointwise = kh == 1 && kw == 1 && spec.stride[0] == 1 && spec.stride[1] == 1 && pad.top == 0
        && pad.bottom == 0 && pad.left == 0 && pad.right == 0 && outH == inH && outW == inW;

    detail::requireBlasDimensions({ depth, pixels, inPlane, outPerGroup }, op);
    const ConvGeometry geometry { inH, inW, outW, kh, kw, spec.stride[0], spec.stride[1], spec.dilation[0],
        spec.dilation[1], pad.top, pad.left };
    int64_t chunk = 0;
    std::unique_ptr<float[]> col;
    if (!pointwise) {
        chunk
            = std::clamp<int64_t>(detail::workspaceBudgetBytes(in, out) / (depth * int64_t(sizeof(float))), 1, pixels);
        col = detail::allocateWorkspace(depth * chunk, op);
    }

    for (int64_t n = 0; n < batch; ++n) {
        for (int64_t g = 0; g < spec.groups; ++g) {
            const float* planes = in.data() + (n * inC + g * inPerGroup) * inPlane;
            const float* w = weight.data() + g * outPerGroup * depth;
            float* dst = out.data() + (n * outC + g * outPerGroup) * pixels;
            if (pointwise) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(outPerGroup), blasint(pixels),
                    blasint(depth), 1.0f, w, blasint(depth), planes, blasint(inPlane), 0.0f, dst, blasint(pixels));
                continue;
            }
            for (int64_t p0 = 0; p0 < pixels; p0 += chunk) {
                const int64_t count = std::min(chunk, pixels - p0);
                im2colChunk(planes, inPerGroup, geometry, p0, count, col.get());
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(outPerGroup), blasint(count),
                    blasint(depth), 1.0f, w, blasint(depth), col.get(), blasint(count), 0.0f, dst + p0,
                    blasint(pixels));
            }
        }
    }

    if (bias) {
        const int64_t planes = batch * outC;
#pragma omp parallel for schedule(static)
        for (int64_t p = 0; p < planes; ++p) {
            const float b = bias->data()[p % outC];
            float* dst = out.data() + p * pixels;
            for (int64_t i = 0; i < pixels; ++i)
                dst[i] += b;
        }
    }
}

} // namespace convscope::cpu::fast
