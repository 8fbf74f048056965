// The Tensor Core convolution's mma.sync kernel and the device pieces every Tensor Core kernel shares
// (cuda.tensor_core): included by conv2d_tensor_core.cu, which has the essay and the host API, by one file per storage
// type (conv2d_tensor_core_{f16,bf16,tf32}.cu) that instantiates them, so the three types' kernels compile in parallel,
// and by the sm_90a kernels (*_wgmma.cu). The plan (tiles, kernel choice, split) is conv2d_tensor_core_plan.h.
#pragma once

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"
#include "kernels/cuda/activation_op.cuh"
#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/conv2d_tensor_core_plan.h"
#include "kernels/cuda/tensor_core_mma.cuh"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace convscope::cuda::tc {

struct Params {
    ConvGeometry g;
    int m; // N·P·Q
    int piecesPerTap, kTiles, tilesPerSplit, ldw;
};

__device__ __forceinline__ uint32_t sharedAddress(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void copyAsync16(uint32_t dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commitCopies() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PendingGroups> __device__ __forceinline__ void waitCopies()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PendingGroups));
}
__device__ __forceinline__ void ldmatrixX4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// The session's TF32: an FP32 value rounded to 10 fraction bits, to nearest with ties to even. That is what the
// Tensor Memory Accelerator does to FP32 data it copies as CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 (measured on the H200:
// 1024 of 1024 values, 256 of them exact ties), so the TMA kernel gets its operands rounded by the copy and every other
// kernel rounds the same way. sm_90 has the conversion (cvt.rn.tf32.f32); below, the same on the bits (Inf and NaN
// left as they are).
__device__ __forceinline__ uint32_t roundTf32(uint32_t bits)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t out;
    asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(out) : "f"(__uint_as_float(bits)));
    return out & 0xffffe000u; // PTX leaves the 13 bits below TF32 unspecified; the packed weights are stored as FP32
#else
    return (bits & 0x7f800000u) == 0x7f800000u ? bits : (bits + 0xfffu + ((bits >> 13) & 1u)) & 0xffffe000u;
#endif
}

// The four floats of the 16-byte shared-memory piece at `addr`, rounded to TF32 in place (roundTf32). wgmma would
// truncate FP32 operands to TF32, so the cp.async wgmma kernels round their activation tiles first.
__device__ __forceinline__ void roundPieceTf32(uint32_t addr)
{
    uint32_t v0, v1, v2, v3;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "r"(addr));
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(roundTf32(v0)), "r"(roundTf32(v1)),
        "r"(roundTf32(v2)), "r"(roundTf32(v3)));
}

// Byte offset of piece `piece` of tile row `row` (rows of RowPieces pieces, swizzled: see the essay).
template <int RowPieces> __device__ __forceinline__ uint32_t swizzled(int row, int piece)
{
    if constexpr (RowPieces == 4)
        return uint32_t(row * 64 + ((piece ^ ((row >> 1) & 3)) << 4));
    else
        return uint32_t(row * 128 + ((piece ^ (row & 7)) << 4));
}

// Two consecutive output channels, rounded to Element, in one store where the pair is aligned.
template <typename Element>
__device__ __forceinline__ void storePair(Element* dst, float v0, float v1, bool both, bool aligned)
{
    if (both && aligned) {
        if constexpr (std::is_same_v<Element, float>)
            *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
        else if constexpr (std::is_same_v<Element, __half>)
            *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(v0, v1);
        else
            *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(v0, v1);
        return;
    }
    dst[0] = gpu::fromFloat<Element>(v0);
    if (both)
        dst[1] = gpu::fromFloat<Element>(v1);
}

// A fused residual add (ConvGeometry::residual) in a storage-format epilogue: the sum (with its bias) rounded to the
// storage type as the unfused conv's output is stored, plus the skip's value (or its element `at`), so the fused layer
// rounds as the conv and the add layers it replaces do. The activation comes after, as without a skip.
template <typename Element> __device__ __forceinline__ float residualSum(float v, float skip)
{
    return gpu::toFloat(gpu::fromFloat<Element>(v)) + skip;
}
template <typename Element> __device__ __forceinline__ float residualSum(float v, const void* skip, size_t at)
{
    return residualSum<Element>(v, skipAt<Element>(skip, at));
}

// The pieces every Tensor Core kernel here shares (the mma.sync kernel below, the wgmma kernels of
// conv2d_tensor_core_wgmma.cu and conv2d_tensor_core_ws_wgmma.cu): where a thread's im2col rows start, which tap and
// channel piece a k-tile copies, the weight rows' copy and the output pair's store.

// The Rows output pixels (A rows) a thread copies, rows firstRow, firstRow + rowStep, …: for each, the input
// position of tap (0, 0) and its image's offset; a row past N·P·Q fails every bounds test.
template <int Rows> struct GatherRows {
    int offset[Rows], ih[Rows], iw[Rows];
    __device__ __forceinline__ GatherRows(const Params& prm, int firstRow, int rowStep)
    {
        const ConvGeometry& g = prm.g;
#pragma unroll
        for (int i = 0; i < Rows; ++i) {
            const int m = firstRow + i * rowStep;
            if (m < prm.m) {
                const int pq = g.p * g.q, n = m / pq, rem = m % pq;
                ih[i] = (rem / g.q) * g.strideH - g.padTop;
                iw[i] = (rem % g.q) * g.strideW - g.padLeft;
                offset[i] = n * g.h * g.w * g.c;
            } else {
                ih[i] = -(1 << 30); // fails every bounds test
                iw[i] = 0;
                offset[i] = 0;
            }
        }
    }
};

// Where a thread's piece of a k-tile lies: tap (r, s), piece cc of the tap's channels; advanced k-tile by k-tile
// (RowPieces pieces on, across as many taps as that crosses) without division.
struct TapCursor {
    int cc, r, s;
    __device__ __forceinline__ TapCursor(const Params& prm, int firstPiece)
    {
        const int tap = firstPiece / prm.piecesPerTap;
        cc = firstPiece % prm.piecesPerTap;
        r = tap / prm.g.s;
        s = tap % prm.g.s;
    }
    template <int RowPieces> __device__ __forceinline__ void advance(const Params& prm)
    {
        cc += RowPieces;
        while (cc >= prm.piecesPerTap) {
            cc -= prm.piecesPerTap;
            if (++s == prm.g.s) {
                s = 0;
                ++r;
            }
        }
    }
};

// The weight rows (B) of k-tile `kTile`: Rows output channels from nBase + firstRow, step rowStep, piece `piece`
// of each, zero-filled past K.
template <typename Element, int RowPieces, int Rows>
__device__ __forceinline__ void copyWeightRows(uint32_t bStage, const Params& prm, const Element* __restrict__ wp,
    int nBase, int firstRow, int rowStep, int piece, int kTile)
{
    constexpr int PE = pieceElems<Element>();
    const int kd = kTile * RowPieces * PE + piece * PE;
#pragma unroll
    for (int i = 0; i < Rows; ++i) {
        const int row = firstRow + i * rowStep, k = nBase + row;
        copyAsync16(
            bStage + swizzled<RowPieces>(row, piece), wp + (k < prm.g.k ? size_t(k) * prm.ldw + kd : 0), k < prm.g.k);
    }
}

// The im2col rows (A) of the k-tile at `at`: the thread's Rows pixel rows (GatherRows, rows firstRow + i·rowStep of the
// tile), piece `piece` of tap (at.r, at.s), zero-filled off the input, past C and past the last tap. AlignedC: C is a
// multiple of the 16-byte piece, so a piece moves by cp.async; else element by element.
template <typename Element, int RowPieces, int Rows, bool AlignedC>
__device__ __forceinline__ void copyPixelRows(uint32_t aStage, const Params& prm, const Element* __restrict__ x,
    const GatherRows<Rows>& rows, const TapCursor& at, int firstRow, int rowStep, int piece)
{
    constexpr int PE = pieceElems<Element>();
    const ConvGeometry& g = prm.g;
    const int rOff = at.r * g.dilH, sOff = at.s * g.dilW, cOff = at.cc * PE;
#pragma unroll
    for (int i = 0; i < Rows; ++i) {
        const int ih = rows.ih[i] + rOff, iw = rows.iw[i] + sOff;
        const bool inside = at.r < g.r && unsigned(ih) < unsigned(g.h) && unsigned(iw) < unsigned(g.w);
        const Element* src = x + (inside ? rows.offset[i] + (ih * g.w + iw) * g.c + cOff : 0);
        const uint32_t dst = aStage + swizzled<RowPieces>(firstRow + i * rowStep, piece);
        if constexpr (AlignedC) {
            copyAsync16(dst, src, inside);
        } else {
            alignas(16) Element v[PE];
#pragma unroll
            for (int e = 0; e < PE; ++e)
                v[e] = inside && cOff + e < g.c ? src[e] : gpu::fromFloat<Element>(0.0f);
            const uint4 bits = *reinterpret_cast<const uint4*>(v);
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(bits.x), "r"(bits.y), "r"(bits.z),
                "r"(bits.w));
        }
    }
}

// A fused residual add's skip at output channels k, k + 1 of pixel m (storeOutputPair's `skip`; zeros without one,
// past K, or in a split-K part, whose skip the reduction adds).
template <typename Element>
__device__ __forceinline__ float2 loadSkipPair(const Params& prm, int m, int k, const float* partial)
{
    const ConvGeometry& g = prm.g;
    if (!g.residual || partial || k >= g.k)
        return make_float2(0.0f, 0.0f);
    const size_t at = size_t(m) * g.k + k;
    const bool both = k + 1 < g.k;
    if (both && g.k % 2 == 0) {
        const Element* p = static_cast<const Element*>(g.residual) + at;
        if constexpr (std::is_same_v<Element, float>)
            return *reinterpret_cast<const float2*>(p);
        else if constexpr (std::is_same_v<Element, __half>)
            return __half22float2(*reinterpret_cast<const __half2*>(p));
        else
            return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
    }
    return make_float2(skipAt<Element>(g.residual, at), both ? skipAt<Element>(g.residual, at + 1) : 0.0f);
}

// Output channels k, k + 1 of pixel m from their FP32 sums: split-K part z's partial sums, or bias, activation and
// the storage type; `skip`: a fused residual add's, from loadSkipPair.
template <typename Element>
__device__ __forceinline__ void storeOutputPair(const Params& prm, int z, int m, int k, float v0, float v1,
    const float* __restrict__ bias, Element* __restrict__ y, float* __restrict__ partial, float2 skip)
{
    const ConvGeometry& g = prm.g;
    const bool both = k + 1 < g.k, pairAligned = g.k % 2 == 0;
    if (partial) {
        float* dst = partial + (size_t(z) * prm.m + m) * g.k + k;
        if (both && pairAligned)
            *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
        else {
            dst[0] = v0;
            if (both)
                dst[1] = v1;
        }
        return;
    }
    if (bias) {
        v0 += __ldg(&bias[k]);
        v1 += both ? __ldg(&bias[k + 1]) : 0.0f;
    }
    if (g.residual) { // a fused residual add
        v0 = residualSum<Element>(v0, skip.x);
        v1 = both ? residualSum<Element>(v1, skip.y) : v1;
    }
    storePair(
        y + size_t(m) * g.k + k, epilogue(g.act, g.actParam, v0), epilogue(g.act, g.actParam, v1), both, pairAligned);
}

// One output row (pixel m < N·P·Q) of a warp's accumulators: n8 blocks j = 0 … Blocks − 1 at channels kFirst + 8·j,
// their sums pair(j). A fused residual add's skip pairs are loaded up to 8 at a time before their stores, so their
// latencies overlap: loaded by each store in turn they waited one after another (the compiler cannot move a load above
// a store to y, which might be the skip), and a residual layer took 1.4-1.6x its plain twin (ResNet-50 b32 fp16,
// 1x1 convolutions with the add in the epilogue; docs/PERFORMANCE.md, session 29).
// MaxBatch: the most pairs loaded at once (the TMA kernel's two blocks a multiprocessor leave it fewer registers).
template <typename Element, int Blocks, int MaxBatch = 8, typename Pair>
__device__ __forceinline__ void storeOutputRow(const Params& prm, int z, int m, int kFirst, Pair pair,
    const float* __restrict__ bias, Element* __restrict__ y, float* __restrict__ partial)
{
    constexpr int Batch = Blocks < MaxBatch ? Blocks : MaxBatch;
    static_assert(Blocks % Batch == 0, "whole batches of n8 blocks");
#pragma unroll
    for (int j0 = 0; j0 < Blocks; j0 += Batch) {
        float2 skip[Batch];
#pragma unroll
        for (int b = 0; b < Batch; ++b)
            skip[b] = loadSkipPair<Element>(prm, m, kFirst + 8 * (j0 + b), partial);
#pragma unroll
        for (int b = 0; b < Batch; ++b) {
            const int k = kFirst + 8 * (j0 + b);
            if (k < prm.g.k) {
                const float2 v = pair(j0 + b);
                storeOutputPair(prm, z, m, k, v.x, v.y, bias, y, partial, skip[b]);
            }
        }
    }
}

// Registers cap the blocks a multiprocessor holds: 64 accumulators a thread leave room for 3 blocks of 4 warps
// or 2 of 8; 128 accumulators (64×64 warp tiles) for 2 of 4 warps or 1 of 8.
constexpr int minBlocks(int warps, int ni) { return ni == 4 ? (warps == 4 ? 3 : 2) : (warps == 4 ? 2 : 1); }

// WarpsM × WarpsN warps, each 64 pixels × 8·N8PerWarp channels. AlignedC: C is a multiple of the 16-byte piece, so A
// moves by cp.async; else element by element. `partial` (split-K): write FP32 partial sums instead of Y.
template <typename Element, int WarpsM, int WarpsN, int N8PerWarp, int RowPieces, bool AlignedC>
__global__ void __launch_bounds__(32 * WarpsM * WarpsN, minBlocks(WarpsM* WarpsN, N8PerWarp))
    tensorCoreConvKernel(Params prm, const Element* __restrict__ x, const Element* __restrict__ wp,
        const float* __restrict__ bias, Element* __restrict__ y, float* __restrict__ partial)
{
    constexpr int BlockM = kWarpM * WarpsM, WARP_N = 8 * N8PerWarp, BlockN = WARP_N * WarpsN,
                  THREADS = 32 * WarpsM * WarpsN;
    constexpr int Stages = stagesFor(RowPieces), ROW_BYTES = 16 * RowPieces;
    constexpr int A_ROWS = BlockM * RowPieces / THREADS, B_ROWS = BlockN * RowPieces / THREADS;
    static_assert(A_ROWS * THREADS == BlockM * RowPieces && B_ROWS * THREADS == BlockN * RowPieces, "copies divide");
    constexpr uint32_t A_BYTES = BlockM * ROW_BYTES, STAGE_BYTES = (BlockM + BlockN) * ROW_BYTES;
    extern __shared__ __align__(128) unsigned char smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int warpM = warp / WarpsN, warpN = warp % WarpsN;
    const int mBase = blockIdx.x * BlockM, nBase = blockIdx.y * BlockN;
    const int ktBegin = blockIdx.z * prm.tilesPerSplit;
    const int nk = min(prm.kTiles, ktBegin + prm.tilesPerSplit) - ktBegin;
    const uint32_t smemBase = sharedAddress(smem);

    // The copy a thread does each k-tile: piece `myPiece` of A_ROWS pixel rows and B_ROWS channel rows.
    const int myPiece = tid % RowPieces, rowStep = THREADS / RowPieces;
    const GatherRows<A_ROWS> rows(prm, mBase + tid / RowPieces, rowStep);
    TapCursor at(prm, ktBegin * RowPieces + myPiece); // this thread's piece of the first k-tile

    auto loadTile = [&](int local, int stage) {
        const uint32_t aStage = smemBase + stage * STAGE_BYTES, bStage = aStage + A_BYTES;
        copyPixelRows<Element, RowPieces, A_ROWS, AlignedC>(
            aStage, prm, x, rows, at, tid / RowPieces, rowStep, myPiece);
        copyWeightRows<Element, RowPieces, B_ROWS>(
            bStage, prm, wp, nBase, tid / RowPieces, rowStep, myPiece, ktBegin + local);
        at.advance<RowPieces>(prm);
    };

    float acc[4][N8PerWarp][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < N8PerWarp; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0.0f;

#pragma unroll
    for (int st = 0; st < Stages - 1; ++st) {
        if (st < nk)
            loadTile(st, st);
        commitCopies();
    }

    // ldmatrix row addresses: A's four matrices are rows 0–7 / 8–15 × the step's low / high piece; B's are
    // channels 0–7 low, 0–7 high, 8–15 low, 8–15 high (two n8 tiles of one x4).
    const int aRow = warpM * kWarpM + (lane & 15), aHalf = lane >> 4;
    const int bRow = warpN * WARP_N + (lane & 7) + ((lane >> 4) << 3), bHalf = (lane >> 3) & 1;

    for (int t = 0; t < nk; ++t) {
        waitCopies<Stages - 2>();
        __syncthreads();
        const int next = t + Stages - 1;
        if (next < nk)
            loadTile(next, next % Stages);
        commitCopies();

        const uint32_t aStage = smemBase + (t % Stages) * STAGE_BYTES, bStage = aStage + A_BYTES;
#pragma unroll
        for (int step = 0; step < RowPieces / 2; ++step) {
            uint32_t af[4][4], bf[N8PerWarp][2];
#pragma unroll
            for (int mi = 0; mi < 4; ++mi) {
                ldmatrixX4(af[mi], aStage + swizzled<RowPieces>(aRow + mi * 16, step * 2 + aHalf));
                if constexpr (std::is_same_v<Element, float>)
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        af[mi][e] = roundTf32(af[mi][e]);
            }
#pragma unroll
            for (int nj = 0; nj < N8PerWarp / 2; ++nj) {
                uint32_t q[4];
                ldmatrixX4(q, bStage + swizzled<RowPieces>(bRow + nj * 16, step * 2 + bHalf));
                bf[2 * nj][0] = q[0], bf[2 * nj][1] = q[1], bf[2 * nj + 1][0] = q[2], bf[2 * nj + 1][1] = q[3];
            }
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
#pragma unroll
                for (int ni = 0; ni < N8PerWarp; ++ni)
                    mma<Element>(acc[mi][ni], af[mi], bf[ni]);
        }
    }
    waitCopies<0>();

    // Accumulator (mi, ni, e) is pixel row g + 8·(e / 2) of m16 tile mi, channel 2·(lane % 4) + e % 2 of n8 tile ni.
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int m = mBase + warpM * kWarpM + mi * 16 + (lane >> 2) + h * 8;
            if (m >= prm.m)
                continue;
            storeOutputRow<Element, N8PerWarp>(
                prm, blockIdx.z, m, nBase + warpN * WARP_N + 2 * (lane & 3),
                [&](int ni) { return make_float2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]); }, bias, y, partial);
        }
}

// Split-K: sums the parts' partial sums, adds the bias, applies the activation, rounds to Element.
template <typename Element>
__global__ void splitReduceKernel(ConvGeometry g, int m, int splits, const float* __restrict__ partial,
    const float* __restrict__ bias, Element* __restrict__ y)
{
    const int64_t total = int64_t(m) * g.k;
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= total)
        return;
    float v = bias ? __ldg(&bias[i % g.k]) : 0.0f;
    for (int z = 0; z < splits; ++z)
        v += partial[z * total + i];
    if (g.residual)
        v = residualSum<Element>(v, g.residual, size_t(i));
    y[i] = gpu::fromFloat<Element>(epilogue(g.act, g.actParam, v));
}

// w [K, C, R, S] → [K][ldw]: position (tap, c) at tap·Cp + c, zero past C, past the last tap and in the
// padding of the last k-tile. TF32 mode rounds here, once, so the kernel converts only the activations.
template <typename Element>
__global__ void packWeightsKernel(
    ConvGeometry g, int cp, int ldw, const Element* __restrict__ w, Element* __restrict__ packed)
{
    const int64_t total = int64_t(g.k) * ldw;
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= total)
        return;
    const int k = int(i / ldw), pos = int(i % ldw), tap = pos / cp, c = pos % cp;
    Element v = gpu::fromFloat<Element>(0.0f);
    if (tap < g.r * g.s && c < g.c) {
        v = w[(int64_t(k) * g.c + c) * g.r * g.s + tap];
        if constexpr (std::is_same_v<Element, float>)
            v = __uint_as_float(roundTf32(__float_as_uint(v)));
    }
    packed[i] = v;
}

template <typename Element, int WarpsM, int WarpsN, int N8PerWarp, int RowPieces, bool AlignedC>
void launch(const Plan& p, const Params& prm, const Element* x, const Element* wp, const float* bias, Element* y,
    float* partial, cudaStream_t st)
{
    constexpr int BlockM = kWarpM * WarpsM, BlockN = 8 * N8PerWarp * WarpsN;
    constexpr size_t smemBytes = size_t(stagesFor(RowPieces)) * (BlockM + BlockN) * 16 * RowPieces;
    auto* kernel = tensorCoreConvKernel<Element, WarpsM, WarpsN, N8PerWarp, RowPieces, AlignedC>;
    // Above 48 KB of dynamic shared memory a kernel must opt in, on each device: prepare does it (y null), on the
    // session's device and outside any graph capture, so a launch never needs to.
    if (!y) {
        CONVSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smemBytes)));
        return;
    }
    kernel<<<dim3(p.mTiles, p.nTiles, p.splits), 32 * WarpsM * WarpsN, smemBytes, st>>>(prm, x, wp, bias, y, partial);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d tensor core");
}

template <typename Element, int RowPieces>
void launchAligned(const Plan& p, const Params& prm, const Element* x, const Element* wp, const float* bias, Element* y,
    float* partial, cudaStream_t st)
{
    switch (p.tile) {
    case 0:
        return launch<Element, 2, 2, 4, RowPieces, true>(p, prm, x, wp, bias, y, partial, st);
    case 1:
        return launch<Element, 2, 2, 8, RowPieces, true>(p, prm, x, wp, bias, y, partial, st);
    case 2:
        return launch<Element, 2, 4, 4, RowPieces, true>(p, prm, x, wp, bias, y, partial, st);
    default:
        return launch<Element, 4, 2, 4, RowPieces, true>(p, prm, x, wp, bias, y, partial, st);
    }
}

// A launch's typed pointers: the input, the output, the packed weights at the start of the scratch and, when the
// reduction is split, the FP32 partial sums after them; and the kernels' Params.
template <typename Element> struct LaunchArgs {
    const Element* x;
    Element* y;
    const Element* wp;
    float* partial;
    Params prm;
    LaunchArgs(const ConvGeometry& g, const Plan& p, const void* xv, void* yv, void* scratch)
        : x(static_cast<const Element*>(xv))
        , y(static_cast<Element*>(yv))
        , wp(static_cast<const Element*>(scratch))
        , partial(
              p.splits > 1 ? reinterpret_cast<float*>(static_cast<unsigned char*>(scratch) + p.packedBytes) : nullptr)
        , prm { g, g.n * g.p * g.q, p.piecesPerTap, p.kTiles, p.tilesPerSplit, p.ldw }
    {
    }
};

// Split-K's second pass, after a kernel wrote its parts' partial sums (nothing to do unsplit or in prepare).
template <typename Element>
void reduceSplits(const ConvGeometry& g, const Plan& p, const LaunchArgs<Element>& a, const float* bias,
    cudaStream_t st, const char* what)
{
    if (!a.partial || !a.y)
        return;
    const int64_t total = int64_t(a.prm.m) * g.k;
    splitReduceKernel<Element>
        <<<unsigned((total + 255) / 256), 256, 0, st>>>(g, a.prm.m, p.splits, a.partial, bias, a.y);
    CONVSCOPE_CUDA_CHECK_LAUNCH(what);
}

// The convolution in storage type Element with the plan's tile (one instantiation per type, each in its own
// translation unit: conv2d_tensor_core_{f16,bf16,tf32}.cu, so the kernels compile in parallel). With y null it only
// configures the plan's kernel for its shared memory (prepare).
template <typename Element>
void runTyped(
    const ConvGeometry& g, const Plan& p, const void* xv, const float* bias, void* yv, void* scratch, cudaStream_t st)
{
    const LaunchArgs<Element> a(g, p, xv, yv, scratch);
    const Params& prm = a.prm;
    const Element *x = a.x, *wp = a.wp;
    Element* y = a.y;
    float* partial = a.partial;
    if (g.c % p.pieceElems != 0) // the element-by-element copy: 64-byte rows, the 4-warp tiles (planOf)
        p.tile == 0 ? launch<Element, 2, 2, 4, 4, false>(p, prm, x, wp, bias, y, partial, st)
                    : launch<Element, 2, 2, 8, 4, false>(p, prm, x, wp, bias, y, partial, st);
    else if (p.rowPieces == 4)
        launchAligned<Element, 4>(p, prm, x, wp, bias, y, partial, st);
    else
        launchAligned<Element, 8>(p, prm, x, wp, bias, y, partial, st);
    reduceSplits(g, p, a, bias, st, "conv2d tensor core");
}

template <typename Element>
void packTyped(const ConvGeometry& g, const Plan& p, const void* w, void* scratch, cudaStream_t st)
{
    const int64_t total = int64_t(g.k) * p.ldw;
    packWeightsKernel<Element><<<unsigned((total + 255) / 256), 256, 0, st>>>(
        g, p.cp, p.ldw, static_cast<const Element*>(w), static_cast<Element*>(scratch));
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d tensor core weight packing");
}

#define CONVSCOPE_TENSOR_CORE_INSTANTIATE(Element)                                                                     \
    template void runTyped<Element>(                                                                                   \
        const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);                      \
    template void packTyped<Element>(const ConvGeometry&, const Plan&, const void*, void*, cudaStream_t);

// Declared here, defined (instantiated) in the per-type files.
#define CONVSCOPE_TENSOR_CORE_EXTERN(Element)                                                                          \
    extern template void runTyped<Element>(                                                                            \
        const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);                      \
    extern template void packTyped<Element>(const ConvGeometry&, const Plan&, const void*, void*, cudaStream_t);
CONVSCOPE_TENSOR_CORE_EXTERN(float)
CONVSCOPE_TENSOR_CORE_EXTERN(__half)
CONVSCOPE_TENSOR_CORE_EXTERN(__nv_bfloat16)

// The stem kernel (conv2d_tensor_core_stem.cu): fp16 / bf16 where planOf set Plan::stem.
template <typename Element>
void runStemTyped(
    const ConvGeometry& g, const Plan& p, const void* x, const float* bias, void* y, void* scratch, cudaStream_t st);

// The wgmma kernel (conv2d_tensor_core_wgmma.cu, built only where the build targets sm_90: CONVSCOPE_HAVE_WGMMA).
template <typename Element>
void runWgmmaTyped(
    const ConvGeometry& g, const Plan& p, const void* x, const float* bias, void* y, void* scratch, cudaStream_t st);
template <typename Element>
void runSpecializedTyped(
    const ConvGeometry& g, const Plan& p, const void* x, const float* bias, void* y, void* scratch, cudaStream_t st);
template <typename Element>
void runTmaTyped(
    const ConvGeometry& g, const Plan& p, const void* x, const float* bias, void* y, void* scratch, cudaStream_t st);

} // namespace convscope::cuda::tc
