// conv3d, vol2col + GEMM (cpu.im2col_gemm, cpu.tap_gemm and cpu.fft run this for volumes).
//
// conv2d_im2col_gemm.cpp with one more axis. For one item and one group, with K = (C_in/g)·kd·kh·kw and
// P = D_out·H_out·W_out:
//
//   col[K, P]       col[(ic, a, b, c), (od, oh, ow)] = in[ic, od·s_d − pad.front + a·d_d, oh·s_h − pad.top + b·d_h,
//                                                          ow·s_w − pad.left + c·d_w]   (zero in the padding)
//   out[C_out/g, P] = W[C_out/g, K] · col[K, P]          one cblas_sgemm
//
// As in 2-D, the output voxels are cut into tiles whose columns fit in L2 (about 1 MiB, at least 512 voxels or one
// per output channel) and (item, group, tile) is the unit of work of one OpenMP loop: each thread builds its tile's
// columns in its own buffer and multiplies them at once with a single-threaded sgemm, so the columns never go to
// memory and only one thread pool runs. A 5×5×5 kernel makes the column matrix 125 times the input, which is why the
// whole-volume vol2col is never built. A 1×1×1 convolution with stride 1 and no padding needs no vol2col at all.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/volume_common.h"
#include "compute/cpu_threads.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstring>

namespace convscope::cpu::fast {

namespace {

    struct Geometry {
        int64_t inD, inH, inW, outH, outW, kd, kh, kw, sd, sh, sw, dd, dh, dw, front, top, left;
    };

    // The columns of output voxels [p0, p0 + count) for `channels` input volumes into col[K, count] (one thread).
    void vol2colTile(const float* volumes, int64_t channels, const Geometry& g, int64_t p0, int64_t count, float* col)
    {
        const int64_t taps = g.kd * g.kh * g.kw;
        const int64_t inVolume = g.inD * g.inH * g.inW;
        for (int64_t ic = 0; ic < channels; ++ic) {
            const float* volume = volumes + ic * inVolume;
            for (int64_t a = 0; a < g.kd; ++a)
                for (int64_t b = 0; b < g.kh; ++b)
                    for (int64_t c = 0; c < g.kw; ++c) {
                        float* dst = col + (ic * taps + (a * g.kh + b) * g.kw + c) * count;
                        const int64_t shift = c * g.dw - g.left; // iw = ow·s_w + shift
                        // The output columns whose tap lands inside the row: iw >= 0 ⇔ ow >= ⌈−shift / s⌉,
                        // iw < W ⇔ ow <= ⌊(W − 1 − shift) / s⌋. Inside them a copy without tests, zeros outside.
                        const int64_t first = shift >= 0 ? 0 : (-shift + g.sw - 1) / g.sw;
                        const int64_t last = g.inW - 1 - shift < 0 ? -1 : (g.inW - 1 - shift) / g.sw;
                        const int64_t lo = std::min(first, g.outW), hi = std::clamp<int64_t>(last + 1, lo, g.outW);
                        int64_t rest = p0 / g.outW, ow = p0 % g.outW;
                        int64_t oh = rest % g.outH, od = rest / g.outH;
                        for (int64_t i = 0; i < count;) {
                            const int64_t segment = std::min(g.outW - ow, count - i);
                            const int64_t id = od * g.sd - g.front + a * g.dd;
                            const int64_t ih = oh * g.sh - g.top + b * g.dh;
                            float* d = dst + i - ow; // d[x] is the column of output column x of this row
                            if (id < 0 || id >= g.inD || ih < 0 || ih >= g.inH) {
                                std::fill(d + ow, d + ow + segment, 0.0f);
                            } else {
                                const float* src = volume + (id * g.inH + ih) * g.inW + shift;
                                const int64_t end = ow + segment;
                                const int64_t x0 = std::clamp(lo, ow, end), x1 = std::clamp(hi, x0, end);
                                std::fill(d + ow, d + x0, 0.0f);
                                if (g.sw == 1)
                                    std::memcpy(d + x0, src + x0, size_t(x1 - x0) * sizeof(float));
                                else
                                    for (int64_t x = x0; x < x1; ++x)
                                        d[x] = src[x * g.sw];
                                std::fill(d + x1, d + end, 0.0f);
                            }
                            i += segment;
                            ow = 0;
                            if (++oh == g.outH) {
                                oh = 0;
                                ++od;
                            }
                        }
                    }
        }
    }

} // namespace

void conv3d(
    const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv3d& spec, const Padding3d& pad, Tensor& out)
{
    const std::string op = "conv3d";
    const detail::ConvSizes3d g = detail::checkConvolution3d(in, weight, bias, spec, out, op, false);
    const int64_t groups = spec.groups;
    const int64_t depth = g.inPerGroup * g.kd * g.kh * g.kw; // K
    const int64_t voxels = g.outD * g.outH * g.outW; // P
    const int64_t inVolume = g.inD * g.inH * g.inW;
    const bool pointwise = g.kd == 1 && g.kh == 1 && g.kw == 1 && spec.stride == Triple { 1, 1, 1 }
        && pad == Padding3d {} && voxels == inVolume;
    detail::requireBlasDimensions({ depth, voxels, inVolume, g.outPerGroup }, op);
    const Geometry geometry { g.inD, g.inH, g.inW, g.outH, g.outW, g.kd, g.kh, g.kw, spec.stride[0], spec.stride[1],
        spec.stride[2], spec.dilation[0], spec.dilation[1], spec.dilation[2], pad.front, pad.top, pad.left };

    // The tile rule of conv2d_im2col_gemm.cpp (its header says why): ~1 MiB of columns, ≥ 512 voxels, ≥ C_out/g.
    const int64_t fitsL2 = (int64_t(1) << 20) / (4 * depth);
    const int64_t tile
        = std::min(voxels, std::max<int64_t>({ 512, fitsL2, std::min<int64_t>(g.outPerGroup, 1024) }) / 16 * 16);
    const int64_t tiles = (voxels + tile - 1) / tile;
    const int64_t tasks = g.batch * groups * tiles;
    const int threads = int(std::min<int64_t>(omp_get_max_threads(), tasks));
    std::unique_ptr<float[]> col;
    if (!pointwise)
        col = detail::allocateWorkspace(int64_t(threads) * depth * tile, op);

    keepBlasOnCallingThread();
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (int64_t task = 0; task < tasks; ++task) {
        const int64_t t = task % tiles;
        const int64_t gr = (task / tiles) % groups;
        const int64_t n = task / (tiles * groups);
        const int64_t p0 = t * tile;
        const int64_t count = std::min(tile, voxels - p0);
        const float* volumes = in.data() + (n * g.inC + gr * g.inPerGroup) * inVolume;
        const float* w = weight.data() + gr * g.outPerGroup * depth;
        float* dst = out.data() + (n * g.outC + gr * g.outPerGroup) * voxels + p0;
        if (pointwise) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(g.outPerGroup), blasint(count),
                blasint(depth), 1.0f, w, blasint(depth), volumes + p0, blasint(inVolume), 0.0f, dst, blasint(voxels));
        } else {
            float* mine = col.get() + int64_t(omp_get_thread_num()) * depth * tile;
            vol2colTile(volumes, g.inPerGroup, geometry, p0, count, mine);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(g.outPerGroup), blasint(count),
                blasint(depth), 1.0f, w, blasint(depth), mine, blasint(count), 0.0f, dst, blasint(voxels));
        }
        if (bias)
            for (int64_t oc = 0; oc < g.outPerGroup; ++oc) {
                const float b = bias->data()[gr * g.outPerGroup + oc];
                float* row = dst + oc * voxels;
                for (int64_t i = 0; i < count; ++i)
                    row[i] += b;
            }
    }
}

} // namespace convscope::cpu::fast
