// conv_transpose3d, GEMM + col2vol (cpu.im2col_gemm and the other fast CPU algorithms run this for volumes).
//
// conv_transpose2d_col2im_gemm.cpp with one more axis. For one item and one group, with Kc = (C_out/g)·kd·kh·kw:
//
//   col[Kc, V] = Wᵀ · X       W is the group's weight rows viewed as [C_in/g, Kc] (PyTorch's layout
//                             [C_in, C_out/g, kd, kh, kw] is exactly that), X the input [C_in/g, V voxels]
//   col2vol                   every column entry (oc, a, b, c) of input voxel (id, ih, iw) is added to
//                             out[oc, id·s_d − pad.front + a·d_d, ih·s_h − pad.top + b·d_h, iw·s_w − pad.left + c·d_w]
//                             when that lands inside the output (the crop and output_padding fall out of this test)
//
// The column matrix is kd·kh·kw times the input, so input voxels go in chunks bounded by max(kMinWorkspaceBytes,
// input + output bytes). Work is split two ways: with at least as many (item, group) pairs as threads (a batch of
// decoder runs, the lecture's interpolation) each thread takes whole pairs with its own buffer and a single-threaded
// sgemm; otherwise pairs run one after the other, the product split across the team (detail::parallelSgemm) and the
// scatter by output channel, where no two threads touch the same element. The output starts as the bias (or zero).
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/volume_common.h"
#include "compute/cpu_threads.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>

namespace convscope::cpu::fast {

namespace {

    struct Geometry {
        int64_t inH, inW, outD, outH, outW, kd, kh, kw, sd, sh, sw, dd, dh, dw, front, top, left;
    };

    // Adds the columns of input voxels [v0, v0 + count) for output channel `oc` into its output volume, only where
    // they land in output depth planes [odLo, odHi): each tap visits just the input planes that reach there, so
    // threads that own different planes of one channel share no element and repeat no work.
    void col2volChannel(const float* columns, int64_t oc, int64_t v0, int64_t count, const Geometry& g, int64_t odLo,
        int64_t odHi, float* volume)
    {
        const int64_t plane = g.inH * g.inW;
        for (int64_t a = 0; a < g.kd; ++a) {
            // od = id·s_d − front + a·d_d ∈ [odLo, odHi)  ⇔  id·s_d ∈ [odLo + front − a·d_d, odHi − 1 + front − a·d_d]
            const int64_t lowNum = odLo + g.front - a * g.dd, highNum = odHi - 1 + g.front - a * g.dd;
            if (highNum < 0)
                continue;
            const int64_t lowest = lowNum <= 0 ? 0 : (lowNum + g.sd - 1) / g.sd;
            const int64_t highest = highNum / g.sd;
            const int64_t first = std::max(v0, lowest * plane), last = std::min(v0 + count, (highest + 1) * plane);
            if (first >= last)
                continue;
            for (int64_t b = 0; b < g.kh; ++b)
                for (int64_t c = 0; c < g.kw; ++c) {
                    const float* src = columns + (((oc * g.kd + a) * g.kh + b) * g.kw + c) * count - v0;
                    int64_t rest = first / g.inW, iw = first % g.inW;
                    int64_t ih = rest % g.inH, id = rest / g.inH;
                    for (int64_t v = first; v < last; ++v) {
                        const int64_t od = id * g.sd - g.front + a * g.dd;
                        const int64_t oh = ih * g.sh - g.top + b * g.dh;
                        const int64_t ow = iw * g.sw - g.left + c * g.dw;
                        if (od >= odLo && od < odHi && oh >= 0 && oh < g.outH && ow >= 0 && ow < g.outW)
                            volume[(od * g.outH + oh) * g.outW + ow] += src[v];
                        if (++iw == g.inW) {
                            iw = 0;
                            if (++ih == g.inH) {
                                ih = 0;
                                ++id;
                            }
                        }
                    }
                }
        }
    }

} // namespace

void convTranspose3d(const Tensor& in, const Tensor& weight, const Tensor* bias, const ConvTranspose3d& spec,
    const Padding3d& pad, Tensor& out)
{
    const std::string op = "conv_transpose3d";
    const detail::ConvSizes3d g = detail::checkConvolution3d(in, weight, bias, spec, out, op, true);
    const int64_t rows = g.outPerGroup * g.kd * g.kh * g.kw; // Kc
    const int64_t inVolume = g.inD * g.inH * g.inW, outVolume = g.outD * g.outH * g.outW;
    detail::requireBlasDimensions({ rows, inVolume, outVolume, g.inPerGroup }, op);
    const Geometry geometry { g.inH, g.inW, g.outD, g.outH, g.outW, g.kd, g.kh, g.kw, spec.stride[0], spec.stride[1],
        spec.stride[2], spec.dilation[0], spec.dilation[1], spec.dilation[2], pad.front, pad.top, pad.left };
    const int64_t chunk
        = std::clamp<int64_t>(detail::workspaceBudgetBytes(in, out) / (rows * int64_t(sizeof(float))), 1, inVolume);

    const int64_t volumes = g.batch * g.outC;
#pragma omp parallel for schedule(static) if (out.numel() >= detail::kMinParallelElements)
    for (int64_t v = 0; v < volumes; ++v) {
        const float b = bias ? bias->data()[v % g.outC] : 0.0f;
        std::fill(out.data() + v * outVolume, out.data() + (v + 1) * outVolume, b);
    }

    const int64_t pairs = g.batch * spec.groups;
    const auto pairPointers = [&](int64_t pair, const float** x, const float** w, float** dst) {
        const int64_t n = pair / spec.groups, gr = pair % spec.groups;
        *x = in.data() + (n * g.inC + gr * g.inPerGroup) * inVolume;
        *w = weight.data() + gr * g.inPerGroup * rows;
        *dst = out.data() + (n * g.outC + gr * g.outPerGroup) * outVolume;
    };
    const auto product = [&](const float* w, const float* x, int64_t v0, int64_t count, float* col) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, blasint(rows), blasint(count), blasint(g.inPerGroup), 1.0f,
            w, blasint(rows), x + v0, blasint(inVolume), 0.0f, col, blasint(count));
    };

    const int maxThreads = omp_get_max_threads();
    if (pairs >= maxThreads) {
        // Whole (item, group) pairs per thread: no two threads write the same output volume. The threads share the
        // workspace bound, so each takes a smaller chunk.
        const int64_t mine = std::clamp<int64_t>(chunk / maxThreads, std::min<int64_t>(inVolume, 256), inVolume);
        std::unique_ptr<float[]> col = detail::allocateWorkspace(int64_t(maxThreads) * rows * mine, op);
        keepBlasOnCallingThread();
#pragma omp parallel for schedule(dynamic) num_threads(maxThreads)
        for (int64_t pair = 0; pair < pairs; ++pair) {
            const float *x, *w;
            float* dst;
            pairPointers(pair, &x, &w, &dst);
            float* buffer = col.get() + int64_t(omp_get_thread_num()) * rows * mine;
            for (int64_t v0 = 0; v0 < inVolume; v0 += mine) {
                const int64_t count = std::min(mine, inVolume - v0);
                product(w, x, v0, count, buffer);
                for (int64_t oc = 0; oc < g.outPerGroup; ++oc)
                    col2volChannel(buffer, oc, v0, count, geometry, 0, g.outD, dst + oc * outVolume);
            }
        }
        return;
    }
    std::unique_ptr<float[]> col = detail::allocateWorkspace(rows * chunk, op);
    // The scatter's work items: (output channel, slab of output depth planes), at least two per thread, so a layer
    // with one output channel (the decoder's last) no longer scatters on one thread.
    const int64_t slabs = std::clamp<int64_t>((2 * int64_t(maxThreads) + g.outPerGroup - 1) / g.outPerGroup, 1, g.outD);
    const int64_t slabDepth = (g.outD + slabs - 1) / slabs;
    for (int64_t pair = 0; pair < pairs; ++pair) {
        const float *x, *w;
        float* dst;
        pairPointers(pair, &x, &w, &dst);
        for (int64_t v0 = 0; v0 < inVolume; v0 += chunk) {
            const int64_t count = std::min(chunk, inVolume - v0);
            detail::parallelSgemm(
                true, false, rows, count, g.inPerGroup, w, rows, x + v0, inVolume, 0.0f, col.get(), count);
            const float* columns = col.get();
#pragma omp parallel for schedule(dynamic)
            for (int64_t item = 0; item < g.outPerGroup * slabs; ++item) {
                const int64_t oc = item / slabs, slab = item % slabs;
                const int64_t odLo = slab * slabDepth, odHi = std::min(g.outD, odLo + slabDepth);
                if (odLo < odHi)
                    col2volChannel(columns, oc, v0, count, geometry, odLo, odHi, dst + oc * outVolume);
            }
        }
    }
}

} // namespace convscope::cpu::fast
