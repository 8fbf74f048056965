// Window and global pooling on the GPU (maxpool2d.cu, avgpool2d.cu, global_avgpool2d.cu).
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// Input [n, c, h, w], output [n, c, p, q]; padding resolved (top, bottom, left, right).
struct PoolGeometry {
    int n, c, h, w, p, q;
    int kh, kw, strideH, strideW;
    int padTop, padBottom, padLeft, padRight;
    int dilH, dilW; // maxpool only
    bool countIncludePad; // avgpool only
    int divisorOverride; // avgpool only; 0 = none
};

// True when every window is a whole 2×2 block at (2p, 2q) inside the input: kernel 2×2, stride 2, dilation 1, no
// top/left padding, and P = ⌊H/2⌋, Q = ⌊W/2⌋ (so neither ceil_mode nor bottom/right padding added a window that
// leaves the input). Padding then never enters a window, so count_include_pad cannot matter and the average's
// divisor is divisor_override or 4. Odd H or W are fine: the last row or column is simply never read.
inline bool isPool2x2Stride2(const PoolGeometry& g)
{
    return g.kh == 2 && g.kw == 2 && g.strideH == 2 && g.strideW == 2 && g.dilH == 1 && g.dilW == 1 && g.padTop == 0
        && g.padLeft == 0 && g.p == g.h / 2 && g.q == g.w / 2 && g.p > 0 && g.q > 0;
}

// How many adjacent outputs of one row a thread of the 2×2 kernel produces and how it reads them:
// 4 = two float4 per input row (W % 8 == 0), 2 = one float4 (W % 4 == 0), 1 = one float2 (W even), 0 = scalar.
// The vector widths also need the pointers aligned to the access (the arena aligns tensors to 256 bytes, but a
// caller may pass a view).
inline int pool2x2Width(const PoolGeometry& g, const float* x, const float* y)
{
    const auto aligned = [](const float* ptr, unsigned bytes) { return reinterpret_cast<size_t>(ptr) % bytes == 0; };
    if (g.w % 8 == 0 && aligned(x, 16) && aligned(y, 16))
        return 4;
    if (g.w % 4 == 0 && aligned(x, 16) && aligned(y, 8))
        return 2;
    if (g.w % 2 == 0 && aligned(x, 8))
        return 1;
    return 0;
}

#if defined(__CUDACC__)
// The 2×2 stride-2 kernel both window pools share (isPool2x2Stride2). Op(v00, v01, v10, v11) reduces one window
// given in PyTorch's row-major visiting order. One thread makes max(V, 1) adjacent outputs of one output row
// from two input rows; V picks the loads (pool2x2Width). __ldcs marks the input as streamed (read once):
// it is evicted first and does not push the output, which the next layer reads, out of L2.
template <int V, class Op>
__global__ void pool2x2Kernel(PoolGeometry g, Op op, const float* __restrict__ x, float* __restrict__ y, unsigned total)
{
    constexpr int per = V == 0 ? 1 : V;
    const unsigned qv = static_cast<unsigned>(g.q) / per;
    // 32-bit element offsets: supports() caps tensors at 2^31 elements.
    for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
        const unsigned row = idx / qv, col = idx - row * qv;
        const unsigned plane = row / g.p, p = row - plane * g.p;
        const float* in0 = x + (plane * g.h + 2 * p) * g.w + 2 * per * col;
        const float* in1 = in0 + g.w;
        float* out = y + row * g.q + per * col;
        if constexpr (V == 4) {
            const float4 a0 = __ldcs(reinterpret_cast<const float4*>(in0));
            const float4 b0 = __ldcs(reinterpret_cast<const float4*>(in0) + 1);
            const float4 a1 = __ldcs(reinterpret_cast<const float4*>(in1));
            const float4 b1 = __ldcs(reinterpret_cast<const float4*>(in1) + 1);
            *reinterpret_cast<float4*>(out) = make_float4(op(a0.x, a0.y, a1.x, a1.y), op(a0.z, a0.w, a1.z, a1.w),
                op(b0.x, b0.y, b1.x, b1.y), op(b0.z, b0.w, b1.z, b1.w));
        } else if constexpr (V == 2) {
            const float4 a0 = __ldcs(reinterpret_cast<const float4*>(in0));
            const float4 a1 = __ldcs(reinterpret_cast<const float4*>(in1));
            *reinterpret_cast<float2*>(out) = make_float2(op(a0.x, a0.y, a1.x, a1.y), op(a0.z, a0.w, a1.z, a1.w));
        } else if constexpr (V == 1) {
            const float2 a0 = __ldcs(reinterpret_cast<const float2*>(in0));
            const float2 a1 = __ldcs(reinterpret_cast<const float2*>(in1));
            *out = op(a0.x, a0.y, a1.x, a1.y);
        } else {
            *out = op(__ldcs(in0), __ldcs(in0 + 1), __ldcs(in1), __ldcs(in1 + 1));
        }
    }
}

template <class Op> void launchPool2x2(const PoolGeometry& g, Op op, const float* x, float* y, cudaStream_t st)
{
    const int v = pool2x2Width(g, x, y);
    const unsigned per = v == 0 ? 1 : v;
    const unsigned total = static_cast<unsigned>(static_cast<long long>(g.n) * g.c * g.p * (g.q / per));
    const unsigned blocks = (total + 255) / 256 < (1u << 30) ? (total + 255) / 256 : (1u << 30);
    switch (v) {
    case 4:
        pool2x2Kernel<4><<<blocks, 256, 0, st>>>(g, op, x, y, total);
        break;
    case 2:
        pool2x2Kernel<2><<<blocks, 256, 0, st>>>(g, op, x, y, total);
        break;
    case 1:
        pool2x2Kernel<1><<<blocks, 256, 0, st>>>(g, op, x, y, total);
        break;
    default:
        pool2x2Kernel<0><<<blocks, 256, 0, st>>>(g, op, x, y, total);
        break;
    }
}
#endif

void maxPool2d(const PoolGeometry& g, const float* x, float* y, cudaStream_t st);
void avgPool2d(const PoolGeometry& g, const float* x, float* y, cudaStream_t st);
// [n, c, h, w] -> [n, c, 1, 1]
void globalAvgPool2d(int planes, int planeSize, const float* x, float* y, cudaStream_t st);

} // namespace convscope::cuda
