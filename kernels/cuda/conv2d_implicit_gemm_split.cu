// Split-K for cuda.implicit_gemm: the choice of how many parts, and the pass that adds the parts up.
//
// Why. The pipelined implicit GEMM gives each block one 128×128 (or 64×128) tile of the output and the whole
// reduction. A layer with few output pixels and a deep reduction — VGG-16's 512→512 3×3 convolutions on 14×14 at
// batch 8: 1568 pixels × 512 channels, 4608 taps — makes 13 × 4 = 52 tiles for 132 multiprocessors that each hold two
// such blocks, so three quarters of the device idled (12 TFLOP/s, against 40+ on a full grid). Splitting the
// reduction into S parts over grid z gives 52·S blocks, each S times shorter.
// How many. The kernel is throughput-bound, so a layer takes about as long as its busiest multiprocessor:
// ⌈tiles·S / SMs⌉ blocks of ⌈steps / S⌉ steps, plus a block's fixed cost (pipeline prologue, epilogue, the share of
// the summing pass), about kBlockOverheadSteps steps. S minimises that. On an H100 (132 SMs) the model ranks every
// count the way the clock did: the 14×14 layer (52 tiles, 288 steps) S = 5 → 2 blocks × 58 steps, 0.189 ms, where
// S = 2, 4, 6, 8 all give 144 step-units and 0.229–0.235 ms, S = 3 192 units and 0.300 ms; the 28×28 layers (196
// tiles, already a full grid by the old rule, but 2 blocks on 64 SMs and 1 on the other 68) S = 2 → 3 × 144
// instead of 2 × 288 units, 0.876 → 0.668 ms (predicted 0.66); 3×3 64→64 @56² b8 on 196 tiles of 64×128, 36 steps,
// S = 2 → 3 × 20 instead of 2 × 38 units, 0.076 → 0.057 ms (predicted 0.060). A split must gain 10% in the model,
// so layers with many tiles per multiprocessor (every unet-encoder layer) stay unsplit.
// How. Part z of a tile writes its raw FP32 sums (no bias, no activation) to slice z of a workspace shaped like the
// output, [S][n, k, p, q], with the kernel's own epilogue addressing (float4 stores and all); this second pass then
// adds the S slices in order, the bias, and the fused activation. The order is fixed, so the result is deterministic
// (atomics would have saved the pass but made every run differ in the last bits). The extra traffic is 2S + 1
// times the output, mostly through L2 (11 × 3.2 MB on the 14×14 layer, a few microseconds), part of the block cost
// above; a reduction whose parts would be shorter than kMinStepsPerSplit steps is not split (the prologue, filling
// a 3-stage pipeline, and the epilogue would dominate each block).
// The idea is the Tensor Core kernel's (conv2d_tensor_core_kernel.cuh), whose parts fill one block per
// multiprocessor in powers of two; the FFMA kernel's counts come from the model instead, because the clock showed
// odd counts (5) and full grids (the 28×28 layers) gaining.
#include "kernels/cuda/conv2d_implicit_gemm_split.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/activation_op.cuh"

#include <algorithm>

namespace convscope::cuda::igemm {

namespace {
    constexpr int kMinStepsPerSplit = 16; // 256 taps of 16: at least 5× the 3-stage pipeline's prologue
    constexpr int kMaxSplits = 16; // the workspace is splits × the output
    constexpr int kBlockOverheadSteps = 2;

    // One thread per 4 consecutive outputs of one plane when planes are a multiple of 4 pixels (16-byte loads and
    // stores; the channel, hence the bias, is the same for all 4), else one per output.
    template <int V>
    __global__ void splitKReduceKernel(ConvGeometry g, int splits, long long total, const float* __restrict__ partial,
        const float* __restrict__ bias, float* __restrict__ y)
    {
        const long long pq = static_cast<long long>(g.p) * g.q;
        for (long long i = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * V; i < total;
             i += static_cast<long long>(gridDim.x) * blockDim.x * V) {
            const float b = bias ? __ldg(&bias[(i / pq) % g.k]) : 0.0f;
            if constexpr (V == 4) {
                float4 s = make_float4(b, b, b, b);
                for (int z = 0; z < splits; ++z) {
                    const float4 v = __ldg(reinterpret_cast<const float4*>(partial + z * total + i));
                    s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
                }
                *reinterpret_cast<float4*>(y + i)
                    = make_float4(epilogue(g.act, g.actParam, s.x + skipAt(g.residual, i)),
                        epilogue(g.act, g.actParam, s.y + skipAt(g.residual, i + 1)),
                        epilogue(g.act, g.actParam, s.z + skipAt(g.residual, i + 2)),
                        epilogue(g.act, g.actParam, s.w + skipAt(g.residual, i + 3)));
            } else {
                float s = b;
                for (int z = 0; z < splits; ++z)
                    s += __ldg(partial + z * total + i);
                y[i] = epilogue(g.act, g.actParam, s + skipAt(g.residual, i));
            }
        }
    }
} // namespace

int stepsPerSplit(int steps, int splits) { return (steps + splits - 1) / splits; }

int splitKParts(long long tiles, int smCount, int steps, int forced)
{
    // The busiest multiprocessor's work with s parts, in pipeline steps.
    auto cost = [&](int s) {
        return static_cast<double>((tiles * s + smCount - 1) / smCount)
            * (stepsPerSplit(steps, s) + kBlockOverheadSteps);
    };
    int s = 1;
    if (forced > 0) {
        s = std::min(forced, std::max(steps, 1));
    } else if (tiles > 0 && smCount > 0) {
        const int most = std::min(kMaxSplits, steps / kMinStepsPerSplit);
        for (int c = 2; c <= most; ++c)
            if (cost(c) < cost(s))
                s = c;
        if (cost(s) > 0.9 * cost(1))
            s = 1;
    }
    if (s <= 1)
        return 1;
    return (steps + stepsPerSplit(steps, s) - 1) / stepsPerSplit(steps, s); // no empty part: 288 steps in 5 → 58 each
}

size_t splitKWorkspaceBytes(const ConvGeometry& g, int splits)
{
    if (splits <= 1)
        return 0;
    return static_cast<size_t>(splits) * g.n * g.k * g.p * g.q * sizeof(float);
}

void splitKReduce(const ConvGeometry& g, int splits, const float* partial, const float* bias, float* y, cudaStream_t st)
{
    const long long total = static_cast<long long>(g.n) * g.k * g.p * g.q;
    const bool vec = (static_cast<long long>(g.p) * g.q) % 4 == 0;
    const long long threads = vec ? total / 4 : total;
    const unsigned blocks = static_cast<unsigned>(std::min<long long>((threads + 255) / 256, 65535));
    if (vec)
        splitKReduceKernel<4><<<blocks, 256, 0, st>>>(g, splits, total, partial, bias, y);
    else
        splitKReduceKernel<1><<<blocks, 256, 0, st>>>(g, splits, total, partial, bias, y);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d implicit GEMM split-K sum");
}

} // namespace convscope::cuda::igemm
