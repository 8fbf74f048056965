// conv2d, cuda.tensor_core: an implicit GEMM on Tensor Cores (issue 20), for the tf32, fp16 and bf16 math modes.
//
// The product. With the activations channels-last (NHWC, as the session stores them in these modes) the convolution
// is Y[m, k] = Σ_kd A[m, kd] · B[kd, k] + bias[k], where m = (n, p, q) runs over the N·P·Q output pixels, k over the
// K output channels and kd over the reduction taps in the order (r, s, c), channel fastest:
//   A[m, (r, s, c)] = x[n, p·sh − top + r·dh, q·sw − left + s·dw, c]   (0 off the input: the padding, any side)
//   B[(r, s, c), k] = w[k, c, r, s]
// Channel fastest is what makes the gather cheap: for one tap, a pixel's C channels are contiguous in NHWC, so the A
// tile is copied in 16-byte pieces (8 halves or 4 floats) straight from x, and one bounds test covers a piece. The
// weights are packed once (prepare) as [K][R·S·Cp], Cp = C rounded up to a 16-byte piece and the row padded with
// zeros to whole k-tiles, so B moves in 16-byte pieces too with no bounds test along the reduction; both operands
// are then "K-major", the layout mma.sync's row.col form and ldmatrix read without a transpose. The output is Y
// itself: [N·P·Q][K] is NHWC.
//
// The kernel (the structure of CUTLASS's sm80 multistage GEMMs; nothing copied):
//   - a block computes a 128×BN tile of Y (BN = 128 with 8 warps, or 64 with 4 warps where K ≤ 64, so narrow
//     layers waste no half tile); each warp a 64×32 tile: 4×4 mma.sync tiles of m16n8, 64 FP32 accumulators a
//     thread. FP16/BF16 use m16n8k16, TF32 m16n8k8: both take 32 bytes of reduction per step, so the shared-memory
//     layout, the copies and the ldmatrix addressing are the same for all three types, counted in 16-byte pieces;
//   - a k-tile is 64 bytes of reduction (32 halves or 16 floats) per row; the tiles travel global → shared by
//     cp.async.cg (16 bytes, L2 only), 4 stages deep, so three tiles are in flight while one is multiplied. A piece
//     off the input, past the last channel or past the last tap copies 0 bytes and is zero-filled;
//   - a row's four pieces are stored XOR-swizzled (piece ^ (row/2 mod 4)), so both the cp.async writes and the
//     ldmatrix reads (8 rows × 16 bytes at one logical piece) touch 8 different bank groups: no conflicts;
//   - fragments come from ldmatrix.x4 (four 8×8 matrices of 16-bit elements, i.e. 8 rows × 16 bytes: for TF32 the
//     same instruction hands each thread the 32-bit elements the m16n8k8 fragment wants);
//   - TF32: the weights are rounded to TF32 when packed, the activations by cvt.rna.tf32.f32 on each A fragment
//     (round to nearest, ties away), so the products are exact and only the FP32 accumulation order differs from a
//     reference on the same rounded operands;
//   - the epilogue adds the FP32 bias, applies a fused activation (compute/fusion.h) and rounds to the storage type.
// A C that is not a multiple of the 16-byte piece (a 3-channel stem) is read element by element into the piece
// (zero past C) instead of by cp.async: the same tile, a slower copy, only on such layers.
// Split-K: when the tiles would not fill the device (the 14×14 layers of VGG-16 make 52 tiles on 132
// multiprocessors), the reduction is split over blockIdx.z; each part writes FP32 partial sums to the scratch and a
// second kernel adds them with the bias and activation.
#include "kernels/cuda/conv2d_tensor_core.cuh"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"
#include "kernels/cuda/activation_op.cuh"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <type_traits>

namespace convscope::cuda {

namespace {
    constexpr int kStages = 4;
    constexpr int kRowPieces = 4; // 16-byte pieces of reduction per tile row per k-tile (64 bytes)
    constexpr int kWarpM = 64; // a warp's pixels: 4 m16 tiles

    // The block shapes (--option tc_tile=...): warps down the pixels × warps across the channels, and n8 tiles a warp.
    struct TileShape {
        const char* name;
        int warpsM, warpsN, ni;
        int bm() const { return kWarpM * warpsM; }
        int bn() const { return 8 * ni * warpsN; }
    };
    constexpr TileShape kTiles[] = {
        { "128x64", 2, 2, 4 }, // 4 warps of 64×32: layers of ≤ 64 output channels
        { "128x128", 2, 2, 8 }, // 4 warps of 64×64
        { "128x128w8", 2, 4, 4 }, // 8 warps of 64×32
        { "128x256", 2, 4, 8 }, // 8 warps of 64×64
        { "256x128", 4, 2, 8 }, // 8 warps of 64×64
    };
    constexpr int kTileCount = int(sizeof(kTiles) / sizeof(kTiles[0]));

    template <typename T> constexpr int pieceElems() { return 16 / int(sizeof(T)); }
    template <typename T> constexpr int tileK() { return kRowPieces * pieceElems<T>(); }

    // What the launcher decided for a layer (the same in scratch sizing, prepare, the note and the launch).
    struct Plan {
        int pieceElems; // 8 (16-bit types) or 4 (float)
        int cp; // C rounded up to a piece
        int piecesPerTap;
        int kTiles; // k-tiles of the whole reduction
        int ldw; // packed weight row length: kTiles · tileK
        int tile; // index into kTiles
        int bm, bn;
        int mTiles, nTiles;
        int splits, tilesPerSplit;
        size_t packedBytes, workspaceBytes;
    };

    size_t align256(size_t b) { return (b + 255) / 256 * 256; }

    // ≤ 64 output channels: the narrow tile, so no half tile is spent on channels that do not exist. Else the
    // 128×128 tile of 4 warps with 64×64 warp tiles (twice the mma.sync per ldmatrix of 64×32).
    int defaultTile(const ConvGeometry& g, int64_t /*m*/, int /*smCount*/) { return g.k <= 64 ? 0 : 1; }

    Plan planOf(const ConvGeometry& g, DType type, int smCount, int tileOverride)
    {
        Plan p {};
        const int bytes = int(dtypeBytes(type));
        p.pieceElems = 16 / bytes;
        p.cp = (g.c + p.pieceElems - 1) / p.pieceElems * p.pieceElems;
        p.piecesPerTap = p.cp / p.pieceElems;
        const int pieces = g.r * g.s * p.piecesPerTap;
        p.kTiles = (pieces + kRowPieces - 1) / kRowPieces;
        p.ldw = p.kTiles * kRowPieces * p.pieceElems;
        const int64_t m = int64_t(g.n) * g.p * g.q;
        p.tile = tileOverride > 0 ? tileOverride - 1 : defaultTile(g, m, smCount);
        if (g.c % p.pieceElems != 0) // the element-by-element copy has the 4-warp tiles only
            p.tile = std::min(p.tile, 1);
        p.bm = kTiles[p.tile].bm();
        p.bn = kTiles[p.tile].bn();
        p.mTiles = int((m + p.bm - 1) / p.bm);
        p.nTiles = (g.k + p.bn - 1) / p.bn;
        // Split the reduction while the tiles fill less than one wave of the device and each part keeps at least 8
        // k-tiles (fewer would leave the pipeline mostly prologue).
        const int64_t tiles = int64_t(p.mTiles) * p.nTiles;
        p.splits = 1;
        while (p.splits < 8 && tiles * p.splits < smCount && p.kTiles / (p.splits * 2) >= 8)
            p.splits *= 2;
        p.tilesPerSplit = (p.kTiles + p.splits - 1) / p.splits;
        p.splits = (p.kTiles + p.tilesPerSplit - 1) / p.tilesPerSplit;
        p.packedBytes = align256(size_t(g.k) * p.ldw * bytes);
        p.workspaceBytes = p.splits > 1 ? align256(size_t(p.splits) * size_t(m) * g.k * sizeof(float)) : 0;
        return p;
    }

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
    template <int N> __device__ __forceinline__ void waitCopies() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
    __device__ __forceinline__ void ldmatrixX4(uint32_t (&r)[4], uint32_t addr)
    {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
    }
    __device__ __forceinline__ uint32_t roundTf32(uint32_t bits)
    {
        uint32_t out;
        asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(out) : "f"(__uint_as_float(bits)));
        return out;
    }

    // One m16n8 Tensor Core product of 32 bytes of reduction, FP32 accumulators.
    template <typename T> __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
    template <> __device__ __forceinline__ void mma<__half>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    template <>
    __device__ __forceinline__ void mma<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    template <> __device__ __forceinline__ void mma<float>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
    {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }

    // Byte offset of piece `piece` of tile row `row` (64-byte rows, swizzled: see the essay).
    __device__ __forceinline__ uint32_t swizzled(int row, int piece)
    {
        return uint32_t(row * 64 + ((piece ^ ((row >> 1) & 3)) << 4));
    }

    // Two consecutive output channels, rounded to T, in one store where the pair is aligned.
    template <typename T> __device__ __forceinline__ void storePair(T* dst, float v0, float v1, bool both, bool aligned)
    {
        if (both && aligned) {
            if constexpr (std::is_same_v<T, float>)
                *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
            else if constexpr (std::is_same_v<T, __half>)
                *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(v0, v1);
            else
                *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(v0, v1);
            return;
        }
        dst[0] = gpu::fromFloat<T>(v0);
        if (both)
            dst[1] = gpu::fromFloat<T>(v1);
    }

    // Registers cap the blocks a multiprocessor holds: 64 accumulators a thread leave room for 3 blocks of 4 warps
    // or 2 of 8; 128 accumulators (64×64 warp tiles) for 2 of 4 warps or 1 of 8.
    constexpr int minBlocks(int warps, int ni) { return ni == 4 ? (warps == 4 ? 3 : 2) : (warps == 4 ? 2 : 1); }

    // WM × WN warps, each 64 pixels × 8·NI channels. AlignedC: C is a multiple of the 16-byte piece, so A moves by
    // cp.async; else element by element. `partial` (split-K): write FP32 partial sums instead of Y.
    template <typename T, int WM, int WN, int NI, bool AlignedC>
    __global__ void __launch_bounds__(32 * WM * WN, minBlocks(WM * WN, NI)) tensorCoreConvKernel(Params prm,
        const T* __restrict__ x, const T* __restrict__ wp, const float* __restrict__ bias, T* __restrict__ y,
        float* __restrict__ partial)
    {
        constexpr int BM = kWarpM * WM, WARP_N = 8 * NI, BN = WARP_N * WN, THREADS = 32 * WM * WN;
        constexpr int PE = pieceElems<T>();
        constexpr int A_ROWS = BM * kRowPieces / THREADS, B_ROWS = BN * kRowPieces / THREADS;
        static_assert(A_ROWS * THREADS == BM * kRowPieces && B_ROWS * THREADS == BN * kRowPieces, "copies divide");
        constexpr uint32_t A_BYTES = BM * 64, STAGE_BYTES = (BM + BN) * 64;
        extern __shared__ __align__(128) unsigned char smem[];
        const ConvGeometry& g = prm.g;
        const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
        const int warpM = warp / WN, warpN = warp % WN;
        const int mBase = blockIdx.x * BM, nBase = blockIdx.y * BN;
        const int ktBegin = blockIdx.z * prm.tilesPerSplit;
        const int nk = min(prm.kTiles, ktBegin + prm.tilesPerSplit) - ktBegin;
        const uint32_t smemBase = sharedAddress(smem);

        // The copy a thread does each k-tile: piece `myPiece` of A_ROWS pixel rows and B_ROWS channel rows.
        const int myPiece = tid & 3, rowStep = THREADS / 4;
        int aOffset[A_ROWS], aIh[A_ROWS], aIw[A_ROWS];
#pragma unroll
        for (int i = 0; i < A_ROWS; ++i) {
            const int m = mBase + tid / 4 + i * rowStep;
            if (m < prm.m) {
                const int pq = g.p * g.q, n = m / pq, rem = m % pq;
                aIh[i] = (rem / g.q) * g.strideH - g.padTop;
                aIw[i] = (rem % g.q) * g.strideW - g.padLeft;
                aOffset[i] = n * g.h * g.w * g.c;
            } else {
                aIh[i] = -(1 << 30); // fails every bounds test
                aIw[i] = 0;
                aOffset[i] = 0;
            }
        }
        // Where this thread's piece of the first k-tile lies: tap (r, s), piece cc of the tap's channels. Advanced
        // tile by tile without division.
        const int firstPiece = ktBegin * kRowPieces + myPiece;
        int tap = firstPiece / prm.piecesPerTap, cc = firstPiece % prm.piecesPerTap;
        int r = tap / g.s, s = tap % g.s;

        auto loadTile = [&](int local, int stage) {
            const uint32_t aStage = smemBase + stage * STAGE_BYTES, bStage = aStage + A_BYTES;
            const int rOff = r * g.dilH, sOff = s * g.dilW, cOff = cc * PE;
#pragma unroll
            for (int i = 0; i < A_ROWS; ++i) {
                const int row = tid / 4 + i * rowStep;
                const int ih = aIh[i] + rOff, iw = aIw[i] + sOff;
                const bool inside = r < g.r && unsigned(ih) < unsigned(g.h) && unsigned(iw) < unsigned(g.w);
                const T* src = x + (inside ? aOffset[i] + (ih * g.w + iw) * g.c + cOff : 0);
                const uint32_t dst = aStage + swizzled(row, myPiece);
                if constexpr (AlignedC) {
                    copyAsync16(dst, src, inside);
                } else {
                    alignas(16) T v[PE];
#pragma unroll
                    for (int e = 0; e < PE; ++e)
                        v[e] = inside && cOff + e < g.c ? src[e] : gpu::fromFloat<T>(0.0f);
                    const uint4 bits = *reinterpret_cast<const uint4*>(v);
                    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(bits.x), "r"(bits.y),
                        "r"(bits.z), "r"(bits.w));
                }
            }
            const int kd = (ktBegin + local) * kRowPieces * PE + myPiece * PE;
#pragma unroll
            for (int i = 0; i < B_ROWS; ++i) {
                const int row = tid / 4 + i * rowStep, k = nBase + row;
                copyAsync16(bStage + swizzled(row, myPiece), wp + (k < g.k ? size_t(k) * prm.ldw + kd : 0), k < g.k);
            }
            // The next k-tile's piece: kRowPieces pieces on, across as many taps as that crosses.
            cc += kRowPieces;
            while (cc >= prm.piecesPerTap) {
                cc -= prm.piecesPerTap;
                if (++s == g.s) {
                    s = 0;
                    ++r;
                }
            }
        };

        float acc[4][NI][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < NI; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    acc[i][j][e] = 0.0f;

#pragma unroll
        for (int st = 0; st < kStages - 1; ++st) {
            if (st < nk)
                loadTile(st, st);
            commitCopies();
        }

        // ldmatrix row addresses: A's four matrices are rows 0–7 / 8–15 × the step's low / high piece; B's are
        // channels 0–7 low, 0–7 high, 8–15 low, 8–15 high (two n8 tiles of one x4).
        const int aRow = warpM * kWarpM + (lane & 15), aHalf = lane >> 4;
        const int bRow = warpN * WARP_N + (lane & 7) + ((lane >> 4) << 3), bHalf = (lane >> 3) & 1;

        for (int t = 0; t < nk; ++t) {
            waitCopies<kStages - 2>();
            __syncthreads();
            const int next = t + kStages - 1;
            if (next < nk)
                loadTile(next, next % kStages);
            commitCopies();

            const uint32_t aStage = smemBase + (t % kStages) * STAGE_BYTES, bStage = aStage + A_BYTES;
#pragma unroll
            for (int step = 0; step < 2; ++step) {
                uint32_t af[4][4], bf[NI][2];
#pragma unroll
                for (int mi = 0; mi < 4; ++mi) {
                    ldmatrixX4(af[mi], aStage + swizzled(aRow + mi * 16, step * 2 + aHalf));
                    if constexpr (std::is_same_v<T, float>)
#pragma unroll
                        for (int e = 0; e < 4; ++e)
                            af[mi][e] = roundTf32(af[mi][e]);
                }
#pragma unroll
                for (int nj = 0; nj < NI / 2; ++nj) {
                    uint32_t q[4];
                    ldmatrixX4(q, bStage + swizzled(bRow + nj * 16, step * 2 + bHalf));
                    bf[2 * nj][0] = q[0], bf[2 * nj][1] = q[1], bf[2 * nj + 1][0] = q[2], bf[2 * nj + 1][1] = q[3];
                }
#pragma unroll
                for (int mi = 0; mi < 4; ++mi)
#pragma unroll
                    for (int ni = 0; ni < NI; ++ni)
                        mma<T>(acc[mi][ni], af[mi], bf[ni]);
            }
        }
        waitCopies<0>();

        // Accumulator (mi, ni, e) is pixel row g + 8·(e / 2) of m16 tile mi, channel 2·(lane % 4) + e % 2 of n8 tile ni.
        const bool pairAligned = g.k % 2 == 0;
#pragma unroll
        for (int mi = 0; mi < 4; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int m = mBase + warpM * kWarpM + mi * 16 + (lane >> 2) + h * 8;
                if (m >= prm.m)
                    continue;
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) {
                    const int k = nBase + warpN * WARP_N + ni * 8 + 2 * (lane & 3);
                    if (k >= g.k)
                        continue;
                    const bool both = k + 1 < g.k;
                    float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
                    if (partial) {
                        float* dst = partial + (size_t(blockIdx.z) * prm.m + m) * g.k + k;
                        if (both && pairAligned)
                            *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
                        else {
                            dst[0] = v0;
                            if (both)
                                dst[1] = v1;
                        }
                        continue;
                    }
                    if (bias) {
                        v0 += __ldg(&bias[k]);
                        v1 += both ? __ldg(&bias[k + 1]) : 0.0f;
                    }
                    storePair(y + size_t(m) * g.k + k, epilogue(g.act, g.actParam, v0), epilogue(g.act, g.actParam, v1),
                        both, pairAligned);
                }
            }
    }

    // Split-K: sums the parts' partial sums, adds the bias, applies the activation, rounds to T.
    template <typename T>
    __global__ void splitReduceKernel(ConvGeometry g, int m, int splits, const float* __restrict__ partial,
        const float* __restrict__ bias, T* __restrict__ y)
    {
        const int64_t total = int64_t(m) * g.k;
        const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
        if (i >= total)
            return;
        float v = bias ? __ldg(&bias[i % g.k]) : 0.0f;
        for (int z = 0; z < splits; ++z)
            v += partial[z * total + i];
        y[i] = gpu::fromFloat<T>(epilogue(g.act, g.actParam, v));
    }

    // w [K, C, R, S] → [K][ldw]: position (tap, c) at tap·Cp + c, zero past C, past the last tap and in the
    // padding of the last k-tile. TF32 mode rounds here, once, so the kernel converts only the activations.
    template <typename T>
    __global__ void packWeightsKernel(ConvGeometry g, int cp, int ldw, const T* __restrict__ w, T* __restrict__ packed)
    {
        const int64_t total = int64_t(g.k) * ldw;
        const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
        if (i >= total)
            return;
        const int k = int(i / ldw), pos = int(i % ldw), tap = pos / cp, c = pos % cp;
        T v = gpu::fromFloat<T>(0.0f);
        if (tap < g.r * g.s && c < g.c) {
            v = w[(int64_t(k) * g.c + c) * g.r * g.s + tap];
            if constexpr (std::is_same_v<T, float>)
                v = __uint_as_float(roundTf32(__float_as_uint(v)));
        }
        packed[i] = v;
    }

    template <typename T, int WM, int WN, int NI, bool AlignedC> void launch(const Plan& p, const Params& prm,
        const T* x, const T* wp, const float* bias, T* y, float* partial, cudaStream_t st)
    {
        constexpr int BM = kWarpM * WM, BN = 8 * NI * WN;
        constexpr size_t smemBytes = size_t(kStages) * (BM + BN) * 64;
        auto* kernel = tensorCoreConvKernel<T, WM, WN, NI, AlignedC>;
        // Above 48 KB of dynamic shared memory a kernel must opt in, once (prepare makes the first call, outside any
        // graph capture).
        static std::once_flag once;
        std::call_once(once, [&] {
            CONVSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smemBytes)));
        });
        kernel<<<dim3(p.mTiles, p.nTiles, p.splits), 32 * WM * WN, smemBytes, st>>>(prm, x, wp, bias, y, partial);
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d tensor core");
    }

    template <typename T> void runTyped(const ConvGeometry& g, const Plan& p, const void* xv, const float* bias,
        void* yv, void* scratch, cudaStream_t st)
    {
        const T* x = static_cast<const T*>(xv);
        T* y = static_cast<T*>(yv);
        const T* wp = static_cast<const T*>(scratch);
        float* partial = p.splits > 1
            ? reinterpret_cast<float*>(static_cast<unsigned char*>(scratch) + p.packedBytes)
            : nullptr;
        const Params prm { g, g.n * g.p * g.q, p.piecesPerTap, p.kTiles, p.tilesPerSplit, p.ldw };
        const bool aligned = g.c % p.pieceElems == 0;
        // The element-by-element copy (C not a multiple of the piece: stems) has the two 4-warp tiles only.
        switch (p.tile) {
        case 0:
            aligned ? launch<T, 2, 2, 4, true>(p, prm, x, wp, bias, y, partial, st)
                    : launch<T, 2, 2, 4, false>(p, prm, x, wp, bias, y, partial, st);
            break;
        case 1:
            aligned ? launch<T, 2, 2, 8, true>(p, prm, x, wp, bias, y, partial, st)
                    : launch<T, 2, 2, 8, false>(p, prm, x, wp, bias, y, partial, st);
            break;
        case 2:
            launch<T, 2, 4, 4, true>(p, prm, x, wp, bias, y, partial, st);
            break;
        case 3:
            launch<T, 2, 4, 8, true>(p, prm, x, wp, bias, y, partial, st);
            break;
        default:
            launch<T, 4, 2, 8, true>(p, prm, x, wp, bias, y, partial, st);
            break;
        }
        if (partial) {
            const int64_t total = int64_t(prm.m) * g.k;
            splitReduceKernel<T><<<unsigned((total + 255) / 256), 256, 0, st>>>(g, prm.m, p.splits, partial, bias, y);
            CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d tensor core");
        }
    }
} // namespace

std::string conv2dTensorCoreRefusal(const ConvGeometry& g)
{
    if (g.groups != 1)
        return "grouped convolution (groups = " + std::to_string(g.groups)
            + ") has no Tensor Core kernel: it runs the FP32 implicit GEMM";
    return {};
}

int conv2dTensorCoreParseTile(const std::string& text)
{
    std::string names;
    for (int i = 0; i < kTileCount; ++i) {
        if (text == kTiles[i].name)
            return i + 1;
        names += std::string(i ? ", " : "") + kTiles[i].name;
    }
    throw InputError("tc_tile=" + text + ": the Tensor Core tile is one of " + names);
}

size_t conv2dTensorCoreScratchBytes(const ConvGeometry& g, DType type, int smCount, int tile)
{
    const Plan p = planOf(g, type, smCount, tile);
    return p.packedBytes + p.workspaceBytes;
}

void conv2dTensorCorePrepare(
    const ConvGeometry& g, DType type, int tile, const void* w, void* scratch, int smCount, cudaStream_t st)
{
    const Plan p = planOf(g, type, smCount, tile);
    gpu::withStorageType(type, [&](auto tag) {
        using T = decltype(tag);
        const int64_t total = int64_t(g.k) * p.ldw;
        packWeightsKernel<T><<<unsigned((total + 255) / 256), 256, 0, st>>>(
            g, p.cp, p.ldw, static_cast<const T*>(w), static_cast<T*>(scratch));
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d tensor core");
    });
}

std::string conv2dTensorCoreNote(const ConvGeometry& g, DType type, int smCount, int tile)
{
    const Plan p = planOf(g, type, smCount, tile);
    const int tk = kRowPieces * p.pieceElems;
    const TileShape& t = kTiles[p.tile];
    std::string note = std::string(type == DType::F32 ? "tf32 mma.sync m16n8k8" : std::string(dtypeName(type)) + " mma.sync m16n8k16")
        + ", " + std::to_string(t.bm()) + "x" + std::to_string(t.bn()) + " tiles of " + std::to_string(t.warpsM * t.warpsN)
        + " warps (64x" + std::to_string(8 * t.ni) + " each), k-tile " + std::to_string(tk) + ", " + std::to_string(kStages)
        + "-stage cp.async";
    if (g.c % p.pieceElems != 0)
        note += ", C = " + std::to_string(g.c) + " not a multiple of " + std::to_string(p.pieceElems)
            + ": activations copied element by element";
    if (p.splits > 1)
        note += ", split-K " + std::to_string(p.splits) + " (" + std::to_string(p.mTiles * p.nTiles) + " tiles on "
            + std::to_string(smCount) + " SMs)";
    return note;
}

void conv2dTensorCore(const ConvGeometry& g, DType type, int tile, const void* x, const float* bias, void* y,
    void* scratch, int smCount, cudaStream_t st)
{
    if (!conv2dTensorCoreRefusal(g).empty())
        throw Error("cuda.tensor_core: " + conv2dTensorCoreRefusal(g));
    const Plan p = planOf(g, type, smCount, tile);
    gpu::withStorageType(type, [&](auto tag) { runTyped<decltype(tag)>(g, p, x, bias, y, scratch, st); });
}

} // namespace convscope::cuda
