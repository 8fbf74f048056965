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
// tests are integer ops, cheap next to the loads they avoid. cuda.direct and cuda.tiled run this kernel.
//
// Phase form (cuda.implicit_gemm). Which taps reach an output depends only on its stride phase: with
// ph = (oh + top) mod sh, row tap r contributes iff r·dh ≡ ph (mod sh), i.e. r = r0, r0 + rstep, … with
// rstep = sh / gcd(sh, dh) (columns likewise). So the output splits into sh·sw phase grids
// (oh = oh0 + i·sh, ow = ow0 + j·sw), and on each phase the transposed convolution is an ordinary
// convolution with the ⌈R/rstep⌉·⌈S/sstep⌉ taps of that phase: ih = (oh + top − r·dh)/sh is then an exact
// division that steps by one as i does. A block takes one phase, 128 of its output pixels (one per thread,
// flattened over n, i, j) and KB = 4, 8 or 16 output channels of one group; it stages the weights of those
// channels for that phase's taps, a chunk of input channels at a time, into shared memory as [c][tap][KB].
// Per tap a thread then does one coalesced input load (consecutive j read consecutive iw) and KB FMAs against
// float4 broadcasts of the weights. Why it is faster than the gather: the gather tests all R·S taps per input
// channel and output to keep 1/(sh·sw) of them, and does two global loads per FMA; here no thread visits a tap
// that contributes nothing, no warp diverges on the divisibility tests (the phase is uniform per block), and
// each input load feeds KB FMAs. A phase that no tap reaches (kernel smaller than the stride) gets its bias
// only, as it must; groups, dilation, output_padding and the asymmetric crop only change oh0/ow0, the tap
// lists and P, Q — exactly as in the gather.
#include "kernels/cuda/conv_transpose2d.cuh"

#include <algorithm>

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

    constexpr int kPhasePixels = 128; // output pixels of one phase per block, one per thread
    constexpr int kPhaseSharedFloats = 12 * 1024; // 48 KB: no opt-in needed, and leaves room for 4 blocks per SM
    constexpr int kPhaseMaxChannelsPerStage = 32;

    // The smallest m ≥ 1 with m·d ≡ 0 (mod stride): taps of one phase are this far apart.
    __host__ __device__ int tapStep(int stride, int dil)
    {
        int m = 1;
        while ((m * dil) % stride != 0)
            ++m;
        return m;
    }

    template <int KB>
    __global__ void __launch_bounds__(kPhasePixels)
        convTransposePhaseKernel(ConvGeometry g, int cps, int pixTiles, int kTiles, const float* __restrict__ x,
            const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y)
    {
        extern __shared__ float4 smem4[];
        float* ws = reinterpret_cast<float*>(smem4); // [cps][nr][ns][KB]

        int b = blockIdx.x;
        const int pixTile = b % pixTiles;
        b /= pixTiles;
        const int kTile = b % kTiles;
        b /= kTiles;
        const int grp = b % g.groups;
        const int phase = b / g.groups;
        const int ph = phase / g.strideW, pw = phase % g.strideW;
        // First output row (column) of the phase: (oh + top) ≡ ph (mod sh).
        const int oh0 = ((ph - g.padTop) % g.strideH + g.strideH) % g.strideH;
        const int ow0 = ((pw - g.padLeft) % g.strideW + g.strideW) % g.strideW;
        const int pph = oh0 < g.p ? (g.p - oh0 + g.strideH - 1) / g.strideH : 0;
        const int qph = ow0 < g.q ? (g.q - ow0 + g.strideW - 1) / g.strideW : 0;
        const int pixels = g.n * pph * qph;
        if (pixTile * kPhasePixels >= pixels)
            return; // uniform over the block, before any barrier

        // This phase's taps: r = r0 + ri·rstep < R with r·dh ≡ ph (mod sh); none when no such r exists.
        const int rstep = tapStep(g.strideH, g.dilH), sstep = tapStep(g.strideW, g.dilW);
        int r0 = 0, s0 = 0;
        while (r0 < rstep && (r0 * g.dilH) % g.strideH != ph)
            ++r0;
        while (s0 < sstep && (s0 * g.dilW) % g.strideW != pw)
            ++s0;
        const int nr = (r0 < rstep && r0 < g.r) ? (g.r - r0 + rstep - 1) / rstep : 0;
        const int ns = (s0 < sstep && s0 < g.s) ? (g.s - s0 + sstep - 1) / sstep : 0;
        const int taps = nr * ns;

        const int pix = pixTile * kPhasePixels + static_cast<int>(threadIdx.x);
        const bool active = pix < pixels;
        const int j = active ? pix % qph : 0;
        const int i = active ? (pix / qph) % pph : 0;
        const int n = active ? pix / (qph * pph) : 0;
        const int oh = oh0 + i * g.strideH, ow = ow0 + j * g.strideW;
        const int cg = g.c / g.groups, kg = g.k / g.groups, kFirst = kTile * KB;

        float acc[KB];
#pragma unroll
        for (int kk = 0; kk < KB; ++kk)
            acc[kk] = 0.0f;

        for (int cBase = 0; cBase < cg; cBase += cps) {
            const int chunk = min(cps, cg - cBase);
            for (int e = threadIdx.x; e < chunk * taps * KB; e += blockDim.x) {
                const int kk = e % KB, rest = e / KB;
                const int si = rest % ns, ri = (rest / ns) % nr, cc = rest / taps;
                const int k = kFirst + kk;
                const int r = r0 + ri * rstep, s = s0 + si * sstep;
                ws[e] = k < kg ? __ldg(w + ((static_cast<size_t>(grp * cg + cBase + cc) * kg + k) * g.r + r) * g.s + s)
                               : 0.0f;
            }
            __syncthreads();
            if (active) {
                for (int cc = 0; cc < chunk; ++cc) {
                    const float* xp = x + (static_cast<size_t>(n) * g.c + grp * cg + cBase + cc) * g.h * g.w;
                    for (int ri = 0; ri < nr; ++ri) {
                        // An exact multiple of sh by the choice of phase, so the division is exact (also below 0).
                        const int ih = (oh + g.padTop - (r0 + ri * rstep) * g.dilH) / g.strideH;
                        if (ih < 0 || ih >= g.h)
                            continue;
                        for (int si = 0; si < ns; ++si) {
                            const int iw = (ow + g.padLeft - (s0 + si * sstep) * g.dilW) / g.strideW;
                            if (iw < 0 || iw >= g.w)
                                continue;
                            const float v = __ldg(xp + ih * g.w + iw);
                            const float4* wv = reinterpret_cast<const float4*>(ws + ((cc * nr + ri) * ns + si) * KB);
#pragma unroll
                            for (int q4 = 0; q4 < KB / 4; ++q4) {
                                const float4 w4 = wv[q4];
                                acc[4 * q4 + 0] = fmaf(v, w4.x, acc[4 * q4 + 0]);
                                acc[4 * q4 + 1] = fmaf(v, w4.y, acc[4 * q4 + 1]);
                                acc[4 * q4 + 2] = fmaf(v, w4.z, acc[4 * q4 + 2]);
                                acc[4 * q4 + 3] = fmaf(v, w4.w, acc[4 * q4 + 3]);
                            }
                        }
                    }
                }
            }
            __syncthreads();
        }
        if (!active)
            return;
#pragma unroll
        for (int kk = 0; kk < KB; ++kk) {
            const int k = kFirst + kk;
            if (k < kg) {
                const int kAbs = grp * kg + k;
                y[((static_cast<size_t>(n) * g.k + kAbs) * g.p + oh) * g.q + ow] = acc[kk] + (bias ? bias[kAbs] : 0.0f);
            }
        }
    }

    int phaseKb(const ConvGeometry& g)
    {
        const int kg = g.k / g.groups;
        return kg <= 4 ? 4 : kg <= 8 ? 8 : 16;
    }

    // Most taps any phase has (phase 0 of each axis owns r0 = 0).
    int phaseMaxTaps(const ConvGeometry& g)
    {
        const int rstep = tapStep(g.strideH, g.dilH), sstep = tapStep(g.strideW, g.dilW);
        return ((g.r + rstep - 1) / rstep) * ((g.s + sstep - 1) / sstep);
    }

    // Input channels staged at once; 0 when one channel's weights do not fit.
    int phaseChannelsPerStage(const ConvGeometry& g)
    {
        const int perChannel = phaseMaxTaps(g) * phaseKb(g);
        return std::min({ kPhaseSharedFloats / perChannel, g.c / g.groups, kPhaseMaxChannelsPerStage });
    }

    template <int KB>
    void launchPhase(
        const ConvGeometry& g, int cps, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
    {
        const long long maxPixels
            = static_cast<long long>(g.n) * ((g.p + g.strideH - 1) / g.strideH) * ((g.q + g.strideW - 1) / g.strideW);
        const int pixTiles = static_cast<int>((maxPixels + kPhasePixels - 1) / kPhasePixels);
        const int kTiles = (g.k / g.groups + KB - 1) / KB;
        const long long blocks = static_cast<long long>(pixTiles) * kTiles * g.groups * g.strideH * g.strideW;
        const size_t shared = static_cast<size_t>(cps) * phaseMaxTaps(g) * KB * sizeof(float);
        convTransposePhaseKernel<KB>
            <<<static_cast<unsigned>(blocks), kPhasePixels, shared, st>>>(g, cps, pixTiles, kTiles, x, w, bias, y);
    }
} // namespace

bool convTranspose2dPhaseApplies(const ConvGeometry& g) { return phaseChannelsPerStage(g) > 0; }

void convTranspose2dPhase(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    const int cps = phaseChannelsPerStage(g);
    if (cps <= 0) {
        convTranspose2dGather(g, x, w, bias, y, st);
        return;
    }
    switch (phaseKb(g)) {
    case 4:
        launchPhase<4>(g, cps, x, w, bias, y, st);
        break;
    case 8:
        launchPhase<8>(g, cps, x, w, bias, y, st);
        break;
    default:
        launchPhase<16>(g, cps, x, w, bias, y, st);
        break;
    }
}

std::string convTranspose2dNote(const ConvGeometry& g, bool fast)
{
    if (!fast)
        return "gather kernel (one thread per output element)";
    if (!convTranspose2dPhaseApplies(g))
        return "gather kernel (one input channel's taps per phase exceed 48 KB of shared memory)";
    return std::to_string(g.strideH * g.strideW) + " stride phases, " + std::to_string(phaseMaxTaps(g))
        + " taps each at most, 128 pixels x " + std::to_string(phaseKb(g)) + " channels per block, "
        + std::to_string(phaseChannelsPerStage(g)) + " input channels per stage";
}

void convTranspose2dGather(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    const long long total = static_cast<long long>(g.n) * g.k * g.p * g.q;
    convTransposeGatherKernel<<<static_cast<unsigned>((total + 255) / 256), 256, 0, st>>>(g, x, w, bias, y);
}

} // namespace convscope::cuda
