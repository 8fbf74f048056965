// Resize kernels (resize.cuh). A 2-D NCHW upsampling along H runs resizeSeparableKernel (below: x taps into shared
// memory rows, then y taps from them); other 2-D NCHW cases run resizePlanesKernel (both tap tables in shared memory,
// four outputs a thread). Otherwise: one warp per output row (plane, z, y) at a time; its lanes compute the row's z and
// y taps together (resize_math.h, in double as the CPU does), then stride along the row, reading each column's x taps
// from a table the block computed once in shared memory, and sum the weighted inputs in FP32. The tap count is a
// template parameter (1 nearest, 2 linear, 4 cubic) so the taps stay in registers: with a run-time count they went to
// local memory, and with every thread computing its own taps a 2× upsampling reached 5% of the copy bandwidth. The
// sums run in the CPU's order; an axis of one element (an image's D) has one tap of weight 1 and the others weight 0,
// which add exact zeros.
#include "kernels/cuda/resize.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/fast_divmod.h"
#include "kernels/common/storage_types.cuh"

#include <algorithm>

namespace convscope::cuda {

namespace {
    template <int K>
    __device__ __forceinline__ void axisTaps(
        const ResizePlan& p, const ResizeAxis& a, long long o, long long (&idx)[K], float (&w)[K])
    {
        int64_t i4[kResizeMaxTaps] = { 0, 0, 0, 0 };
        float w4[kResizeMaxTaps] = { 0, 0, 0, 0 };
        resizeTaps(p, a, o, i4, w4);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            idx[k] = i4[k];
            w[k] = w4[k];
        }
    }

    // The output row's z and y taps: the input rows it reads (offsets, in rows of W) and their weights.
    template <int K, bool VOLUME> struct RowTaps {
        static constexpr int kZ = VOLUME ? K : 1;
        long long row[kZ * K];
        float weight[kZ * K];
        __device__ RowTaps(const ResizePlan& p, long long oz, long long oy)
        {
            long long iz[K], iy[K];
            float wz[K], wy[K];
            axisTaps<K>(p, p.axis[0], oz, iz, wz);
            axisTaps<K>(p, p.axis[1], oy, iy, wy);
#pragma unroll
            for (int a = 0; a < kZ; ++a)
#pragma unroll
                for (int b = 0; b < K; ++b) {
                    row[a * K + b] = iz[a] * p.axis[1].in + iy[b];
                    weight[a * K + b] = wz[a] * wy[b];
                }
        }
    };

    // The x taps of every output column, computed once per block into shared memory when they fit (kMaxTableBytes)
    // and read by every row the block runs; otherwise each thread computes its own.
    constexpr long long kMaxTableBytes = 48 * 1024;
    template <int K> struct ColumnTaps {
        const int* idx = nullptr;
        const float* weight = nullptr;
        __device__ void at(const ResizePlan& p, long long ox, long long (&ix)[K], float (&wx)[K]) const
        {
            if (idx) {
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    ix[k] = idx[ox * K + k];
                    wx[k] = weight[ox * K + k];
                }
            } else {
                axisTaps<K>(p, p.axis[2], ox, ix, wx);
            }
        }
    };
    template <int K> __device__ ColumnTaps<K> columnTaps(const ResizePlan& p, bool table, unsigned char* smem)
    {
        ColumnTaps<K> t;
        if (!table)
            return t;
        int* idx = reinterpret_cast<int*>(smem);
        float* weight = reinterpret_cast<float*>(idx + p.axis[2].out * K);
        for (long long ox = threadIdx.x; ox < p.axis[2].out; ox += blockDim.x) {
            long long ix[K];
            float wx[K];
            axisTaps<K>(p, p.axis[2], ox, ix, wx);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                idx[ox * K + k] = int(ix[k]);
                weight[ox * K + k] = wx[k];
            }
        }
        __syncthreads();
        t.idx = idx;
        t.weight = weight;
        return t;
    }

    // Σ_rows weight · Σ_c wx[c] · base[(row · W + ix[c]) · stride]
    template <int K, bool VOLUME, typename T>
    __device__ __forceinline__ float rowSum(const RowTaps<K, VOLUME>& r, const long long (&ix)[K], const float (&wx)[K],
        const T* __restrict__ base, long long width, long long stride)
    {
        float acc = 0;
#pragma unroll
        for (int t = 0; t < RowTaps<K, VOLUME>::kZ * K; ++t) {
            const T* line = base + r.row[t] * width * stride;
            float part = 0;
#pragma unroll
            for (int c = 0; c < K; ++c)
                part += wx[c] * gpu::toFloat(line[ix[c] * stride]);
            acc += r.weight[t] * part;
        }
        return acc;
    }

    // One warp per output row: its lanes compute the row's taps together (one computation per warp) and stride along
    // it. NCHW: a row is (plane, z, y); channels-last ([n, D, H, W, C], LAST): (n, z, y) and its W' · C outputs, the
    // channels innermost.
    template <int K, bool VOLUME, bool LAST, typename T>
    __global__ void resizeKernel(
        ResizePlan p, long long rows, long long channels, bool table, const T* __restrict__ x, T* __restrict__ y)
    {
        extern __shared__ __align__(16) unsigned char smem[];
        const ColumnTaps<K> columns = columnTaps<K>(p, table, smem);
        const long long od = p.axis[0].out, oh = p.axis[1].out;
        const long long inBlock = p.axis[0].in * p.axis[1].in * p.axis[2].in * channels; // one plane or one sample
        const long long run = p.axis[2].out * channels;
        const int warps = int(blockDim.x / 32), lane = int(threadIdx.x % 32);
        for (long long row = blockIdx.x * (long long)warps + threadIdx.x / 32; row < rows;
             row += (long long)gridDim.x * warps) {
            const long long oy = row % oh, oz = (row / oh) % od, outer = row / (oh * od);
            const RowTaps<K, VOLUME> taps(p, oz, oy);
            const T* base = x + outer * inBlock;
            T* out = y + row * run;
            for (long long j = lane; j < run; j += 32) {
                const long long ox = LAST ? j / channels : j, c = LAST ? j - ox * channels : 0;
                long long ix[K];
                float wx[K];
                columns.at(p, ox, ix, wx);
                out[j] = gpu::fromFloat<T>(rowSum<K, VOLUME>(taps, ix, wx, base + c, p.axis[2].in, channels));
            }
        }
    }

    // Both tap tables of a 2-D NCHW plan in shared memory, tap-major (tap k of column ox at k · ow + ox, of row oy at
    // k · oh + oy), columns first; each row weight is the D tap's (1) times the H tap's, as in RowTaps. The block's
    // threads fill them; the caller synchronises.
    template <int K> struct TapTables {
        int* colIdx;
        float* colW;
        int* rowIdx;
        float* rowW;
        __device__ float* end(int oh) const { return reinterpret_cast<float*>(rowW + oh * K); }
    };
    template <int K> __device__ TapTables<K> fillTapTables(const ResizePlan& p, unsigned char* smem)
    {
        const int oh = int(p.axis[1].out), ow = int(p.axis[2].out);
        TapTables<K> t;
        t.colIdx = reinterpret_cast<int*>(smem);
        t.colW = reinterpret_cast<float*>(t.colIdx + ow * K);
        t.rowIdx = reinterpret_cast<int*>(t.colW + ow * K);
        t.rowW = reinterpret_cast<float*>(t.rowIdx + oh * K);
        long long iz[K];
        float wz[K];
        axisTaps<K>(p, p.axis[0], 0, iz, wz);
        for (int i = threadIdx.x; i < oh + ow; i += blockDim.x) {
            long long idx[K];
            float w[K];
            const bool row = i < oh;
            axisTaps<K>(p, p.axis[row ? 1 : 2], row ? i : i - oh, idx, w);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if (row) {
                    t.rowIdx[k * oh + i] = int(idx[k]);
                    t.rowW[k * oh + i] = wz[0] * w[k];
                } else {
                    t.colIdx[k * ow + i - oh] = int(idx[k]);
                    t.colW[k * ow + i - oh] = w[k];
                }
            }
        }
        return t;
    }

    // 2-D NCHW, upsampling along H: separable tiles. A block takes kSepRows output rows × kSepCols columns of one
    // plane. Phase 1 blends every input row the tile reads with the x taps into shared memory, consecutive lanes on
    // consecutive columns (a warp's loads fall in one or two cache lines); phase 2 blends those rows with the y taps,
    // two outputs a thread. The planes kernel below reads K × K inputs per output from L1, which ncu showed 88% busy
    // at half the copy bandwidth; here each input row is blended once per tile and read back from shared memory
    // (bilinear 2×: 50% → 66% of the copy, cubic 17% → 34%, nearest 69% → 80%; scratch microbenchmark, H200).
    // part = Σ_c w_c · in, out = Σ_a w_a · part_a: the planes kernel's expressions in its order, so the same bits.
    constexpr int kSepThreads = 256, kSepRows = 16;
    template <int K, int PER>
    __global__ void __launch_bounds__(kSepThreads)
        resizeSeparableKernel(ResizePlan p, long long tiles, const float* __restrict__ x, float* __restrict__ y)
    {
        extern __shared__ __align__(16) unsigned char smem[];
        constexpr int cols = kSepThreads * PER;
        const int oh = int(p.axis[1].out), ow = int(p.axis[2].out);
        const long long ih = p.axis[1].in, iw = p.axis[2].in;
        const TapTables<K> taps = fillTapTables<K>(p, smem);
        float* blended = taps.end(oh); // [rows the tile reads][cols]
        const int tileRows = (oh + kSepRows - 1) / kSepRows, tileCols = (ow + cols - 1) / cols;
        for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const int tc = int(tile % tileCols);
            const long long rest = tile / tileCols;
            const int y0 = int(rest % tileRows) * kSepRows, y1 = min(oh, y0 + kSepRows), x0 = tc * cols;
            const long long plane = rest / tileRows;
            __syncthreads(); // the tables are written (first tile); the previous tile is done with `blended`
            // The taps are clamped and non-decreasing in the output index: the tile reads rows [rlo, rlo + rows).
            const int rlo = taps.rowIdx[y0], rows = taps.rowIdx[(K - 1) * oh + y1 - 1] - rlo + 1;
            const float* src = x + (plane * ih + rlo) * iw;
#pragma unroll
            for (int v = 0; v < PER; ++v) {
                const int col = x0 + v * kSepThreads + int(threadIdx.x);
                if (col >= ow)
                    continue;
                int ci[K];
                float cw[K];
#pragma unroll
                for (int c = 0; c < K; ++c) {
                    ci[c] = taps.colIdx[c * ow + col];
                    cw[c] = taps.colW[c * ow + col];
                }
                for (int r = 0; r < rows; ++r) {
                    const float* in = src + r * iw;
                    float part = 0.0f;
#pragma unroll
                    for (int c = 0; c < K; ++c)
                        part += cw[c] * in[ci[c]];
                    blended[r * cols + v * kSepThreads + threadIdx.x] = part;
                }
            }
            __syncthreads();
            const int cx = x0 + int(threadIdx.x) * PER;
            if (cx >= ow)
                continue;
            for (int oy = y0; oy < y1; ++oy) {
                float out[PER];
#pragma unroll
                for (int u = 0; u < PER; ++u)
                    out[u] = 0.0f;
#pragma unroll
                for (int a = 0; a < K; ++a) {
                    const float rw = taps.rowW[a * oh + oy];
                    const float* line = blended + (taps.rowIdx[a * oh + oy] - rlo) * cols + threadIdx.x * PER;
#pragma unroll
                    for (int u = 0; u < PER; ++u)
                        out[u] += rw * line[u];
                }
                float* dst = y + (plane * oh + oy) * static_cast<long long>(ow) + cx;
                if constexpr (PER == 2)
                    *reinterpret_cast<float2*>(dst) = make_float2(out[0], out[1]);
                else
                    dst[0] = out[0];
            }
        }
    }

    // The separable kernel's shared memory for the plan (both tap tables and the tile's blended rows), or 0 when it
    // does not apply: volumes, downsampling along H (a tile would read many rows per output row), or tables and rows
    // over the 48 KB a launch takes without cudaFuncSetAttribute (a per-function, per-context setting that a graph
    // capture or a fresh context would have to repeat). Bilinear 2× up to 768 columns fits.
    constexpr size_t kMaxSeparableBytes = 48 * 1024;
    size_t separableBytes(const ResizePlan& p, int k, int per)
    {
        const bool volume = p.axis[0].in > 1 || p.axis[0].out > 1;
        const long long oh = p.axis[1].out, ow = p.axis[2].out;
        if (volume || oh < p.axis[1].in || (oh + ow) * k * 8 > static_cast<long long>(kMaxSeparableBytes))
            return 0;
        int maxRows = 0;
        for (long long y0 = 0; y0 < oh; y0 += kSepRows) {
            // Zeroed as in axisTaps: an axis of one element sets only the first tap, and the kernel reads tap K − 1.
            int64_t idx[kResizeMaxTaps] = { 0, 0, 0, 0 };
            float w[kResizeMaxTaps] = { 0, 0, 0, 0 };
            resizeTaps(p, p.axis[1], y0, idx, w);
            const int64_t lo = idx[0];
            resizeTaps(p, p.axis[1], std::min(oh, y0 + kSepRows) - 1, idx, w);
            maxRows = std::max(maxRows, int(idx[k - 1] - lo + 1));
        }
        // One row of slack: the device computes the taps again, and nvcc may contract their double arithmetic
        // (multiply-adds) where the host rounds twice, which could move a tile's last tap by one row.
        const size_t bytes = size_t((oh + ow) * k * 8) + size_t(maxRows + 1) * kSepThreads * per * sizeof(float);
        return bytes <= kMaxSeparableBytes ? bytes : 0;
    }

    template <int K, int PER>
    void launchSeparable(const ResizePlan& p, long long planes, size_t bytes, const float* x, float* y, cudaStream_t st)
    {
        const long long cols = kSepThreads * PER;
        const long long tiles
            = planes * ((p.axis[1].out + kSepRows - 1) / kSepRows) * ((p.axis[2].out + cols - 1) / cols);
        int device = 0, sms = 0;
        CONVSCOPE_CUDA_CHECK(cudaGetDevice(&device));
        CONVSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        // Four blocks an SM, each looping over tiles, measured best (8 and 16 an SM were 5–10% slower).
        const unsigned blocks = unsigned(std::clamp<long long>(tiles, 1, 4LL * sms));
        resizeSeparableKernel<K, PER><<<blocks, kSepThreads, bytes, st>>>(p, tiles, x, y);
    }

    // Runs the separable kernel when it applies; false otherwise.
    template <int K> bool trySeparable(const ResizePlan& p, long long planes, const float* x, float* y, cudaStream_t st)
    {
        const int per = p.axis[2].out % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0 ? 2 : 1;
        const size_t bytes = separableBytes(p, K, per);
        if (bytes == 0)
            return false;
        if (per == 2)
            launchSeparable<K, 2>(p, planes, bytes, x, y, st);
        else
            launchSeparable<K, 1>(p, planes, bytes, x, y, st);
        return true;
    }

    // The 2-D NCHW case (an image's D of one element): both tap tables, rows and columns, in shared memory, filled
    // once by each of a grid of persistent blocks; then every thread writes kOut neighbouring outputs of a row from
    // the two tables, independent of the others (the warp-per-row kernel above kept one load in flight per thread and
    // computed each row's taps in its lanes: a quarter of the copy bandwidth for a 2× upsampling). The row weight is
    // the D tap's weight (1) times the H tap's, as in RowTaps, and the sums run in the same order: the same result.
    // The tables are tap-major (tap k of column ox at k · ow + ox), the columns first: a thread reads its kOut columns'
    // taps as one 16-byte load per tap, which the warp's lanes take without bank conflicts.
    constexpr int kOut = 4;
    template <int K, bool VEC>
    __global__ void __launch_bounds__(256) resizePlanesKernel(ResizePlan p, unsigned items, FastDivmod byGroups,
        FastDivmod byRows, const float* __restrict__ x, float* __restrict__ y)
    {
        extern __shared__ __align__(16) unsigned char smem[];
        const int oh = int(p.axis[1].out), ow = int(p.axis[2].out);
        const long long ih = p.axis[1].in, iw = p.axis[2].in;
        const TapTables<K> taps = fillTapTables<K>(p, smem);
        const int* colIdx = taps.colIdx;
        const float* colW = taps.colW;
        const int* rowIdx = taps.rowIdx;
        const float* rowW = taps.rowW;
        __syncthreads();
        constexpr int per = VEC ? kOut : 1;
        // 32-bit indices split by FastDivmod: with 64-bit divisions of the flat index the kernel was instruction-bound.
        for (unsigned q = blockIdx.x * blockDim.x + threadIdx.x; q < items; q += gridDim.x * blockDim.x) {
            unsigned line, group, plane, oy; // line = plane · oh + oy
            byGroups.divmod(q, line, group);
            byRows.divmod(line, plane, oy);
            const int ox0 = int(group) * per;
            const float* src = x + static_cast<long long>(plane) * ih * iw;
            int ci[K][per];
            float cw[K][per];
#pragma unroll
            for (int c = 0; c < K; ++c) {
                if constexpr (VEC) {
                    const int4 i4 = *reinterpret_cast<const int4*>(colIdx + c * ow + ox0);
                    const float4 w4 = *reinterpret_cast<const float4*>(colW + c * ow + ox0);
                    ci[c][0] = i4.x, ci[c][1] = i4.y, ci[c][2] = i4.z, ci[c][3] = i4.w;
                    cw[c][0] = w4.x, cw[c][1] = w4.y, cw[c][2] = w4.z, cw[c][3] = w4.w;
                } else {
                    ci[c][0] = colIdx[c * ow + ox0];
                    cw[c][0] = colW[c * ow + ox0];
                }
            }
            float out[per];
#pragma unroll
            for (int u = 0; u < per; ++u)
                out[u] = 0.0f;
#pragma unroll
            for (int a = 0; a < K; ++a) {
                const float* in = src + static_cast<long long>(rowIdx[a * oh + oy]) * iw;
                const float rw = rowW[a * oh + oy];
#pragma unroll
                for (int u = 0; u < per; ++u) {
                    float part = 0.0f;
#pragma unroll
                    for (int c = 0; c < K; ++c)
                        part += cw[c][u] * in[ci[c][u]];
                    out[u] += rw * part;
                }
            }
            float* dst = y + static_cast<long long>(line) * ow + ox0;
            if constexpr (VEC)
                *reinterpret_cast<float4*>(dst) = make_float4(out[0], out[1], out[2], out[3]);
            else
                dst[0] = out[0];
        }
    }

    template <int K>
    void launchPlanes(const ResizePlan& p, long long planes, bool vec, const float* x, float* y, cudaStream_t st)
    {
        const size_t bytes = size_t((p.axis[1].out + p.axis[2].out) * K * 8);
        const long long items = planes * p.axis[1].out * p.axis[2].out / (vec ? kOut : 1);
        const unsigned blocks = unsigned(std::clamp<long long>((items + 255) / 256, 1, 2048));
        const FastDivmod groups(unsigned(p.axis[2].out / (vec ? kOut : 1))), rows(unsigned(p.axis[1].out));
        if (vec)
            resizePlanesKernel<K, true><<<blocks, 256, bytes, st>>>(p, unsigned(items), groups, rows, x, y);
        else
            resizePlanesKernel<K, false><<<blocks, 256, bytes, st>>>(p, unsigned(items), groups, rows, x, y);
    }

    // The planes kernel's tables fit in shared memory (with room for several blocks an SM).
    constexpr long long kMaxPlaneTables = 32 * 1024;
    bool planesKernelFits(const ResizePlan& p, int k, long long planes)
    {
        const bool volume = p.axis[0].in > 1 || p.axis[0].out > 1;
        return !volume && (p.axis[1].out + p.axis[2].out) * k * 8 <= kMaxPlaneTables
            && planes * p.axis[1].out * p.axis[2].out < (1LL << 31) && p.axis[1].in * p.axis[2].in < (1LL << 31);
    }

    constexpr int kThreads = 256;
    // Enough blocks to fill the device several times over; each strides over the rows by warp.
    unsigned blocksFor(long long rows)
    {
        return unsigned(std::clamp<long long>((rows + kThreads / 32 - 1) / (kThreads / 32), 1, 4096));
    }

    template <int K, bool V, bool LAST, typename T>
    void launch(const ResizePlan& p, long long rows, long long channels, const T* x, T* y, cudaStream_t st)
    {
        const long long bytes = p.axis[2].out * K * static_cast<long long>(sizeof(int) + sizeof(float));
        const bool table = bytes <= kMaxTableBytes;
        resizeKernel<K, V, LAST, T>
            <<<blocksFor(rows), kThreads, table ? size_t(bytes) : 0, st>>>(p, rows, channels, table, x, y);
    }

    // Calls f.template operator()<K, VOLUME>() for the plan's tap count and whether D is resized.
    template <typename F> void withTaps(const ResizePlan& p, F&& f)
    {
        const bool volume = p.axis[0].in > 1 || p.axis[0].out > 1;
        const int k = p.mode == 0 ? 1 : p.mode == 1 ? 2 : 4;
        const auto pick = [&]<bool V>() {
            if (k == 1)
                f.template operator()<1, V>();
            else if (k == 2)
                f.template operator()<2, V>();
            else
                f.template operator()<4, V>();
        };
        if (volume)
            pick.template operator()<true>();
        else
            pick.template operator()<false>();
    }
} // namespace

void resizeNchw(const ResizePlan& plan, long long planes, const float* x, float* y, cudaStream_t st)
{
    const long long rows = planes * plan.axis[0].out * plan.axis[1].out;
    if (rows <= 0 || plan.axis[2].out <= 0)
        return;
    const int k = plan.mode == 0 ? 1 : plan.mode == 1 ? 2 : 4;
    const bool separable = k == 1 ? trySeparable<1>(plan, planes, x, y, st)
        : k == 2                  ? trySeparable<2>(plan, planes, x, y, st)
                                  : trySeparable<4>(plan, planes, x, y, st);
    if (!separable && planesKernelFits(plan, k, planes)) {
        const bool vec = plan.axis[2].out % kOut == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
        if (k == 1)
            launchPlanes<1>(plan, planes, vec, x, y, st);
        else if (k == 2)
            launchPlanes<2>(plan, planes, vec, x, y, st);
        else
            launchPlanes<4>(plan, planes, vec, x, y, st);
    } else if (!separable) {
        withTaps(plan, [&]<int K, bool V>() { launch<K, V, false>(plan, rows, 1, x, y, st); });
    }
    CONVSCOPE_CUDA_CHECK_LAUNCH("resize");
}

void resizeChannelsLast(
    const ResizePlan& plan, long long n, long long channels, DType type, const void* x, void* y, cudaStream_t st)
{
    const long long rows = n * plan.axis[0].out * plan.axis[1].out;
    if (rows <= 0 || plan.axis[2].out <= 0 || channels <= 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        withTaps(plan, [&]<int K, bool V>() {
            launch<K, V, true>(plan, rows, channels, static_cast<const T*>(x), static_cast<T*>(y), st);
        });
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("resize");
}

} // namespace convscope::cuda
