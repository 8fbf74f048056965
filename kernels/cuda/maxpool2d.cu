// maxpool2d: y[n, c, p, q] = max over the window rows p·sh − top + i·dh, columns q·sw − left + j·dw that fall
// inside the input (padding never wins: it is −∞, as in PyTorch). NaN propagates exactly as PyTorch's kernels
// do (`v > best || isnan(v)`), so a NaN input is not silently dropped.
//
// One thread per output element. The op is memory-bound (k·k loads and one store per output, no reuse worth
// staging in shared memory for the usual 2×2 / 3×3 windows): consecutive threads take consecutive output
// columns, so a warp's loads for one window row are one or two contiguous segments and the L1 cache serves the
// overlap of neighbouring windows. ceil_mode and asymmetric padding only change P and Q, which shape inference
// already fixed; the window clipping below handles the rest.
#include "kernels/cuda/pooling.cuh"

#include <cfloat>

namespace convscope::cuda {

namespace {
    __global__ void maxPoolKernel(PoolGeometry g, const float* __restrict__ x, float* __restrict__ y, unsigned total)
    {
        // 32-bit indices: supports() caps tensors at 2^31 elements, and 64-bit division costs ~5x the loads here.
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const unsigned row = idx / g.q;
            const int q = static_cast<int>(idx - row * g.q);
            const unsigned plane = row / g.p;
            const int p = static_cast<int>(row - plane * g.p);
            const float* xp = x + static_cast<size_t>(plane) * g.h * g.w;
            const int h0 = p * g.strideH - g.padTop, w0 = q * g.strideW - g.padLeft;
            float best = -INFINITY;
            for (int i = 0; i < g.kh; ++i) {
                const int ih = h0 + i * g.dilH;
                if (ih < 0 || ih >= g.h)
                    continue;
                for (int j = 0; j < g.kw; ++j) {
                    const int iw = w0 + j * g.dilW;
                    if (iw < 0 || iw >= g.w)
                        continue;
                    const float v = __ldg(xp + ih * g.w + iw);
                    if (v > best || isnan(v))
                        best = v;
                }
            }
            y[idx] = best;
        }
    }
} // namespace

void maxPool2d(const PoolGeometry& g, const float* x, float* y, cudaStream_t st)
{
    const long long total = static_cast<long long>(g.n) * g.c * g.p * g.q;
    const long long blocks = (total + 255) / 256;
    maxPoolKernel<<<static_cast<unsigned>(blocks < (1LL << 30) ? blocks : (1LL << 30)), 256, 0, st>>>(g, x, y, static_cast<unsigned>(total));
}

} // namespace convscope::cuda
