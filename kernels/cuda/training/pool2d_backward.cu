// The pools' backward (pool2d_backward.cuh) as gathers: one thread per input element, so every element is written
// once, without atomics, in a fixed order (deterministic).
//
// An input row ih lies in the windows of the output rows oh with oh·stride − padTop + i·dil = ih for a tap i < kh:
// for each i, t = ih + padTop − i·dil must be a non-negative multiple of the stride with t/stride < P (the same
// enumeration as a transposed convolution's gather). maxpool2d recomputes each such window's argmax from x with the
// forward's rule (the first in-bounds tap, replaced by a larger value or a NaN) and takes the window's gradient when
// the argmax is this element; avgpool2d adds each covering window's gradient divided by that window's divisor
// (divisor_override, the window clipped to the padded input when count_include_pad, else to the input). Windows
// overlap little in practice (k ≤ 2·stride).
//
// maxpool2d's training forward writes each window's argmax beside its maximum (a thread per output, into the
// layer's int buffer), as PyTorch's max_pool2d_with_indices does; its backward is then one gather that compares
// indices. Recomputing the argmax per input element instead rescanned 9 taps for each of the up to 4 windows a
// ResNet 3×3/2 pool's input lies in (36 loads an element): 2.17 ms against cuDNN's 0.60 at batch 32 on 112² (H200);
// the argmax pass in the backward with 64-bit index divisions took 0.68 ms; the gather finding its windows tap by tap
// (two 32-bit divisions a tap, 12 an element) took 0.53 ms, and with each axis's windows as one range
// (poolWindowsOver, four divisions an element) 0.40–0.41 ms, against cuDNN's deterministic max-pooling backward's
// 0.60 and PyTorch's max_pool2d_with_indices backward's 0.29 (H200, 2026-12-01). The divisions by the stride still
// bound it: about 25 M elements × 4 divisions.
#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"
#include "kernels/cuda/training/backward_index.h"
#include "kernels/cuda/training/pool2d_backward.cuh"

#include <algorithm>

namespace convscope::cuda::train {

namespace {
    constexpr int kThreads = 256;

    unsigned blocksFor(long long count)
    {
        return unsigned(std::max<long long>(1, std::min<long long>((count + kThreads - 1) / kThreads, 1 << 20)));
    }

    // The training forward: each window's maximum, as maxpool2d.cu's kernel computes it (the first in-bounds tap,
    // replaced by a larger value or a NaN; −∞ for a window wholly in the padding), and where it is (its in-plane
    // index, −1 for no tap) for the backward — PyTorch's max_pool2d_with_indices. 32-bit indices (the session refuses
    // tensors of 2^31 elements); the flat index split by multiply-high divisions, not the 64-bit divisions that made
    // the two-pass backward cost 0.68 ms on ResNet-18's 112² pool at batch 32.
    template <typename T>
    __global__ void forwardWithArgmaxKernel(PoolGeometry g, FastDivmod byQ, FastDivmod byP, const T* __restrict__ x,
        T* __restrict__ y, int* __restrict__ argmax, unsigned total)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const unsigned row = byQ.quotient(idx);
            const int ow = int(idx - row * unsigned(g.q));
            const unsigned plane = byP.quotient(row);
            const int oh = int(row - plane * unsigned(g.p));
            const T* xp = x + size_t(plane) * unsigned(g.h * g.w);
            const int h0 = oh * g.strideH - g.padTop, w0 = ow * g.strideW - g.padLeft;
            float best = -INFINITY;
            int arg = -1;
            for (int a = 0; a < g.kh; ++a) {
                const int hh = h0 + a * g.dilH;
                if (hh < 0 || hh >= g.h)
                    continue;
                for (int b = 0; b < g.kw; ++b) {
                    const int ww = w0 + b * g.dilW;
                    if (ww < 0 || ww >= g.w)
                        continue;
                    const float v = gpu::toFloat(xp[hh * g.w + ww]); // widening is exact: the same argmax
                    if (arg < 0)
                        arg = hh * g.w + ww;
                    if (v > best || isnan(v)) {
                        best = v;
                        arg = hh * g.w + ww;
                    }
                }
            }
            y[idx] = gpu::fromFloat<T>(best);
            argmax[idx] = arg;
        }
    }

    // The backward: each input element sums the gradients of the windows whose argmax it is, windows in tap order.
    template <typename T>
    __global__ void argmaxGatherKernel(PoolGeometry g, FastDivmod byW, FastDivmod byH, const int* __restrict__ argmax,
        const T* __restrict__ gy, T* __restrict__ gx, unsigned total)
    {
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const unsigned row = byW.quotient(idx);
            const int iw = int(idx - row * unsigned(g.w));
            const unsigned plane = byH.quotient(row);
            const int ih = int(row - plane * unsigned(g.h));
            const int pos = ih * g.w + iw;
            const int* ap = argmax + size_t(plane) * unsigned(g.p * g.q);
            const T* gp = gy + size_t(plane) * unsigned(g.p * g.q);
            const PoolWindowRange rows = poolWindowsOver(ih, g.kh, g.padTop, g.dilH, g.strideH, g.p);
            const PoolWindowRange cols = poolWindowsOver(iw, g.kw, g.padLeft, g.dilW, g.strideW, g.q);
            float sum = 0.0f;
            for (int oh = rows.last; oh >= rows.first; --oh) { // descending: tap order
                if (!poolWindowCovers(ih, oh, g.padTop, g.dilH, g.strideH))
                    continue;
                for (int ow = cols.last; ow >= cols.first; --ow)
                    if (poolWindowCovers(iw, ow, g.padLeft, g.dilW, g.strideW) && __ldg(ap + oh * g.q + ow) == pos)
                        sum += gpu::toFloat(gp[oh * g.q + ow]);
            }
            gx[idx] = gpu::fromFloat<T>(sum);
        }
    }

    __global__ void avgBackwardKernel(
        PoolGeometry g, const float* __restrict__ gy, float* __restrict__ gx, long long total)
    {
        for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
             idx += (long long)gridDim.x * blockDim.x) {
            const long long plane = idx / (g.h * g.w);
            const int pos = int(idx - plane * g.h * g.w), ih = pos / g.w, iw = pos - ih * g.w;
            const float* gp = gy + plane * g.p * g.q;
            double sum = 0;
            const PoolWindowRange rows = poolWindowsOver(ih, g.kh, g.padTop, 1, g.strideH, g.p);
            const PoolWindowRange cols = poolWindowsOver(iw, g.kw, g.padLeft, 1, g.strideW, g.q);
            for (int oh = rows.last; oh >= rows.first; --oh) { // descending: tap order
                for (int ow = cols.last; ow >= cols.first; --ow) {
                    int hs = oh * g.strideH - g.padTop, ws = ow * g.strideW - g.padLeft;
                    int he = min(hs + g.kh, g.h + g.padBottom), we = min(ws + g.kw, g.w + g.padRight);
                    if (ih >= he || iw >= we)
                        continue; // the tap lies past the padded input (ceil_mode's last window)
                    const int pool = (he - hs) * (we - ws);
                    hs = max(hs, 0), ws = max(ws, 0);
                    he = min(he, g.h), we = min(we, g.w);
                    const int divisor = g.divisorOverride ? g.divisorOverride
                        : g.countIncludePad               ? pool
                                                          : (he - hs) * (we - ws);
                    sum += double(gp[oh * g.q + ow]) / double(divisor);
                }
            }
            gx[idx] = float(sum);
        }
    }

    __global__ void globalBackwardKernel(
        long long area, const float* __restrict__ gy, float* __restrict__ gx, long long total)
    {
        for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
             idx += (long long)gridDim.x * blockDim.x)
            gx[idx] = float(double(gy[idx / area]) / double(area));
    }
} // namespace

void maxPool2dTrainForward(const PoolGeometry& g, DType type, const void* x, void* y, int* argmax, cudaStream_t st)
{
    const long long windows = (long long)g.n * g.c * g.p * g.q;
    gpu::withStorageType(type, [&](auto tag) {
        using T = decltype(tag);
        forwardWithArgmaxKernel<T><<<blocksFor(windows), kThreads, 0, st>>>(g, FastDivmod(uint32_t(g.q)),
            FastDivmod(uint32_t(g.p)), static_cast<const T*>(x), static_cast<T*>(y), argmax, unsigned(windows));
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::maxPool2dTrainForward");
}

void maxPool2dBackward(const PoolGeometry& g, DType type, const int* argmax, const void* gy, void* gx, cudaStream_t st)
{
    const long long total = (long long)g.n * g.c * g.h * g.w;
    gpu::withStorageType(type, [&](auto tag) {
        using T = decltype(tag);
        argmaxGatherKernel<T><<<blocksFor(total), kThreads, 0, st>>>(g, FastDivmod(uint32_t(g.w)),
            FastDivmod(uint32_t(g.h)), argmax, static_cast<const T*>(gy), static_cast<T*>(gx), unsigned(total));
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::maxPool2dBackward");
}

void avgPool2dBackward(const PoolGeometry& g, const float* gy, float* gx, cudaStream_t st)
{
    const long long total = (long long)g.n * g.c * g.h * g.w;
    avgBackwardKernel<<<blocksFor(total), kThreads, 0, st>>>(g, gy, gx, total);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::avgPool2dBackward");
}

void globalAvgPool2dBackward(long long planes, long long area, const float* gy, float* gx, cudaStream_t st)
{
    const long long total = planes * area;
    globalBackwardKernel<<<blocksFor(total), kThreads, 0, st>>>(area, gy, gx, total);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::globalAvgPool2dBackward");
}

} // namespace convscope::cuda::train
