// The index math of the cuda training session's backward kernels, as plain inline functions that compile both in
// the kernels (nvcc: __host__ __device__) and in a host test (tests/training/cuda_backward_index_test.cpp), which
// emulates the kernels' loops with them on the CPU and compares against the reference loops — the GPU is not needed
// to find an off-by-one in a tile, a split or a window.
//
//   Weight gradient as an implicit GEMM (conv2d_backward_weights.cu). Per group g of a convolution with input
//   x [N, C, H, W], output gradient dy [N, K, P, Q], weight [K, C/G, R, S]:
//       dW[g·Kg + m, n] = Σ_k A[m, k] · B[k, n],   m < Kg = K/G,  n = (c, r, s) < Cg·R·S,  k = (img, p, q) < N·P·Q
//       A[m, k] = dy[img, g·Kg + m, p, q]
//       B[k, n] = x[img, g·Cg + c, p·sh − padTop + r·dh, q·sw − padLeft + s·dw]   (0 outside the input)
//   The reduction over k is long (N·P·Q: 25 088 for a 56² layer at batch 8), so it is cut into `splits` equal runs
//   of whole BK-deep steps; split z writes its partial dW into workspace slice z and a second kernel sums the
//   slices in order z = 0, 1, … (deterministic: no atomics).
//
//   The pools' backward (pool2d_backward.cu) gathers over the windows that read an element (poolWindowsOver).
//   Pad's backward (pad_backward.cu) gathers: an input element receives the gradient of every output element whose
//   source it is; along each axis those outputs form at most three runs (padPreimage).
#pragma once

#include "kernels/common/fast_divmod.h"
#include "kernels/common/host_device.h"

#include <cstdint>

namespace convscope::cuda::train {

// The weight gradient's GEMM over one convolution (the fields of ConvGeometry it needs, as ints).
struct WgradShape {
    int n, c, h, w; // input
    int k, p, q; // output
    int r, s;
    int strideH, strideW, padTop, padLeft, dilH, dilW;
    int groups;
};

CONVSCOPE_HD long long wgradReduction(const WgradShape& g) { return (long long)g.n * g.p * g.q; } // the GEMM's K
CONVSCOPE_HD int wgradColumns(const WgradShape& g) { return (g.c / g.groups) * g.r * g.s; } // the GEMM's N
CONVSCOPE_HD int wgradRows(const WgradShape& g) { return g.k / g.groups; } // the GEMM's M (per group)
CONVSCOPE_HD long long wgradWeightCount(const WgradShape& g) { return (long long)g.k * wgradColumns(g); }

// The tiled kernel's view of the GEMM (conv2d_backward_weights.cu). A block owns a BM × BN tile of dW (BM, BN ∈
// {64, 128}) and walks its run of the reduction in kWgradDepth-deep steps with kWgradThreads threads. Loads: slot l
// of thread t fetches reduction index k0 + t % 8 — consecutive threads, consecutive q of one output row, so dy's
// loads coalesce — of panel row (A) or column (B) t / 8 + 32·l. Outputs: thread t at (ty, tx) of a 16 × 16 grid owns
// rows wgradFragment(ty, i) and columns wgradFragment(tx, j), runs of four 64 apart, read from shared memory as
// float4. A warp covers 4 × 8 of the grid (CUTLASS's SIMT arrangement): its float4 reads of a step's A row touch 4
// addresses and of B 8 (128 bytes, one shared-memory wavefront each), where 2 × 16 would take two for B.
constexpr int kWgradDepth = 8;
constexpr int kWgradThreads = 256;
// Two pipelines over the same tiles and loads: the register-staged one (two shared stages, the next step's loads in
// registers during a step's products) and the cp.async one (kWgradStages shared stages, three steps' copies in
// flight, no staging registers). Async also offers the narrow 64×128 tile on 128 threads (below); AsyncWide is the
// cp.async pipeline on the register pipeline's four 256-thread tiles (to measure the two changes apart).
enum class WgradPipeline { Registers, Async, AsyncWide };
constexpr int kWgradStages = 4;
// The cp.async ring: step s goes to stage s % kWgradStages. The prologue issues steps 0 … kWgradStages − 2; at the top
// of step s, after the barrier that ends every thread's reads of step s − 1's stage, the kernel issues step
// s + kWgradStages − 1 into that stage, then multiplies out stage s % kWgradStages.
CONVSCOPE_HD int wgradRingNext(int stage) { return stage + 1 == kWgradStages ? 0 : stage + 1; }
// The narrow blocks: a 64×128 tile also runs with 128 threads (cp.async pipeline only), 8×8 outputs a thread as at
// 128×128 — 64 FMAs per four float4 shared reads instead of the 256-thread 64×128's 32 per three — on a thread grid
// of (threads / 16) × 16: the same formulas, t / 64 spanning 2 warps' rows instead of 4. A thread's rows are then
// runs of four 32 apart (wgradFragment's `half`: four times the grid's threads that way), its columns 64 apart.
constexpr int kWgradNarrowThreads = 128;
// The register cap of a tile's kernel (__launch_bounds__'s blocks a multiprocessor): 8×8 outputs a thread (128×128,
// and 64×128 on 128 threads) need 128 registers and run 2 blocks of 256 or 4 of 128 (16 warps); the 256-thread half
// tiles fit 80 and run 3, 64×64 fits 64 and runs 4 — without a cap nvcc gave the half tiles 95 (2 blocks, 16 warps
// to hide latency) and 64×64 79 (3).
constexpr int wgradMinBlocks(int bm, int bn, int threads = kWgradThreads)
{
    return threads == kWgradNarrowThreads ? 4 : bm * bn >= 128 * 128 ? 2 : bm * bn >= 128 * 64 ? 3 : 4;
}
CONVSCOPE_HD int wgradLoadK(int t) { return t % kWgradDepth; }
CONVSCOPE_HD int wgradLoadLine(int t, int l, int threads = kWgradThreads)
{
    return t / kWgradDepth + (threads / kWgradDepth) * l;
}
// The 8 warps as 4 × 2 (rows × columns of the grid), each warp 4 × 8 threads (4 warps as 2 × 2 at 128 threads).
CONVSCOPE_HD int wgradThreadRow(int t) { return (t / 64) * 4 + (t % 32) / 8; }
CONVSCOPE_HD int wgradThreadCol(int t) { return ((t / 32) % 2) * 8 + t % 8; }
CONVSCOPE_HD int wgradFragment(int t16, int i, int half = 64) { return (i / 4) * half + t16 * 4 + i % 4; }

// k = (img, p, q) by two divisions fixed at launch (fast_divmod.h: a multiply-high and a shift each), once per
// thread per step; pq = p·Q + q.
struct WgradDivisors {
    FastDivmod pq, q;
};
inline WgradDivisors wgradDivisors(const WgradShape& g)
{
    return { FastDivmod(uint32_t(g.p) * uint32_t(g.q)), FastDivmod(uint32_t(g.q)) };
}
struct WgradPosition {
    int img, pq, p, q;
};
CONVSCOPE_HD WgradPosition wgradPosition(const WgradDivisors& d, uint32_t k)
{
    uint32_t img, pq, p, q;
    d.pq.divmod(k, img, pq);
    d.q.divmod(pq, p, q);
    return { int(img), int(pq), int(p), int(q) };
}

// Row m of group grp's A panel: dy's channel grp·Kg + m as an offset into one image of dy (−1 past the rows).
CONVSCOPE_HD int wgradRowOffset(const WgradShape& g, int grp, int m)
{
    return m < wgradRows(g) ? (grp * wgradRows(g) + m) * (g.p * g.q) : -1;
}
// Column n = (c, r, s) of group grp's B panel, decomposed once per block before the k loop: the tap's offset into one
// image of x from an output position's window origin (p·sh, q·sw) — the channel's plane plus dh·W + dw — and its row
// and column offsets dh, dw for the bounds test. Past the columns, dh is a row no output position reaches, so the
// bounds test of every load fails.
struct alignas(16) WgradColumnTap {
    int offset, dh, dw, unused;
};
CONVSCOPE_HD WgradColumnTap wgradColumnTap(const WgradShape& g, int grp, int col)
{
    if (col >= wgradColumns(g))
        return { 0, -(1 << 30), 0, 0 };
    const int rs = g.r * g.s, c = col / rs, tap = col - c * rs, r = tap / g.s, s = tap - r * g.s;
    const int cg = g.c / g.groups, dh = r * g.dilH - g.padTop, dw = s * g.dilW - g.padLeft;
    return { (grp * cg + c) * g.h * g.w + dh * g.w + dw, dh, dw, 0 };
}

// One step's loads of thread t: `la` rows of A and `lb` columns of B (wgradLoadLine's) at reduction index k — the
// images of dy and x that k reads, and each load's offset into its image (32-bit: the host refuses larger images), −1
// where the operand is zero (past `end`, in the padding, past the rows and columns). rowOffset and tap are the block's
// tables of wgradRowOffset and wgradColumnTap over its panel rows and columns (in shared memory on the GPU: as
// registers they pushed the 128×128 kernel past 128 a thread, the most for two blocks a multiprocessor). The
// register-staged kernel loads them (wgradFetch); the cp.async one copies them to shared memory, the −1s as
// zero-filled copies. Offsets rather than pointers: a 64-bit address is made once per load, and the zero test is one
// compare of a 32-bit value.
struct WgradImages {
    const float* dy;
    const float* x;
};
template <int la, int lb, int threads = kWgradThreads>
CONVSCOPE_HD WgradImages wgradSources(const WgradShape& g, const WgradDivisors& d, const float* x, const float* dy,
    int t, long long k, long long end, const int* rowOffset, const WgradColumnTap* tap, int (&oa)[la], int (&ob)[lb])
{
    if (k >= end) {
        for (int l = 0; l < la; ++l)
            oa[l] = -1;
        for (int l = 0; l < lb; ++l)
            ob[l] = -1;
        return { dy, x };
    }
    const WgradPosition at = wgradPosition(d, uint32_t(k));
    const int ih0 = at.p * g.strideH, iw0 = at.q * g.strideW, origin = ih0 * g.w + iw0;
    for (int l = 0; l < la; ++l) {
        const int row = rowOffset[wgradLoadLine(t, l, threads)];
        oa[l] = row >= 0 ? row + at.pq : -1;
    }
    for (int l = 0; l < lb; ++l) {
        const WgradColumnTap c = tap[wgradLoadLine(t, l, threads)];
        const int ih = ih0 + c.dh, iw = iw0 + c.dw;
        ob[l] = unsigned(ih) < unsigned(g.h) && unsigned(iw) < unsigned(g.w) ? c.offset + origin : -1;
    }
    return { dy + (long long)at.img * ((long long)g.k * g.p * g.q),
        x + (long long)at.img * ((long long)g.c * g.h * g.w) };
}
template <int la, int lb>
CONVSCOPE_HD void wgradFetch(const WgradShape& g, const WgradDivisors& d, const float* x, const float* dy, int t,
    long long k, long long end, const int* rowOffset, const WgradColumnTap* tap, float (&ra)[la], float (&rb)[lb])
{
    // As wgradSources, with each load's address made and loaded at once (through wgradSources' offset arrays the
    // 128×128 kernel, at its 128-register cap, spilled).
    const float* sa[la];
    const float* sb[lb];
    if (k >= end) {
        for (int l = 0; l < la; ++l)
            sa[l] = nullptr;
        for (int l = 0; l < lb; ++l)
            sb[l] = nullptr;
    } else {
        const WgradPosition at = wgradPosition(d, uint32_t(k));
        const float* dyImg = dy + (long long)at.img * ((long long)g.k * g.p * g.q);
        const float* xImg = x + (long long)at.img * ((long long)g.c * g.h * g.w);
        const int ih0 = at.p * g.strideH, iw0 = at.q * g.strideW, origin = ih0 * g.w + iw0;
        for (int l = 0; l < la; ++l) {
            const int row = rowOffset[wgradLoadLine(t, l)];
            sa[l] = row >= 0 ? dyImg + row + at.pq : nullptr;
        }
        for (int l = 0; l < lb; ++l) {
            const WgradColumnTap c = tap[wgradLoadLine(t, l)];
            const int ih = ih0 + c.dh, iw = iw0 + c.dw;
            sb[l] = unsigned(ih) < unsigned(g.h) && unsigned(iw) < unsigned(g.w) ? xImg + c.offset + origin : nullptr;
        }
    }
    for (int l = 0; l < la; ++l)
        ra[l] = sa[l] ? *sa[l] : 0.0f;
    for (int l = 0; l < lb; ++l)
        rb[l] = sb[l] ? *sb[l] : 0.0f;
}

// Split z's run of the reduction: [begin, end), whole steps of `depth` (the last split may be short or empty).
struct KRange {
    long long begin, end;
};
CONVSCOPE_HD long long wgradSplitLength(const WgradShape& g, int splits, int depth)
{
    const long long steps = (wgradReduction(g) + depth - 1) / depth;
    return ((steps + splits - 1) / splits) * depth;
}
CONVSCOPE_HD KRange wgradSplitRange(const WgradShape& g, int splits, int depth, int z)
{
    const long long len = wgradSplitLength(g, splits, depth), total = wgradReduction(g);
    long long b = len * z, e = b + len;
    b = b < total ? b : total;
    e = e < total ? e : total;
    return { b, e };
}
// The tile a layer's weight gradient runs in, chosen on the host: the one of 128×128, 128×64, 64×128 and 64×64 (and
// with the cp.async pipeline 64×128 on 128 threads) with the least padded work per unit of speed. 8×8 outputs a
// thread do 64 FMAs per four float4 loads from shared memory, 8×4 32 per three, 4×4 16 per two; a 64-channel layer
// (M = 64) would waste half of a 128-row tile. The narrow 64×128 has 128×128's FMAs per shared read but half again
// its global loads per FMA (12 a thread a step for 512 FMAs against 8): 0.9.
struct WgradTiling {
    int bm, bn;
    int threads = kWgradThreads;
};
inline long long wgradTiles(const WgradShape& g, WgradTiling t)
{
    return (long long)((wgradRows(g) + t.bm - 1) / t.bm) * ((wgradColumns(g) + t.bn - 1) / t.bn) * g.groups;
}
inline WgradTiling wgradTiling(const WgradShape& g, WgradPipeline pipeline = WgradPipeline::Async)
{
    const WgradTiling options[]
        = { { 128, 128 }, { 64, 128, kWgradNarrowThreads }, { 128, 64 }, { 64, 128 }, { 64, 64 } };
    const double speed[] = { 1.0, 0.9, 0.8, 0.8, 0.55 };
    WgradTiling best = options[0];
    double bestCost = 0;
    for (int i = 0; i < 5; ++i) {
        if (options[i].threads != kWgradThreads && pipeline != WgradPipeline::Async)
            continue;
        const double cost = double(wgradTiles(g, options[i])) * options[i].bm * options[i].bn / speed[i];
        if (i == 0 || cost < bestCost)
            best = options[i], bestCost = cost;
    }
    return best;
}

// Split-K, chosen to fill the device's resident blocks (`sms` multiprocessors × `blocksPerSm`, the tile's occupancy
// that the launcher asks the runtime for) in whole waves. Every block of a launch walks as much of the reduction, so a
// grid of slots + 1 blocks takes about twice as long as one of slots blocks: the last block runs a second wave alone.
// The old rule (⌈2·SMs / tiles⌉ parts) hit exactly that on the U-Net encoder at batch 16 — 5 tiles × 53 = 265 and
// 9 × 30 = 270 blocks against 264 slots — and those layers ran at ~0.4× cuDNN. The count minimises a cost in steps:
//   waves(s) · (⌈steps / s⌉ + kWgradBlockSteps)  +  the sum pass (s > 1)
// with waves(s) = ⌈tiles · s / slots⌉, kWgradBlockSteps a block's fixed work (its tables, first loads and the store
// of its tile) and the sum pass its launch plus reading s slices and writing one, memory turned into steps at
// kWgradFlopPerByte (the device's FP32 rate reached over its memory bandwidth, about 10 on an H100/H200). Ties go to
// fewer parts. Each part walks at least kWgradMinRun of the reduction (8 steps; the cost's fixed term already keeps
// parts long where blocks are plenty — a floor of 256 left ResNet-18's 1×1 stride-2 projections at batch 32 on 98 and
// 48 blocks for 396 and 264 slots), and at most kWgradMaxSplits parts (a stem's weight gradient is one or two tiles
// over N·P·Q = 401 408 for ResNet's 112² at batch 32).
constexpr long long kWgradMinRun = 64;
constexpr long long kWgradMaxSplits = 256;
constexpr long long kWgradBlockSteps = 8;
constexpr double kWgradFlopPerByte = 10.0;
inline double wgradSplitCost(const WgradShape& g, WgradTiling t, long long slots, long long splits)
{
    const long long steps = (wgradReduction(g) + kWgradDepth - 1) / kWgradDepth;
    const long long waves = (wgradTiles(g, t) * splits + slots - 1) / slots;
    double cost = double(waves) * double((steps + splits - 1) / splits + kWgradBlockSteps);
    if (splits > 1) {
        const double stepFlop = double(slots) * 2.0 * t.bm * t.bn * kWgradDepth; // one step of a full wave
        const double sumBytes = double(splits + 1) * double(wgradWeightCount(g)) * 4.0;
        cost += 2.0 + sumBytes * kWgradFlopPerByte / stepFlop;
    }
    return cost;
}
inline int wgradSplits(const WgradShape& g, WgradTiling t, int sms, int blocksPerSm)
{
    const long long slots = (long long)(sms > 1 ? sms : 1) * (blocksPerSm > 1 ? blocksPerSm : 1);
    long long most = wgradReduction(g) / kWgradMinRun;
    const long long caps[] = { kWgradMaxSplits, 65535 / (g.groups > 1 ? g.groups : 1) };
    for (long long cap : caps)
        most = most < cap ? most : cap;
    long long best = 1;
    double bestCost = wgradSplitCost(g, t, slots, 1);
    for (long long s = 2; s <= most; ++s)
        if (const double cost = wgradSplitCost(g, t, slots, s); cost < bestCost)
            best = s, bestCost = cost;
    return int(best);
}

// Where dW[g·Kg + m, n] lives: in the weight gradient [K, Cg·R·S] and, split z's partial, in the workspace.
CONVSCOPE_HD long long wgradIndex(const WgradShape& g, int grp, int m, int col)
{
    return ((long long)grp * wgradRows(g) + m) * wgradColumns(g) + col;
}

// Along one axis of a window pool (or any window of `taps` taps `dil` apart, `stride` apart, `pad` before): the
// output index whose window reads input index i at tap `tap`; −1 when none.
CONVSCOPE_HD int poolWindowOf(int i, int tap, int pad, int dil, int stride, int outSize)
{
    const int t = i + pad - tap * dil;
    if (t < 0 || t % stride != 0 || t / stride >= outSize)
        return -1;
    return t / stride;
}

// Along one axis, every window over input index i at once: the output indices o in [first, last] with
// i + pad − o·stride a multiple of `dil` (poolWindowCovers) are exactly the o that poolWindowOf returns for some tap;
// first > last when there are none. Two divisions for the whole axis, where asking poolWindowOf tap by tap costs two a
// tap: the gathers' loops over ResNet's 3×3/2 pool were bound by those divisions (0.53 ms at batch 32 on 112², H200).
// Descending o is ascending tap order.
struct PoolWindowRange {
    int first, last;
};
CONVSCOPE_HD PoolWindowRange poolWindowsOver(int i, int taps, int pad, int dil, int stride, int outSize)
{
    const int farthest = i + pad - (taps - 1) * dil; // the tap offset of the last tap
    const int first = farthest <= 0 ? 0 : (farthest + stride - 1) / stride;
    const int last = i + pad < 0 ? -1 : (i + pad) / stride;
    return { first, last < outSize - 1 ? last : outSize - 1 };
}
CONVSCOPE_HD bool poolWindowCovers(int i, int o, int pad, int dil, int stride)
{
    return dil == 1 || (i + pad - o * stride) % dil == 0;
}

// Along one axis of pad: the output indices o in [0, outSize) whose source (merge.cu's sourceIndex: o − before,
// clamped for replicate, mirrored for reflect, none for constant outside) is input index i. At most three runs
// [lo[t], hi[t]); returns how many.
enum class PadAxisMode { Constant = 0, Reflect = 1, Replicate = 2 };
CONVSCOPE_HD int padPreimage(int i, int before, int size, int outSize, PadAxisMode mode, int* lo, int* hi)
{
    int count = 0;
    const auto add = [&](int a, int b) {
        a = a < 0 ? 0 : a;
        b = b > outSize ? outSize : b;
        if (a < b) {
            lo[count] = a;
            hi[count] = b;
            ++count;
        }
    };
    if (mode == PadAxisMode::Replicate) {
        // o − before clamped to [0, size): i = 0 takes every o ≤ before, i = size − 1 every o ≥ before + size − 1.
        const int a = i == 0 ? 0 : i + before;
        const int b = i == size - 1 ? outSize : i + before + 1;
        add(a, b);
        return count;
    }
    add(i + before, i + before + 1);
    if (mode == PadAxisMode::Reflect) {
        if (i > 0)
            add(before - i, before - i + 1); // o − before = −i mirrors to i
        if (i < size - 1)
            add(before + 2 * (size - 1) - i, before + 2 * (size - 1) - i + 1); // 2(size − 1) − (o − before) = i
    }
    return count;
}

} // namespace convscope::cuda::train
