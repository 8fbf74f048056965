// cuda.tensor_core's stem kernel (conv2d_tensor_core_stem.cu): its shape, when it takes a layer, and its index
// arithmetic, as host-and-device functions so that the CPU tests check them against the im2col they stand for
// (tests/kernels_common/tensor_core_stem_test.cpp).
//
// Why a kernel of its own. A stem has few input channels (C = 3 for an RGB image): the general kernels copy the
// activations in 16-byte pieces of one pixel's channels, so a 3-channel pixel fills 3 of a piece's 8 halves and is
// read element by element, and the reduction R·S·Cp is padded to 8 halves a tap (7×7: 392 for 147 taps). Here a block
// owns 128 output pixels (tp rows × tq columns of one image: the shape whose windows cost least, stemShapeOf) and
// 64 output channels:
//   - the input window those pixels read — fr × fc pixels, each padded to cpad = 4, 8 or 16 halves (zero past C) — is
//     copied into shared memory once per block tile, zero off the image (the padding), so the reduction needs no
//     bounds test;
//   - the reduction runs over (r, s, c) with c fastest in steps of cpad, rounded up to 16 (7×7×3: 196 → 208, 13
//     m16n8k16 steps), so an A fragment's register — two consecutive reduction positions, the same tap, channels c and
//     c + 1 — is one 32-bit word of the window at pixelWord(m) + tapWord(k/2): a table of tapWord in shared memory
//     (kpad/2 entries) and four pixel words a thread replace the im2col;
//   - the block's 64 rows of packed weights ([K][kpad], the reduction zero-padded) stay in shared memory, each row
//     8 halves longer than kpad (an odd number of 16-byte units), so ldmatrix reads them without bank conflicts;
//   - 4 warps of 32 pixels × 64 channels, mma.sync m16n8k16 (FP32 sums); the block is persistent over its pixel tiles,
//     so the weights are read once a block;
//   - the epilogue (bias, a fused residual add and activation, the storage type) stages the tile in shared memory and
//     writes it in 16-byte pieces, 128 bytes a pixel: whole lines, where the fragments' pairs would write 4 bytes at
//     8 places.
#pragma once

#include "kernels/common/host_device.h"
#include "kernels/cuda/conv2d.cuh"

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace convscope::cuda::tc {

constexpr int kStemPixels = 128; // a block's output pixels
constexpr int kStemChannels = 64; // a block's output channels
constexpr int kStemThreads = 128; // 4 warps of 32 pixels × 64 channels
constexpr int kStemStageStride = kStemChannels + 8; // halves a staged output pixel: 144 bytes, conflict-free pairs
constexpr int kStemMaxKpad = 512; // the reduction's longest packed row (11×11×4 = 484 fits)
constexpr size_t kStemMaxShared = 160 * 1024;

struct StemShape {
    int cpad, cshift; // halves a window pixel (4, 8 or 16) and its log2
    int kpad; // R·S·cpad rounded up to 16: a packed weight row
    int wStride; // kpad + 8: a weight row in shared memory, in halves
    int tq, tp, tqShift; // a block's pixels: tp rows × tq columns (tq a power of two, tp·tq = 128)
    int fr, fc; // the window: rows and columns of input pixels
    int rowHalves; // a window row in shared memory: fc·cpad, padded so a k-step that crosses kernel rows keeps the
                   // A loads on distinct banks (stemWindowPadding)
    int tilesP, tilesQ; // blocks along P and Q of one image
    size_t weightBytes, windowBytes, tableBytes, stageBytes, sharedBytes; // + the block's 64 biases (FP32)
};

CONVSCOPE_HD size_t stemAlign16(size_t bytes) { return (bytes + 15) / 16 * 16; }

CONVSCOPE_HD int stemTapWord(const ConvGeometry& g, const StemShape& s, int kp);
CONVSCOPE_HD int stemPixelWord(const ConvGeometry& g, const StemShape& s, int m);
int stemBankWays(const ConvGeometry& g, const StemShape& s, int warp, int step);
int stemWindowPadding(const ConvGeometry& g, StemShape s);

inline StemShape stemShapeOf(const ConvGeometry& g)
{
    StemShape s {};
    s.cpad = g.c <= 4 ? 4 : g.c <= 8 ? 8 : 16;
    s.cshift = s.cpad == 4 ? 2 : s.cpad == 8 ? 3 : 4;
    s.kpad = (g.r * g.s * s.cpad + 15) / 16 * 16;
    s.wStride = s.kpad + 8;
    // The block's shape: of 8×16, 4×32, 2×64 and 1×128 pixels, the one whose tiles of an image cost the least, a
    // tile costing its window's pixels (each loaded and stored) plus its 128 outputs (those off the map included).
    // Squarer tiles share more of their window between rows: ResNet's 7×7/2 stem at 112² reads 21×37 pixels for 8×16
    // outputs, against 7×261 for 1×128.
    int64_t best = -1;
    for (int shift = 4; shift <= 7; ++shift) {
        const int tq = 1 << shift, tp = kStemPixels / tq;
        const int fr = (tp - 1) * g.strideH + (g.r - 1) * g.dilH + 1;
        const int fc = (tq - 1) * g.strideW + (g.s - 1) * g.dilW + 1;
        const int64_t cost = int64_t((g.p + tp - 1) / tp) * ((g.q + tq - 1) / tq) * (int64_t(fr) * fc + kStemPixels);
        if (best < 0 || cost <= best)
            best = cost, s.tq = tq, s.tqShift = shift, s.tp = tp, s.fr = fr, s.fc = fc;
    }
    s.rowHalves = s.fc * s.cpad;
    s.rowHalves += 2 * stemWindowPadding(g, s);
    s.tilesP = (g.p + s.tp - 1) / s.tp;
    s.tilesQ = (g.q + s.tq - 1) / s.tq;
    s.weightBytes = stemAlign16(size_t(kStemChannels) * s.wStride * 2);
    s.windowBytes = stemAlign16(size_t(s.fr) * s.rowHalves * 2);
    s.tableBytes = stemAlign16(size_t(s.kpad / 2) * sizeof(int));
    s.stageBytes = size_t(kStemPixels) * kStemStageStride * 2;
    s.sharedBytes = s.weightBytes + s.windowBytes + s.tableBytes + s.stageBytes + kStemChannels * sizeof(float);
    return s;
}

// Why the stem kernel does not take g with activations of `elementBytes` (null: it does). fp16 and bf16 only (TF32's
// m16n8k8 would need another fragment layout); C below 16 and not a multiple of the 16-byte piece (those the general
// kernels copy by cp.async); one group.
inline const char* stemRefusal(const ConvGeometry& g, int elementBytes)
{
    if (elementBytes != 2)
        return "the stem kernel is fp16 / bf16 only";
    if (g.groups != 1)
        return "the stem kernel takes one group";
    if (g.c >= 16 || g.c % 8 == 0)
        return "the stem kernel takes C < 16 that is not a multiple of 8 (the others are copied in 16-byte pieces)";
    const StemShape s = stemShapeOf(g);
    if (s.kpad > kStemMaxKpad)
        return "the stem kernel's reduction R·S·Cp is at most 512 halves";
    if (s.sharedBytes > kStemMaxShared)
        return "the stem kernel's input window and weights exceed its shared memory";
    if (int64_t(g.n) * s.tilesP * s.tilesQ > INT32_MAX)
        return "the stem kernel's tiles exceed 2^31";
    return nullptr;
}

// The table entry of reduction positions k = 2·kp and 2·kp + 1 (tap (r, s) = (k / cpad) / S, (k / cpad) % S; channel
// k % cpad, even): the 32-bit word of the window, from a pixel's base word, that holds them. Positions past the last
// tap (the padding of the reduction to 16) are entered as ~word of the last tap's same channels: the kernel reads that
// word, so the warp's loads stay on the banks of the real ones, and multiplies zero instead — not the word times the
// zero weight, which an infinite input would make NaN.
CONVSCOPE_HD int stemTapWord(const ConvGeometry& g, const StemShape& s, int kp)
{
    const int k = 2 * kp, taps = g.r * g.s, c = k & (s.cpad - 1);
    const int tap = k >> s.cshift < taps ? k >> s.cshift : taps - 1;
    const int r = tap / g.s, sx = tap % g.s;
    const int word = (r * g.dilH * s.rowHalves + sx * g.dilW * s.cpad + c) / 2;
    return k >> s.cshift < taps ? word : ~word;
}
// The word a table entry reads, and whether its positions are real taps.
CONVSCOPE_HD int stemEntryWord(int entry) { return entry < 0 ? ~entry : entry; }
CONVSCOPE_HD bool stemEntryReal(int entry) { return entry >= 0; }

// The base word of block pixel m (0 … 127: row m / tq, column m % tq of the block) in the window: where its tap (0, 0)
// channel 0 sits.
CONVSCOPE_HD int stemPixelWord(const ConvGeometry& g, const StemShape& s, int m)
{
    const int pl = m >> s.tqShift, ql = m & (s.tq - 1);
    return (pl * g.strideH * s.rowHalves + ql * g.strideW * s.cpad) / 2;
}

// The most lanes of one bank that read different words, over a warp's eight A loads of one k-step (two m16 tiles,
// rows grp and grp + 8, positions 2·tig and 2·tig + 8): 1 is conflict-free.
inline int stemBankWays(const ConvGeometry& g, const StemShape& s, int warp, int step)
{
    int worst = 1;
    for (int load = 0; load < 8; ++load) {
        int words[32];
        for (int lane = 0; lane < 32; ++lane)
            words[lane] = stemPixelWord(g, s, warp * 32 + (load & 1) * 16 + (lane >> 2) + ((load >> 1) & 1) * 8)
                + stemEntryWord(stemTapWord(g, s, step * 8 + ((load >> 2) & 1) * 4 + (lane & 3)));
        int distinct[32] = {}; // per bank, the different words read from it
        for (int lane = 0; lane < 32; ++lane) {
            bool first = true; // no earlier lane reads this word
            for (int earlier = 0; earlier < lane && first; ++earlier)
                first = words[earlier] != words[lane];
            if (first) {
                const int ways = ++distinct[words[lane] % 32];
                worst = worst > ways ? worst : ways;
            }
        }
    }
    return worst;
}

// The words added to a window row (0 … 31) that leave the fewest bank conflicts over the layer's k-steps. Within a
// kernel row the pixels' words are consecutive (stride 1: 2 apart, the 4 positions of a lane group overlapping the
// next pixel's; stride 2: 4 apart), so only a step that crosses into the next kernel row can conflict, by the row's
// length modulo 32 words: padding picks one that puts the next row's words on the banks the first row leaves free.
// Warp 0 stands for all four: another warp's pixels sit at a constant word offset from warp 0's (a warp never
// straddles a row of the block), which moves every bank alike. The search is remembered per layer shape, since the
// launcher plans every launch (stemShapeOf) and an 11×11 stem's search takes milliseconds.
inline int stemWindowPadding(const ConvGeometry& g, StemShape s)
{
    const std::array<int, 11> key { s.cpad, s.kpad, s.tq, s.fc, g.r, g.s, g.strideH, g.strideW, g.dilH, g.dilW,
        s.rowHalves };
    static std::mutex mutex;
    static std::map<std::array<int, 11>, int> searched;
    {
        const std::lock_guard<std::mutex> lock(mutex);
        if (const auto it = searched.find(key); it != searched.end())
            return it->second;
    }
    const int base = s.rowHalves;
    int best = 0, bestCost = 1 << 30;
    for (int pad = 0; pad < 32 && bestCost > 0; ++pad) {
        s.rowHalves = base + 2 * pad;
        int cost = 0;
        for (int step = 0; step < s.kpad / 16; ++step)
            cost += stemBankWays(g, s, 0, step) - 1;
        if (cost < bestCost)
            best = pad, bestCost = cost;
    }
    const std::lock_guard<std::mutex> lock(mutex);
    searched.emplace(key, best);
    return best;
}

} // namespace convscope::cuda::tc
