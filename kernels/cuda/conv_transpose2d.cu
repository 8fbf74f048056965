// conv_transpose2d (PyTorch's ConvTranspose2d), gather formulation.
//
// The textbook definition scatters: every input pixel (ih, iw), times the kernel, is added into the full output
// at (ih·sh + r·dh, iw·sw + s·dw); PyTorch then crops `top` rows and `left` columns (bottom/right cropping and
// output_padding only fix the output size). Scattering on a GPU needs atomics (slow, and the sum order — hence
// the rounding — changes from run to run). So each thread instead owns one output element and gathers:
//   y[n, k, oh, ow] = bias[k] + Σ_{c in k's group, r, s} x[n, c, ih, iw] · W[c, k mod K/g, r, s]
//   where ih·sh = oh + top − r·dh and iw·sw = ow + left − s·dw, counting only exact multiples inside the input.
// Deterministic, no atomics, every stride/dilation/padding/output_padding/group. Its cost: with stride s only
// one tap in s² lands on a given output, so (s²−1)/s² of the inner-loop tests are skipped work; the divisibility
// tests are integer ops, cheap next to the loads they avoid. All three cuda algorithms run this kernel for
// conv_transpose2d (the layer note says so).
#include "kernels/cuda/conv_transpose2d.cuh"

namespace convscope::cuda {

namespace {
    __global__ void convTransposeGatherKernel(ConvGeometry g, const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y)
    {
        const long long total = static_cast<long long>(g.n) * g.k * g.p * g.q;
        const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
        if (idx >= total)
            return;
        const int ow = static_cast<int>(idx % g.q);
        const int oh = static_cast<int>((idx / g.q) % g.p);
        const int k = static_cast<int>((idx / (static_cast<long long>(g.q) * g.p)) % g.k);
        const int n = static_cast<int>(idx / (static_cast<long long>(g.q) * g.p * g.k));
        const int cg = g.c / g.groups, kg = g.k / g.groups;
        const int grp = k / kg, kk = k % kg;
        float acc = bias ? bias[k] : 0.0f;
        for (int c = 0; c < cg; ++c) {
            const int cin = grp * cg + c;
            const float* xp = x + (static_cast<long long>(n) * g.c + cin) * g.h * g.w;
            const float* wp = w + (static_cast<long long>(cin) * kg + kk) * g.r * g.s;
            for (int r = 0; r < g.r; ++r) {
                const int th = oh + g.padTop - r * g.dilH;
                if (th < 0 || th % g.strideH != 0)
                    continue;
                const int ih = th / g.strideH;
                if (ih >= g.h)
                    continue;
                for (int s = 0; s < g.s; ++s) {
                    const int tw = ow + g.padLeft - s * g.dilW;
                    if (tw < 0 || tw % g.strideW != 0)
                        continue;
                    const int iw = tw / g.strideW;
                    if (iw >= g.w)
                        continue;
                    acc = fmaf(__ldg(xp + ih * g.w + iw), __ldg(wp + r * g.s + s), acc);
                }
            }
        }
        y[idx] = acc;
    }
} // namespace

void convTranspose2dGather(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    const long long total = static_cast<long long>(g.n) * g.k * g.p * g.q;
    convTransposeGatherKernel<<<static_cast<unsigned>((total + 255) / 256), 256, 0, st>>>(g, x, w, bias, y);
}

} // namespace convscope::cuda
