// conv2d's input gradient as a forward convolution (conv2d_backward_data.cuh).
//
// Why. With stride 1, dx[n, c, i, j] = Σ_{k, r, s} dy[n, k, i + pad − r·dil, j + pad − s·dil] · W[k, c, r, s]. Put
// r' = R − 1 − r: the row read is i − (dil·(R − 1) − pad) + r'·dil, an ordinary convolution of dy with padding
// dil·(R − 1) − pad and the kernel flipped in both dimensions, its roles of input and output channels exchanged.
// So the backward-data pass can run the forward's pipelined implicit GEMM (cp.async, 128×128 tiles), which is
// 2–3× faster than the stride-phase transposed convolution on ResNet's 3×3 layers. Its output size is exactly the
// input's: P + 2·(dil·(R − 1)) − pad_top − pad_bottom − dil·(R − 1) = H, the bottom padding following from P as in
// every ConvGeometry. Strided layers keep the phase form (a tap reaches only one output phase in stride²).
//
// The flip runs once per backward pass (the weights change at every update): one thread per weight element, reads
// in the flipped order and writes consecutively.
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/training/conv2d_backward_data.cuh"

#include <algorithm>

namespace convscope::cuda::train {

namespace {
    __global__ void flipKernel(int groups, int kg, int cg, int rs, int r, int s, const float* __restrict__ w,
        float* __restrict__ flipped)
    {
        const long long total = (long long)groups * kg * cg * rs;
        for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
             e += (long long)gridDim.x * blockDim.x) {
            // e walks flipped [groups·cg, kg, r, s]
            const int tap = int(e % rs);
            const long long rest = e / rs;
            const int kk = int(rest % kg);
            const long long gc = rest / kg; // g·cg + c
            const int grp = int(gc / cg), c = int(gc % cg);
            const int fr = tap / s, fs = tap % s;
            const int src = (r - 1 - fr) * s + (s - 1 - fs);
            flipped[e] = w[((long long)(grp * kg + kk) * cg + c) * rs + src];
        }
    }
} // namespace

bool conv2dBackwardDataAsConvApplies(const ConvGeometry& g)
{
    return g.strideH == 1 && g.strideW == 1 && g.dilH * (g.r - 1) >= g.padTop && g.dilW * (g.s - 1) >= g.padLeft;
}

ConvGeometry conv2dBackwardDataGeometry(const ConvGeometry& g)
{
    ConvGeometry d = g; // taps, dilations, groups
    d.n = g.n;
    d.c = g.k, d.h = g.p, d.w = g.q;
    d.k = g.c, d.p = g.h, d.q = g.w;
    d.padTop = g.dilH * (g.r - 1) - g.padTop;
    d.padLeft = g.dilW * (g.s - 1) - g.padLeft;
    d.act = -1;
    d.residual = nullptr;
    return d;
}

void flipConvWeights(const ConvGeometry& g, const float* w, float* flipped, cudaStream_t st)
{
    const int kg = g.k / g.groups, cg = g.c / g.groups, rs = g.r * g.s;
    const long long total = (long long)g.k * cg * rs;
    const long long blocks = std::min<long long>((total + 255) / 256, 8192);
    flipKernel<<<unsigned(blocks), 256, 0, st>>>(g.groups, kg, cg, rs, g.r, g.s, w, flipped);
    CONVSCOPE_CUDA_CHECK_LAUNCH("train::flipConvWeights");
}

} // namespace convscope::cuda::train
