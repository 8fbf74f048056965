// linear: y = x·Wᵀ + b, x [rows, in], W [out, in] (PyTorch's layout), y [rows, out]. Both operands are
// contiguous along the reduction dimension `in` (an "NT" product). Every kernel is templated on the storage type T
// (FP32, or FP16/BF16 in those math modes: x, W and y in T, the bias and every sum in FP32).
//
// Three kernels, chosen by the batch and the math mode:
//   the Tensor Core math modes (fp16, bf16: mma.sync m16n8k16; tf32: m16n8k8 on operands rounded to TF32, as cuBLAS's
//   CUBLAS_COMPUTE_32F_FAST_TF32 is in cudnn's), rows ≤ 32 (a classifier at batch 1 to 32), FP32 sums. A warp owns 16
//   outputs; per step of 64 bytes a row (32 16-bit inputs, 16 FP32) each lane loads 16 bytes of two W rows (o0 + g
//   and o0 + g + 8) and 16 bytes of x row g of each 8-row tile, and multiplies them with two mma.sync. The sum over a
//   step pair does not depend on the order of its inputs, so the lane's pack is taken as the fragment columns that
//   lane holds (tensor_core_mma.cuh: 2t, 2t + 1, 2t + 8, 2t + 9 of each 16-bit product; t, t + 4 of each TF32 one):
//   the fragments are the loads' registers as they come, with no shuffle and no shared memory. Steps go in pairs, and
//   lane t's two packs of a pair are bytes 32t … 32t + 31 of its 128 (kPairOfSteps): a row's four lanes read one whole
//   128-byte line over the pair's two loads. With pack t of each step instead (64 bytes of a row per load, the pair
//   two half-lines apart) VGG-16's fc1 took 95 µs in fp16 and 195 in tf32; with the pairs, 72 and 133 (cuBLAS 63 and
//   117); a lane's four steps contiguous was slower than either (130, 278: each load then hits four lines a row).
//   Where the GEMV below spends ~350 instructions of FMAs and widening on every 64 bytes of FP16 weights a lane reads,
//   this spends two mma.sync: what is left is streaming W, 4 steps of loads in flight a lane, split along `in` as the
//   GEMV is (about 32 warps an SM, each slice a whole number of pairs). VGG-16's fc1 at batch 8 in fp16 (205 MB of
//   weights): 164 µs on the GEMV, 72 here; ResNet-50's fc at batch 32: 28.6 µs on the SGEMM, 15 here, cuBLAS 11.
//   rows ≤ 8 (a classifier at batch 1 to 8): a matrix–vector product in disguise, bound by reading W once — VGG's
//   fc1 (25088→4096) is 411 MB of FP32 weights for 1.6 GFLOP. Each warp makes kOutputsPerWarp = 4 outputs: its lanes
//   stride along `in` with 16-byte loads (4 FP32 or 8 FP16/BF16 values) of the four W rows, streamed (__ldcs: read
//   once, evicted first), and of every x row (cached: the eight warps of a block read the same slice of x, so L1
//   serves seven of them), and keep 4 × MaxRows partial sums in registers. Four outputs per warp divide the x traffic
//   by four against one; the loads of one step (four W packs, MaxRows x packs) are independent and all in flight.
//   A big layer is split along `in` (split-K, gridDim.y slices): fc1 has only 1024 warps of work at four outputs
//   each, about 8 per SM — not enough loads in flight to saturate HBM — so its 25088 inputs are cut into slices until
//   the grid is about eight blocks per SM; each slice writes FP32 partial sums to the layer's scratch, and a second,
//   tiny kernel adds the slices in order with the bias and rounds once. Small layers (LeNet's, under 2^20 weights)
//   stay one launch, of the earlier configuration — a warp per output, 4 warps per block, the strided loop unrolled
//   4× so a lane's loads are in flight together: there the launch and the latency are the cost.
//   larger batches: our own tiled SGEMM. A block computes a 64×64 tile of y with 256 threads, each a 4×4
//   register tile; per step it stages a 64×16 slice of x and of W in shared memory (widened to FP32), stored
//   transposed ([k][row]) so the inner loop reads 4 consecutive rows and 4 consecutive columns as float4s. Each
//   staged value is reused by 64 outputs, which turns the product from memory-bound into arithmetic-bound.
//   A classifier at batch 9 to 64 makes few tiles (ResNet-50's fc at batch 32: 16 blocks on 132 SMs, each 128 steps
//   along 2048 inputs: 0.19 ms, 17× cuDNN's): there `in` is split as in the GEMV (gridDim.z slices, about two blocks
//   an SM, each slice at least 4 steps), the same second kernel adding the slices.
#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/tensor_core_mma.cuh"
#include "kernels/cuda/tf32_mma.cuh"

#include <algorithm>
#include <string>
#include <type_traits>

namespace convscope::cuda {

namespace {
    constexpr int kGemvMaxRows = 8;

    // Big layers (split-K): 4 outputs per warp, 8 warps per block. Small ones (LeNet's): a warp per output, 4 warps
    // per block and the loop unrolled 4×, the configuration measured at f5 5.5 → 4.3 µs (docs/PERFORMANCE.md).
    constexpr int kOutputsPerWarp = 4, kWarpsPerBlock = 8, kSmallWarpsPerBlock = 4;
    constexpr long long kSplitMinWeights = 1LL << 20;

    template <typename T, bool Vec> __device__ __forceinline__ void loadW(const T* p, float (&v)[Vec ? kPack<T> : 1])
    {
        if constexpr (Vec)
            loadPackStreaming<T>(p, v);
        else
            v[0] = gpu::toFloat(*p);
    }

    // MaxRows (1, 2, 4 or 8) bounds the rows at compile time, so a batch-1 layer keeps 4 accumulators and their
    // shuffles instead of 32. Vec: `in` is a whole number of packs and both operands are 16-byte aligned.
    template <typename T, int MaxRows, bool Vec, int O>
    __global__ void __launch_bounds__(kWarpsPerBlock * 32)
        linearGemvKernel(int rows, int in, int out, int chunk, const T* __restrict__ x, const T* __restrict__ w,
            const float* __restrict__ bias, float* __restrict__ partial, T* __restrict__ y)
    {
        constexpr int V = Vec ? kPack<T> : 1;
        constexpr int kUnroll = O == 1 ? 4 : 2;
        const int o0 = ((blockIdx.x * blockDim.x + threadIdx.x) / 32) * O;
        const int lane = threadIdx.x % 32;
        if (o0 >= out)
            return;
        const int units = in / V; // packs (or values) along `in`
        const int u0 = blockIdx.y * chunk, u1 = min(units, u0 + chunk);
        const T* wr[O];
#pragma unroll
        for (int j = 0; j < O; ++j) // past the last output: read a valid row, discard its sums
            wr[j] = w + static_cast<long long>(min(o0 + j, out - 1)) * in;
        float acc[O][MaxRows] = {};
#pragma unroll kUnroll
        for (int u = u0 + lane; u < u1; u += 32) {
            float wv[O][V];
#pragma unroll
            for (int j = 0; j < O; ++j)
                loadW<T, Vec>(wr[j] + static_cast<long long>(u) * V, wv[j]);
#pragma unroll
            for (int r = 0; r < MaxRows; ++r) {
                if (r < rows) {
                    float xv[V];
                    loadValues<T, V>(x + static_cast<long long>(r) * in + static_cast<long long>(u) * V, xv);
#pragma unroll
                    for (int j = 0; j < O; ++j)
#pragma unroll
                        for (int k = 0; k < V; ++k)
                            acc[j][r] = fmaf(wv[j][k], xv[k], acc[j][r]);
                }
            }
        }
#pragma unroll
        for (int j = 0; j < O; ++j)
#pragma unroll
            for (int r = 0; r < MaxRows; ++r) {
                float v = acc[j][r];
#pragma unroll
                for (int s = 16; s > 0; s >>= 1)
                    v += __shfl_xor_sync(0xFFFFFFFFu, v, s);
                const int o = o0 + j;
                if (lane == 0 && r < rows && o < out) {
                    if (gridDim.y == 1)
                        y[static_cast<long long>(r) * out + o] = gpu::fromFloat<T>(v + (bias ? __ldg(bias + o) : 0.0f));
                    else
                        partial[(static_cast<long long>(blockIdx.y) * rows + r) * out + o] = v;
                }
            }
    }

    // y[r, o] = bias[o] + the slices' partial sums, added in slice order.
    template <typename T>
    __global__ void linearSplitSumKernel(int rows, int out, int splits, const float* __restrict__ partial,
        const float* __restrict__ bias, T* __restrict__ y)
    {
        const int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= rows * out)
            return;
        float v = 0.0f;
        for (int s = 0; s < splits; ++s)
            v += partial[static_cast<long long>(s) * rows * out + i];
        y[i] = gpu::fromFloat<T>(v + (bias ? __ldg(bias + i % out) : 0.0f));
    }

    // Its launch, shared by the three kernels' split paths.
    template <typename T>
    void addSlices(int rows, int out, int slices, const float* partial, const float* bias, T* y, cudaStream_t st)
    {
        linearSplitSumKernel<T><<<(rows * out + 255) / 256, 256, 0, st>>>(rows, out, slices, partial, bias, y);
    }

    // The Tensor Core path: kMmaOutputs outputs a warp, kMmaWarps warps a block, rows ≤ kMmaMaxRows; a step is a
    // 16-byte pack a lane, kMmaDepth<T> inputs.
    constexpr int kMmaOutputs = 16, kMmaWarps = 4, kMmaMaxRows = 32;
    // Steps whose packs a lane reads back to back (two 16-byte loads: a row's four lanes cover a 128-byte line).
    constexpr int kPairOfSteps = 2;
    template <typename T> constexpr int kMmaDepth = 4 * kPack<T>;

    // A loaded register as an mma operand: 16-bit pairs as they are, FP32 rounded to TF32.
    template <typename T> __device__ __forceinline__ uint32_t operand(uint32_t v)
    {
        if constexpr (std::is_same_v<T, float>)
            return tf32::rounded(__uint_as_float(v));
        else
            return v;
    }

    template <typename T> __device__ __forceinline__ uint4 loadOrZero(const T* p, bool ok, bool streamed)
    {
        if (!ok)
            return make_uint4(0u, 0u, 0u, 0u);
        return streamed ? __ldcs(reinterpret_cast<const uint4*>(p)) : __ldg(reinterpret_cast<const uint4*>(p));
    }

    // `chunk` steps a slice (blockIdx.y), a whole number of pairs; `in` a whole number of packs and x, W 16-byte
    // aligned.
    template <typename T, int NT>
    __global__ void __launch_bounds__(kMmaWarps * 32)
        linearMmaKernel(int rows, int in, int out, int chunk, const T* __restrict__ x, const T* __restrict__ w,
            const float* __restrict__ bias, float* __restrict__ partial, T* __restrict__ y)
    {
        // Steps whose loads are in flight together. Measured on VGG-16's fc1 and ResNet-50's fc (fp16, H200): 2 and 8
        // were no faster than 4, nor was an L2 prefetch of 256 bytes on W's loads, nor 16 or 64 warps an SM.
        constexpr int U = 4;
        const int o0 = int((blockIdx.x * blockDim.x + threadIdx.x) / 32) * kMmaOutputs;
        if (o0 >= out)
            return;
        const int lane = int(threadIdx.x % 32), g = lane / 4, t = lane % 4;
        constexpr int P = kPack<T>, Depth = kMmaDepth<T>;
        const int steps = (in + Depth - 1) / Depth;
        const int s0 = int(blockIdx.y) * chunk, s1 = min(steps, s0 + chunk);
        // Past the last output or row: read a valid row (W) or zeros (x), and discard the sums.
        constexpr int Pair = kPairOfSteps;
        static_assert(U % Pair == 0, "whole pairs of steps in flight");
        const T* w0 = w + static_cast<long long>(min(o0 + g, out - 1)) * in + t * Pair * P;
        const T* w1 = w + static_cast<long long>(min(o0 + g + 8, out - 1)) * in + t * Pair * P;
        const T* xr[NT];
#pragma unroll
        for (int j = 0; j < NT; ++j)
            xr[j] = x + static_cast<long long>(min(j * 8 + g, rows - 1)) * in + t * Pair * P;
        float acc[NT][4] = {};
        for (int s = s0; s < s1; s += U) {
            uint4 a0[U], a1[U], b[U][NT];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                // Pack u % Pair of this lane's in the pair that starts at step `first`; a pair past `in` reads zeros.
                const int first = s + u / Pair * Pair, k = first * Depth + u % Pair * P;
                const bool ok = first < s1 && k + t * Pair * P < in;
                a0[u] = loadOrZero(w0 + k, ok, true);
                a1[u] = loadOrZero(w1 + k, ok, true);
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    b[u][j] = loadOrZero(xr[j] + k, ok && j * 8 + g < rows, false);
            }
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    tc::mma<T>(acc[j],
                        { operand<T>(a0[u].x), operand<T>(a1[u].x), operand<T>(a0[u].y), operand<T>(a1[u].y) },
                        { operand<T>(b[u][j].x), operand<T>(b[u][j].y) });
                    tc::mma<T>(acc[j],
                        { operand<T>(a0[u].z), operand<T>(a1[u].z), operand<T>(a0[u].w), operand<T>(a1[u].w) },
                        { operand<T>(b[u][j].z), operand<T>(b[u][j].w) });
                }
        }
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int o = o0 + g + (e / 2) * 8, r = j * 8 + 2 * t + e % 2;
                if (o >= out || r >= rows)
                    continue;
                if (gridDim.y == 1)
                    y[static_cast<long long>(r) * out + o]
                        = gpu::fromFloat<T>(acc[j][e] + (bias ? __ldg(bias + o) : 0.0f));
                else
                    partial[(static_cast<long long>(blockIdx.y) * rows + r) * out + o] = acc[j][e];
            }
    }

    int gemvBlocksX(int out)
    {
        return (out + kOutputsPerWarp * kWarpsPerBlock - 1) / (kOutputsPerWarp * kWarpsPerBlock);
    }

    template <typename T, int MaxRows>
    void launchGemv(int rows, int in, int out, const T* x, const T* w, const float* bias, T* y, float* partial,
        int splits, cudaStream_t st)
    {
        const bool vec = in % kPack<T> == 0 && aligned16(x) && aligned16(w);
        const int units = vec ? in / kPack<T> : in;
        const int chunk = (units + splits - 1) / splits;
        const bool big = static_cast<long long>(in) * out >= kSplitMinWeights;
        if (big) {
            const dim3 grid(unsigned(gemvBlocksX(out)), unsigned(splits));
            if (vec)
                linearGemvKernel<T, MaxRows, true, kOutputsPerWarp>
                    <<<grid, kWarpsPerBlock * 32, 0, st>>>(rows, in, out, chunk, x, w, bias, partial, y);
            else
                linearGemvKernel<T, MaxRows, false, kOutputsPerWarp>
                    <<<grid, kWarpsPerBlock * 32, 0, st>>>(rows, in, out, chunk, x, w, bias, partial, y);
        } else { // never split (linearSplits)
            const dim3 grid(unsigned((out + kSmallWarpsPerBlock - 1) / kSmallWarpsPerBlock), 1u);
            if (vec)
                linearGemvKernel<T, MaxRows, true, 1>
                    <<<grid, kSmallWarpsPerBlock * 32, 0, st>>>(rows, in, out, units, x, w, bias, partial, y);
            else
                linearGemvKernel<T, MaxRows, false, 1>
                    <<<grid, kSmallWarpsPerBlock * 32, 0, st>>>(rows, in, out, units, x, w, bias, partial, y);
        }
        if (splits > 1)
            addSlices(rows, out, splits, partial, bias, y, st);
    }

    constexpr int kTm = 64, kTn = 64, kTk = 16;

    // blockIdx.z: the slice of `in` (`chunk` inputs, a multiple of kTk) whose FP32 partial sums go to `partial`
    // when the grid has more than one slice.
    template <typename T>
    __global__ void __launch_bounds__(256)
        linearSgemmKernel(int rows, int in, int out, int chunk, const T* __restrict__ x, const T* __restrict__ w,
            const float* __restrict__ bias, float* __restrict__ partial, T* __restrict__ y)
    {
        __shared__ __align__(16) float xs[kTk][kTm];
        __shared__ __align__(16) float ws[kTk][kTn];
        const int tid = threadIdx.x;
        const int rowBase = blockIdx.y * kTm, colBase = blockIdx.x * kTn;
        const int tr = tid / 16, tc = tid % 16; // 16×16 threads, 4×4 outputs each
        float acc[4][4] = {};
        const int kBegin = blockIdx.z * chunk, kEnd = min(in, kBegin + chunk);
        for (int k0 = kBegin; k0 < kEnd; k0 += kTk) {
            // 64 rows × 16 k = 1024 values per operand, 4 per thread; consecutive threads read along k.
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int idx = tid + i * 256;
                const int r = idx / kTk, k = idx % kTk;
                const int gr = rowBase + r, gc = colBase + r, gk = k0 + k;
                xs[k][r] = (gr < rows && gk < kEnd) ? gpu::toFloat(x[static_cast<long long>(gr) * in + gk]) : 0.0f;
                ws[k][r] = (gc < out && gk < kEnd) ? gpu::toFloat(w[static_cast<long long>(gc) * in + gk]) : 0.0f;
            }
            __syncthreads();
#pragma unroll
            for (int k = 0; k < kTk; ++k) {
                const float4 a = *reinterpret_cast<const float4*>(&xs[k][tr * 4]);
                const float4 b = *reinterpret_cast<const float4*>(&ws[k][tc * 4]);
                const float av[4] = { a.x, a.y, a.z, a.w }, bv[4] = { b.x, b.y, b.z, b.w };
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
            }
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = rowBase + tr * 4 + i;
            if (r >= rows)
                continue;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int c = colBase + tc * 4 + j;
                if (c >= out)
                    continue;
                if (gridDim.z > 1)
                    partial[(static_cast<long long>(blockIdx.z) * rows + r) * out + c] = acc[i][j];
                else
                    y[static_cast<long long>(r) * out + c]
                        = gpu::fromFloat<T>(acc[i][j] + (bias ? __ldg(bias + c) : 0.0f));
            }
        }
    }
} // namespace

namespace {
    // A layer the Tensor Core kernel takes (given 16-byte aligned operands, checked at the launch).
    int packOf(MathMode math) { return math == MathMode::TF32 ? kPack<float> : kPack<__half>; }
    bool mmaShape(MathMode math, int rows, int in)
    {
        return math != MathMode::FP32 && rows <= kMmaMaxRows && in % packOf(math) == 0;
    }

    // About 32 warps an SM, each slice at least 8 steps.
    int mmaSplits(MathMode math, int in, int out, int sms)
    {
        const int warps = (out + kMmaOutputs - 1) / kMmaOutputs, depth = 4 * packOf(math);
        const int steps = (in + depth - 1) / depth;
        return std::max(1, std::min({ (32 * sms + warps - 1) / warps, steps / 8, 64 }));
    }

    // The Tensor Core kernel's slices: `chunk` steps each (whole pairs), `slices` of them.
    struct MmaSlices {
        int chunk, slices;
    };
    MmaSlices mmaSlices(MathMode math, int in, int out, int sms, bool split)
    {
        const int depth = 4 * packOf(math), steps = (in + depth - 1) / depth;
        const int splits = split ? mmaSplits(math, in, out, sms) : 1;
        const int chunk = ((steps + splits - 1) / splits + kPairOfSteps - 1) / kPairOfSteps * kPairOfSteps;
        return { chunk, (steps + chunk - 1) / chunk };
    }

    std::string splitNote(int splits)
    {
        return splits > 1 ? ", split-K over " + std::to_string(splits) + " slices of the inputs" : std::string();
    }
} // namespace

int linearSplits(int rows, int in, int out, int sms, MathMode math)
{
    if (mmaShape(math, rows, in))
        return mmaSplits(math, in, out, sms);
    if (rows > kGemvMaxRows) {
        // The SGEMM: about two blocks an SM where its tiles make fewer, each slice at least 4 steps of kTk.
        const long long blocks = static_cast<long long>((out + kTn - 1) / kTn) * ((rows + kTm - 1) / kTm);
        if (blocks >= sms)
            return 1;
        const int wanted = int((2 * sms + blocks - 1) / blocks);
        return std::max(1, std::min({ wanted, in / (4 * kTk), 64 }));
    }
    if (static_cast<long long>(in) * out < kSplitMinWeights)
        return 1;
    // About eight blocks per SM (two resident at a time: four waves, so the last one's tail is short), each slice at
    // least 4 steps of the warp's stride (32 lanes × 4 values).
    const int wanted = (8 * sms + gemvBlocksX(out) - 1) / gemvBlocksX(out);
    return std::max(1, std::min({ wanted, in / (32 * 4 * 4), 64 }));
}

size_t linearScratchBytes(int rows, int in, int out, int sms, MathMode math)
{
    // A layer whose operands turn out not to be 16-byte aligned runs the GEMV or SGEMM: room for either.
    const int splits = std::max(linearSplits(rows, in, out, sms, math), linearSplits(rows, in, out, sms));
    return splits > 1 ? static_cast<size_t>(splits) * rows * out * sizeof(float) : 0;
}

std::string linearNote(int rows, int in, int out, int sms, MathMode math)
{
    const int splits = linearSplits(rows, in, out, sms, math);
    if (mmaShape(math, rows, in))
        return std::string("Tensor Cores (mma.sync ") + (math == MathMode::TF32 ? "m16n8k8 TF32" : "m16n8k16")
            + ", FP32 sums), warp per 16 outputs, 16-byte loads"
            + splitNote(mmaSlices(math, in, out, sms, true).slices);
    if (rows > kGemvMaxRows)
        return "tiled SGEMM 64x64" + splitNote(splits);
    if (static_cast<long long>(in) * out < kSplitMinWeights)
        return "warp per output (GEMV), 16-byte loads";
    return "warp per 4 outputs (GEMV), 16-byte loads" + splitNote(splits);
}

namespace {
    template <typename T>
    void linearOf(MathMode math, int rows, int in, int out, const T* x, const T* w, const float* bias, T* y,
        void* scratch, int sms, cudaStream_t st)
    {
        float* partial = static_cast<float*>(scratch);
        if (mmaShape(math, rows, in) && aligned16(x) && aligned16(w)) {
            const auto [chunk, slices] = mmaSlices(math, in, out, sms, scratch != nullptr);
            const int warps = (out + kMmaOutputs - 1) / kMmaOutputs;
            const dim3 grid(unsigned((warps + kMmaWarps - 1) / kMmaWarps), unsigned(slices));
            if (rows <= 8)
                linearMmaKernel<T, 1><<<grid, kMmaWarps * 32, 0, st>>>(rows, in, out, chunk, x, w, bias, partial, y);
            else if (rows <= 16)
                linearMmaKernel<T, 2><<<grid, kMmaWarps * 32, 0, st>>>(rows, in, out, chunk, x, w, bias, partial, y);
            else
                linearMmaKernel<T, 4><<<grid, kMmaWarps * 32, 0, st>>>(rows, in, out, chunk, x, w, bias, partial, y);
            if (slices > 1)
                addSlices(rows, out, slices, partial, bias, y, st);
            return;
        }
        const int splits = scratch ? linearSplits(rows, in, out, sms) : 1; // the FP32-path kernels'
        if (rows > kGemvMaxRows) {
            const int chunk = (in + splits - 1) / splits;
            const int chunkSteps = (chunk + kTk - 1) / kTk * kTk; // slices start on a step
            const int slices = (in + chunkSteps - 1) / chunkSteps;
            const dim3 grid((out + kTn - 1) / kTn, (rows + kTm - 1) / kTm, unsigned(slices));
            linearSgemmKernel<T><<<grid, 256, 0, st>>>(rows, in, out, chunkSteps, x, w, bias, partial, y);
            if (slices > 1)
                addSlices(rows, out, slices, partial, bias, y, st);
            return;
        }
        if (rows == 1)
            launchGemv<T, 1>(rows, in, out, x, w, bias, y, partial, splits, st);
        else if (rows == 2)
            launchGemv<T, 2>(rows, in, out, x, w, bias, y, partial, splits, st);
        else if (rows <= 4)
            launchGemv<T, 4>(rows, in, out, x, w, bias, y, partial, splits, st);
        else
            launchGemv<T, kGemvMaxRows>(rows, in, out, x, w, bias, y, partial, splits, st);
    }
} // namespace

void linear(int rows, int in, int out, const float* x, const float* w, const float* bias, float* y, void* scratch,
    int sms, cudaStream_t st)
{
    linearOf(MathMode::FP32, rows, in, out, x, w, bias, y, scratch, sms, st);
}

void linearStored(int rows, int in, int out, DType type, const void* x, const void* w, const float* bias, void* y,
    void* scratch, int sms, cudaStream_t st)
{
    // The storage formats (compute/storage_format.h): FP32 here is tf32's channels-last (plain FP32 runs `linear`).
    const MathMode math = type == DType::F16 ? MathMode::FP16 : type == DType::BF16 ? MathMode::BF16 : MathMode::TF32;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        linearOf(math, rows, in, out, static_cast<const T*>(x), static_cast<const T*>(w), bias, static_cast<T*>(y),
            scratch, sms, st);
    });
}

} // namespace convscope::cuda
