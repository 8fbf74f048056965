// Small kernels around cuDNN: the pad step for asymmetric padding, the NCHW ↔ NHWC transposes of the layout
// switch, conv_transpose2d's crop, and the pooling outputs PyTorch defines differently from cuDNN.
//
// None of this is where the time goes in a convolution, but the transposes are exactly what the layout switch
// exists to show, so they are tiled through shared memory (32×32 tiles, 8 rows per thread, +1 column of
// padding against bank conflicts) and run at memory speed rather than at the speed of strided accesses.
#include "kernels/cudnn/layout_kernels.cuh"

#include "kernels/common/cuda_check.h"

#include <cfloat>
#include <cstdint>

namespace convscope::cudnn {

namespace {
    constexpr int kThreads = 256;

    unsigned blocksFor(int64_t count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

    __global__ void padKernel(const float* __restrict__ x, int n, int c, int h, int w, int top, int left, int ph,
        int pw, bool nhwc, float* __restrict__ y)
    {
        const int64_t total = int64_t(n) * c * ph * pw;
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
             i += int64_t(gridDim.x) * blockDim.x) {
            // Walk the output in its own order so the writes are coalesced.
            int64_t r = i;
            int ci, hi, wi;
            if (nhwc) {
                ci = int(r % c), r /= c;
                wi = int(r % pw), r /= pw;
                hi = int(r % ph), r /= ph;
            } else {
                wi = int(r % pw), r /= pw;
                hi = int(r % ph), r /= ph;
                ci = int(r % c), r /= c;
            }
            const int ni = int(r);
            const int sh = hi - top, sw = wi - left;
            y[i] = (sh >= 0 && sh < h && sw >= 0 && sw < w) ? x[((int64_t(ni) * c + ci) * h + sh) * w + sw] : 0.0f;
        }
    }

    constexpr int kTile = 32, kRowsPerThread = 8;

    __global__ void transposeKernel(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
    {
        __shared__ float tile[kTile][kTile + 1];
        const int64_t plane = int64_t(rows) * cols;
        in += blockIdx.z * plane;
        out += blockIdx.z * plane;
        const int col0 = blockIdx.x * kTile, row0 = blockIdx.y * kTile;
        for (int j = threadIdx.y; j < kTile; j += kRowsPerThread) {
            const int r = row0 + j, cidx = col0 + threadIdx.x;
            if (r < rows && cidx < cols)
                tile[j][threadIdx.x] = in[int64_t(r) * cols + cidx];
        }
        __syncthreads();
        for (int j = threadIdx.y; j < kTile; j += kRowsPerThread) {
            const int oc = col0 + j, orow = row0 + threadIdx.x; // out[oc][orow]
            if (oc < cols && orow < rows)
                out[int64_t(oc) * rows + orow] = tile[threadIdx.x][j];
        }
    }

    __global__ void cropKernel(const float* __restrict__ full, int n, int c, int fh, int fw, int offH, int offW,
        const float* __restrict__ bias, float* __restrict__ y, int oh, int ow)
    {
        const int64_t total = int64_t(n) * c * oh * ow;
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
             i += int64_t(gridDim.x) * blockDim.x) {
            const int x = int(i % ow);
            const int yy = int(i / ow % oh);
            const int64_t plane = i / (int64_t(ow) * oh);
            const int fy = yy + offH, fx = x + offW;
            float v = (fy < fh && fx < fw) ? full[(plane * fh + fy) * fw + fx] : 0.0f;
            if (bias)
                v += bias[plane % c];
            y[i] = v;
        }
    }

    __global__ void poolEdgeKernel(PoolEdge g, const float* __restrict__ x, float* __restrict__ y)
    {
        // The region is an L: rows [cudnnH, outH) of every column, then columns [cudnnW, outW) of rows below cudnnH.
        const int64_t bottomCount = int64_t(g.outH - g.cudnnH) * g.outW;
        const int64_t rightCount = int64_t(g.cudnnH) * (g.outW - g.cudnnW);
        const int64_t perPlane = bottomCount + rightCount;
        const int64_t total = perPlane * g.n * g.c;
        for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
             i += int64_t(gridDim.x) * blockDim.x) {
            const int64_t plane = i / perPlane;
            const int64_t k = i % perPlane;
            int oh, ow;
            if (k < bottomCount) {
                oh = g.cudnnH + int(k / g.outW);
                ow = int(k % g.outW);
            } else {
                const int64_t k2 = k - bottomCount;
                oh = int(k2 / (g.outW - g.cudnnW));
                ow = g.cudnnW + int(k2 % (g.outW - g.cudnnW));
            }
            // PyTorch's rule: clip the window to the padded input first (that is the include-padding divisor),
            // then to the real input (where the values are).
            int hs = oh * g.sh - g.top, ws = ow * g.sw - g.left;
            int he = min(hs + g.kh, g.h + g.bottom), we = min(ws + g.kw, g.w + g.right);
            const int poolSize = (he - hs) * (we - ws);
            hs = max(hs, 0), ws = max(ws, 0);
            he = min(he, g.h), we = min(we, g.w);
            const float* src = x + plane * g.h * g.w;
            float result;
            if (hs >= he || ws >= we) {
                result = 0.0f;
            } else if (g.mode == 0) {
                float m = -FLT_MAX;
                bool nan = false;
                for (int r = hs; r < he; ++r)
                    for (int s = ws; s < we; ++s) {
                        const float v = src[r * g.w + s];
                        nan |= v != v;
                        m = fmaxf(m, v);
                    }
                result = nan ? __int_as_float(0x7fc00000) : m;
            } else {
                float sum = 0.0f;
                for (int r = hs; r < he; ++r)
                    for (int s = ws; s < we; ++s)
                        sum += src[r * g.w + s];
                const int divisor = g.mode == 1 ? poolSize : (he - hs) * (we - ws);
                result = sum / float(divisor);
            }
            y[plane * g.outH * g.outW + int64_t(oh) * g.outW + ow] = result;
        }
    }

    unsigned cappedBlocks(int64_t count)
    {
        const unsigned b = blocksFor(count);
        return b > 65535u * 8u ? 65535u * 8u : (b ? b : 1u); // grid-stride loops cover the rest
    }
} // namespace

void padInput(const float* x, int n, int c, int h, int w, int top, int bottom, int left, int right, bool nhwc, float* y,
    cudaStream_t stream)
{
    const int ph = h + top + bottom, pw = w + left + right;
    padKernel<<<cappedBlocks(int64_t(n) * c * ph * pw), kThreads, 0, stream>>>(
        x, n, c, h, w, top, left, ph, pw, nhwc, y);
    CONVSCOPE_CUDA_CHECK_LAUNCH("cudnn pad step");
}

void transpose(const float* in, float* out, int batch, int rows, int cols, cudaStream_t stream)
{
    const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile, batch);
    transposeKernel<<<grid, dim3(kTile, kRowsPerThread), 0, stream>>>(in, out, rows, cols);
    CONVSCOPE_CUDA_CHECK_LAUNCH("cudnn layout transpose");
}

void cropAddBias(const float* full, int n, int c, int fullH, int fullW, int offH, int offW, const float* bias, float* y,
    int outH, int outW, cudaStream_t stream)
{
    cropKernel<<<cappedBlocks(int64_t(n) * c * outH * outW), kThreads, 0, stream>>>(
        full, n, c, fullH, fullW, offH, offW, bias, y, outH, outW);
    CONVSCOPE_CUDA_CHECK_LAUNCH("cudnn conv_transpose2d crop step");
}

void poolEdges(const PoolEdge& g, const float* x, float* y, cudaStream_t stream)
{
    const int64_t perPlane = int64_t(g.outH - g.cudnnH) * g.outW + int64_t(g.cudnnH) * (g.outW - g.cudnnW);
    if (perPlane <= 0)
        return;
    poolEdgeKernel<<<cappedBlocks(perPlane * g.n * g.c), kThreads, 0, stream>>>(g, x, y);
    CONVSCOPE_CUDA_CHECK_LAUNCH("cudnn pooling edge step");
}

} // namespace convscope::cudnn
