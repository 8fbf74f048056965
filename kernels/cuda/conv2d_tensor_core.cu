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
//   - a block computes a BlockM×BlockN tile of Y with warps of 64 pixels × 32 or 64 channels (4×4 or 4×8 mma.sync tiles
//   of
//     m16n8; 64 or 128 FP32 accumulators a thread): 256×64 (8 warps; 128×64 of 4 on stems) where K ≤ 64, so narrow
//     layers waste no half tile; 128×128 of 8 warps (64×32) on large grids, where twice the warps hide the latency;
//     128×128 of 4 warps (64×64) where the grid gives each multiprocessor fewer than two blocks (measured:
//     PERFORMANCE.md). FP16/BF16 use m16n8k16, TF32 m16n8k8: both take 32 bytes of reduction per step, so the
//     shared-memory layout, the copies and the ldmatrix addressing are the same for all three types, counted in 16-byte
//     pieces;
//   - a k-tile row is 128 bytes of reduction (64 halves or 32 floats), 3 stages deep, or 64 bytes, 4 stages deep
//     (K ≤ 64, stems, --option tc_kbytes; the same shared memory a block): the tiles travel global → shared by
//     cp.async.cg (16 bytes, L2 only), so two or three tiles are in flight while one is multiplied, and the longer row
//     halves the barriers and copy set-ups per mma.sync. A piece off the input, past the last channel or past the last
//     tap copies 0 bytes and is zero-filled;
//   - a row's pieces are stored XOR-swizzled (piece ^ (row mod 8) for 8 pieces, piece ^ (row/2 mod 4) for 4), so
//     both the cp.async writes and the ldmatrix reads (8 rows × 16 bytes at one logical piece) touch 8 different
//     bank groups: no conflicts;
//   - fragments come from ldmatrix.x4 (four 8×8 matrices of 16-bit elements, i.e. 8 rows × 16 bytes: for TF32 the
//     same instruction hands each thread the 32-bit elements the m16n8k8 fragment wants);
//   - TF32: the weights are rounded to TF32 when packed, the activations by roundTf32 on each A fragment
//     (to nearest, ties to even: what the TMA copy does), so the products are exact and only the FP32 accumulation
//     order differs from a reference on the same rounded operands;
//   - the epilogue adds the FP32 bias, applies a fused activation (compute/fusion.h) and rounds to the storage type.
// A C that is not a multiple of the 16-byte piece (a 3-channel stem) is read element by element into the piece
// (zero past C) instead of by cp.async: 64-byte rows and the 4-warp tiles, a slower copy, only on such layers. In fp16
// and bf16 those of C < 16 take the stem kernel instead (conv2d_tensor_core_stem.h: the block's input window in shared
// memory, no im2col); the element-by-element copy is left to tf32 and to tc_kernel=mma.
// Split-K: when the tiles would not fill the device (the 14×14 layers of VGG-16 make 52 tiles on 132
// multiprocessors), the reduction is split over blockIdx.z; each part writes FP32 partial sums to the scratch and a
// second kernel adds them with the bias and activation.
//
// On Hopper (compute capability 9.0, a build whose architectures include 90) the same GEMM runs on warpgroup MMA
// instead: conv2d_tensor_core_wgmma.cu (the why and the pipeline are there), sm_90a machine code in a translation unit
// of its own. Which kernel and tile a layer gets is planOf's (conv2d_tensor_core_plan.h: defaultWgmmaTile, measured
// in docs/PERFORMANCE.md); --option tc_kernel=tma|wgmma|mma and tc_tile force one. Where the layer fits it (C a
// multiple of the 128- or 64-byte k-tile row, a pixel block mostly on the output map), the wgmma kernel's operands are
// copied by TMA instead (conv2d_tensor_core_tma_wgmma.cu).
#include "kernels/cuda/conv2d_tensor_core.cuh"

#include "kernels/cuda/conv2d_tensor_core_kernel.cuh"
#include "kernels/cuda/cuda_options.h"

#include <map>
#include <string>

namespace convscope::cuda {

using namespace tc;

std::string conv2dTensorCoreRefusal(const ConvGeometry& g)
{
    if (g.groups != 1)
        return "grouped convolution (groups = " + std::to_string(g.groups)
            + ") has no Tensor Core kernel: it runs the channels-last direct kernel in the storage format (FP32 sums)";
    return {};
}

namespace {

    int parseKBytes(const std::string& text)
    {
        if (text == "64" || text == "128")
            return std::stoi(text);
        throw InputError("tc_kbytes=" + text + ": the Tensor Core k-tile row is 64 or 128 bytes of reduction");
    }

    int parseTile(const std::string& text)
    {
        std::string names;
        for (int i = 0; i < kTileCount; ++i) {
            if (text == kTiles[i].name)
                return i + 1;
            names += std::string(i ? ", " : "") + kTiles[i].name;
        }
        throw InputError("tc_tile=" + text + ": the Tensor Core tile is one of " + names
            + " (wg…, ws…: the wgmma kernel fed by cp.async; tma…: fed by TMA)");
    }

    // The wgmma kernel runs where it was built (the build targets sm_90: CONVSCOPE_HAVE_WGMMA) and the device is
    // compute capability 9.0 (sm_90a machine code runs on nothing else).
    bool wgmmaRuns(const TensorCoreDevice& d)
    {
#if defined(CONVSCOPE_HAVE_WGMMA)
        return d.computeCapability == 90;
#else
        (void)d;
        return false;
#endif
    }

    Plan planFor(const ConvGeometry& g, DType type, const TensorCoreOptions& o, const TensorCoreDevice& d)
    {
        Plan p = planOf(g, type, d.smCount, o.tile, o.kBytes, KernelChoice(o.kernel), wgmmaRuns(d));
        p.probe = p.tma ? o.probe : 0;
        if (p.probe && kTiles[p.tile].windows)
            p.tile = tmaWindowTwin(p.tile); // the probes are the one-box-a-k-tile kernel's (same block, same grid)
        if (o.splits > 0 && !p.stem)
            splitReduction(p, g, d.smCount, o.splits);
        p.spin = p.tma ? o.spin : 0;
        if (p.tma) {
            const TileShape& s = kTiles[p.tile];
            const bool shared
                = !s.pingpong && tmaMinBlocks(s.bn(), s.rowPieces, s.stages, s.windows, s.transposed) >= 2;
            p.early = o.release ? o.release == 2 : shared;
        }
        return p;
    }

    template <typename Element>
    void runPlan(
        const ConvGeometry& g, const Plan& p, const void* x, const float* bias, void* y, void* scratch, cudaStream_t st)
    {
        if (p.stem)
            return runStemTyped<Element>(g, p, x, bias, y, scratch, st);
#if defined(CONVSCOPE_HAVE_WGMMA)
        if (p.tma)
            return runTmaTyped<Element>(g, p, x, bias, y, scratch, st);
        if (p.wgmma)
            return runWgmmaTyped<Element>(g, p, x, bias, y, scratch, st);
#endif
        runTyped<Element>(g, p, x, bias, y, scratch, st);
    }

} // namespace

TensorCoreOptions conv2dTensorCoreParseOptions(const std::map<std::string, std::string>& extra)
{
    TensorCoreOptions o;
    if (auto it = extra.find("tc_tile"); it != extra.end())
        o.tile = parseTile(it->second);
    if (auto it = extra.find("tc_kbytes"); it != extra.end())
        o.kBytes = parseKBytes(it->second);
    if (auto it = extra.find("tc_kernel"); it != extra.end()) {
        if (it->second != "tma" && it->second != "wgmma" && it->second != "mma" && it->second != "stem")
            throw InputError("tc_kernel=" + it->second
                + ": the Tensor Core kernel is tma (wgmma fed by TMA, sm_90), wgmma (fed by cp.async, sm_90), mma "
                  "(mma.sync) or stem (mma.sync on a window of few channels: C < 16, fp16 / bf16)");
        o.kernel = int(it->second == "mma" ? KernelChoice::Mma
                : it->second == "tma"      ? KernelChoice::Tma
                : it->second == "stem"     ? KernelChoice::Stem
                                           : KernelChoice::Wgmma);
    }
    if (auto it = extra.find("tc_probe"); it != extra.end()) {
        // Bits: 1 the copies only, 2 the products only, 4 no epilogue (nothing stored).
        static const std::map<std::string, int> probes { { "loads", 1 }, { "math", 2 }, { "no_epilogue", 4 },
            { "math_no_epilogue", 6 } };
        const auto probe = probes.find(it->second);
        if (probe == probes.end())
            throw InputError("tc_probe=" + it->second
                + ": the TMA kernel's probe is loads (only the copies), math (only the products), no_epilogue (copies "
                  "and products, nothing stored) or math_no_epilogue");
        o.probe = probe->second;
    }
    if (auto it = extra.find("tc_wait"); it != extra.end()) {
        if (it->second != "suspend" && it->second != "spin")
            throw InputError(
                "tc_wait=" + it->second + ": the TMA kernel waits by suspend (try_wait) or spin (test_wait)");
        o.spin = it->second == "spin";
    }
    if (auto it = extra.find("tc_release"); it != extra.end()) {
        if (it->second != "late" && it->second != "early")
            throw InputError("tc_release=" + it->second
                + ": the TMA kernel gives a stage back late (after the next k-tile's products are issued) or early "
                  "(once its own products retired)");
        o.release = it->second == "early" ? 2 : 1;
    }
    if (auto it = extra.find("tc_split"); it != extra.end()) {
        o.splits = wholeNumberIn(it->second, 1, 16);
        if (o.splits == 0)
            throw InputError("tc_split=" + it->second + ": the Tensor Core reduction splits in 1 to 16 parts");
    }
    if (o.tile > 0 && o.kernel != 0) {
        const TileShape& t = kTiles[o.tile - 1];
        const KernelChoice owner = kernelChoiceOf(t.kernel);
        if (owner != KernelChoice(o.kernel))
            throw InputError(std::string("tc_tile=") + t.name + " is a tile of the "
                + (owner == KernelChoice::Tma          ? "tma"
                        : owner == KernelChoice::Wgmma ? "wgmma"
                                                       : "mma.sync")
                + " kernel, not of tc_kernel=" + extra.at("tc_kernel"));
    }
    return o;
}

size_t conv2dTensorCoreScratchBytes(
    const ConvGeometry& layer, DType type, const TensorCoreOptions& o, const TensorCoreDevice& d)
{
    const ConvGeometry g = pointwiseAsRow(layer);
    const Plan p = planFor(g, type, o, d);
    return p.packedBytes + p.workspaceBytes;
}

void conv2dTensorCorePrepare(const ConvGeometry& layer, DType type, const TensorCoreOptions& o,
    const TensorCoreDevice& d, const void* w, void* scratch, cudaStream_t st)
{
    const ConvGeometry g = pointwiseAsRow(layer);
    const Plan p = planFor(g, type, o, d);
    gpu::withStorageType(type, [&](auto tag) {
        packTyped<decltype(tag)>(g, p, w, scratch, st);
        // No output: only lets the plan's kernel use its shared memory on this device (launch() says why).
        runPlan<decltype(tag)>(g, p, nullptr, nullptr, nullptr, scratch, st);
    });
}

std::string conv2dTensorCoreNote(
    const ConvGeometry& layer, DType type, const TensorCoreOptions& o, const TensorCoreDevice& d, bool fusedResidual)
{
    const ConvGeometry g = pointwiseAsRow(layer);
    const bool asRow = g.w != layer.w;
    const Plan p = planFor(g, type, o, d);
    if (p.stem) {
        const StemShape s = stemShapeOf(g);
        return std::string(dtypeName(type)) + " mma.sync m16n8k16 stem kernel: 128 pixels (" + std::to_string(s.tp)
            + "x" + std::to_string(s.tq) + ") x 64 channels a block of 4 warps, persistent (" + std::to_string(p.ctas)
            + " blocks x " + std::to_string(p.nTiles) + "), the input window of " + std::to_string(s.fr) + "x"
            + std::to_string(s.fc) + " pixels in shared memory at " + std::to_string(s.cpad)
            + " halves a pixel, reduction " + std::to_string(g.r * g.s * g.c) + " padded to " + std::to_string(s.kpad);
    }
    const int tk = p.rowPieces * p.pieceElems;
    const TileShape& t = kTiles[p.tile];
    const std::string format = type == DType::F32 ? "tf32" : std::string(dtypeName(type));
    std::string note;
    if (p.tma)
        note = format + " wgmma m64n" + std::to_string(t.transposed ? 128 : t.bn())
            + (type == DType::F32 ? "k8" : "k16")
            + (t.transposed ? " transposed (the 64 output channels the m64 operand, a warpgroup's 128 pixels the n128)"
                            : "")
            + ", " + std::to_string(t.bm()) + "x" + std::to_string(t.bn()) + " tiles ("
            + (asRow ? "pointwise: " + std::to_string(t.bm()) + " consecutive of the N·H·W pixels"
                     : std::to_string(p.tileH) + "x" + std::to_string(p.tileW) + " pixels")
            + ") of 2 warpgroups, operands copied by TMA (zero-filled borders) into " + std::to_string(16 * t.rowPieces)
            + "-byte-swizzled shared memory, k-tile " + std::to_string(tk) + ", " + std::to_string(t.stages)
            + "-stage mbarrier pipeline"
            + (t.windows ? " of weight tiles beside " + std::to_string(t.windows) + " input windows ("
                        + std::to_string(tmaWindowRows(g)) + " pixels copied once a kernel row, read by each of its "
                        + std::to_string(g.s) + " taps)"
                         : "")
            + (p.early ? ", a stage given back once its products retire" : "")
            + (fusedResidual && tmaSkipInRing(g, p, int(dtypeBytes(type)))
                    ? ", the fused skip's tile copied by TMA into the ring after the operands"
                    : "");
    else if (p.wgmma)
        note = format + " wgmma m64n" + std::to_string(t.bn()) + (type == DType::F32 ? "k8" : "k16") + ", "
            + std::to_string(t.bm()) + "x" + std::to_string(t.bn())
            + (t.kernel == TileKernel::WarpSpecialized
                    ? " tiles, a copying warpgroup feeding 2 wgmma warpgroups (persistent), "
                    : " tiles of 2 warpgroups, ")
            + "operands from " + std::to_string(16 * t.rowPieces) + "-byte-swizzled shared memory, k-tile "
            + std::to_string(tk) + ", " + std::to_string(wgmmaStages(t.bn(), t.rowPieces)) + "-stage cp.async";
    else
        note = format + (type == DType::F32 ? " mma.sync m16n8k8" : " mma.sync m16n8k16") + ", "
            + std::to_string(t.bm()) + "x" + std::to_string(t.bn()) + " tiles of " + std::to_string(t.warpsM * t.warpsN)
            + " warps (64x" + std::to_string(8 * t.n8PerWarp) + " each), k-tile " + std::to_string(tk) + ", "
            + std::to_string(stagesFor(p.rowPieces)) + "-stage cp.async";
    if (p.fallback)
        note += " (" + std::string(p.fallback) + ")";
    if (p.probe)
        note += std::string(p.probe & 1 ? " (probe: copies only"
                        : p.probe & 2   ? " (probe: products only, on no copied data"
                                        : " (probe: copies and products")
            + (p.probe & 4 ? ", no epilogue" : "") + "; the output is not computed)";
    if (g.c % p.pieceElems != 0)
        note += ", C = " + std::to_string(g.c) + " not a multiple of " + std::to_string(p.pieceElems)
            + ": activations copied element by element";
    if (p.splits > 1)
        note += ", split-K " + std::to_string(p.splits) + " (" + std::to_string(p.mTiles * p.nTiles) + " tiles on "
            + std::to_string(d.smCount) + " SMs)";
    return note;
}

void conv2dTensorCore(const ConvGeometry& layer, DType type, const TensorCoreOptions& o, const TensorCoreDevice& d,
    const void* x, const float* bias, void* y, void* scratch, cudaStream_t st)
{
    if (!conv2dTensorCoreRefusal(layer).empty())
        throw Error("cuda.tensor_core: " + conv2dTensorCoreRefusal(layer));
    const ConvGeometry g = pointwiseAsRow(layer);
    const Plan p = planFor(g, type, o, d);
    gpu::withStorageType(type, [&](auto tag) { runPlan<decltype(tag)>(g, p, x, bias, y, scratch, st); });
}

} // namespace convscope::cuda
