// Split-K for cuda.implicit_gemm: the choice of how many parts, and the pass that adds the parts up.
//
// Why. The pipelined implicit GEMM gives each block one 128×128 (or 64×128) tile of the output and the whole
// reduction. A layer with few output pixels and a deep reduction — VGG-16's 512→512 3×3 convolutions on 14×14 at
// batch 8: 1568 pixels × 512 channels, 4608 taps — makes 13 × 4 = 52 tiles for 132 multiprocessors that each hold two
// such blocks, so three quarters of the device idled (12 TFLOP/s, against 40+ on a full grid). Splitting the
// reduction into S parts over grid z gives 52·S blocks, each S times shorter; S is chosen so the blocks fill the
// slots the device holds at once (5 parts: 260 blocks in 264 slots).
// How. Part z of a tile writes its raw FP32 sums (no bias, no activation) to slice z of a workspace shaped like the
// output, [S][n, k, p, q], with the kernel's own epilogue addressing (float4 stores and all); this second pass then
// adds the S slices in order, the bias, and the fused activation. The order is fixed, so the result is deterministic
// (atomics would have saved the pass but made every run differ in the last bits). The extra traffic is S + 1 times
// the output through L2 (5 × 3.2 MB on the VGG layer, a few microseconds), which is why a grid that already fills
// half the slots is not split, nor a reduction whose parts would be shorter than kMinStepsPerSplit pipeline steps
// (then the prologue, filling a 3-stage pipeline, and the epilogue dominate each block).
// The idea is the Tensor Core kernel's (conv2d_tensor_core_kernel.cuh); its parts fill one block per
// multiprocessor in powers of two, these fill every resident slot, because the FFMA kernel needs two blocks (16
// warps) per multiprocessor to hide its latencies.
#include "kernels/cuda/conv2d_implicit_gemm_split.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/activation_op.cuh"

#include <algorithm>

namespace convscope::cuda::igemm {

namespace {
    constexpr int kMinStepsPerSplit = 16; // 256 taps of 16: at least 5× the 3-stage pipeline's prologue
    constexpr int kMaxSplits = 16; // the workspace is splits × the output

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
                    = make_float4(epilogue(g.act, g.actParam, s.x), epilogue(g.act, g.actParam, s.y),
                        epilogue(g.act, g.actParam, s.z), epilogue(g.act, g.actParam, s.w));
            } else {
                float s = b;
                for (int z = 0; z < splits; ++z)
                    s += __ldg(partial + z * total + i);
                y[i] = epilogue(g.act, g.actParam, s);
            }
        }
    }
} // namespace

int stepsPerSplit(int steps, int splits) { return (steps + splits - 1) / splits; }

int splitKParts(long long tiles, int slots, int steps, int forced)
{
    int s = 1;
    if (forced > 0)
        s = std::min(forced, std::max(steps, 1));
    else if (tiles > 0 && 2 * tiles <= slots)
        s = static_cast<int>(std::min<long long>({ slots / tiles, kMaxSplits, steps / kMinStepsPerSplit }));
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
