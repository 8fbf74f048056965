// The TMA kernel's host launcher: the tensor maps of the input and the packed weights (cuTensorMapEncodeTiled,
// looked up through the runtime), the kernel's parameters, and one instantiation per tma… tile of the plan's table.
// sm_90a only (kernels/CMakeLists.txt). The kernel is conv2d_tensor_core_tma_mainloop.cuh (which describes it), its
// epilogues conv2d_tensor_core_tma_epilogue.cuh.
#include "kernels/cuda/conv2d_tensor_core_tma_mainloop.cuh"

#include <cudaTypedefs.h>

#include <bit>
#include <utility>

namespace convscope::cuda::tc {

namespace {

    // cuTensorMapEncodeTiled is a driver entry point: looked up at run time through the runtime, so the module links
    // no libcuda of its own (and loads where there is no driver, e.g. CI).
    PFN_cuTensorMapEncodeTiled_v12000 encodeTiled()
    {
        static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
            void* p = nullptr;
            cudaDriverEntryPointQueryResult found {};
            CONVSCOPE_CUDA_CHECK(
                cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
            if (found != cudaDriverEntryPointSuccess || !p)
                throw Error("cuda.tensor_core: the CUDA driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12+)");
            return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
        }();
        return fn;
    }

    template <typename Element> CUtensorMapDataType tmaType()
    {
        if constexpr (std::is_same_v<Element, float>)
            return CU_TENSOR_MAP_DATA_TYPE_TFLOAT32; // the copy rounds to TF32 (to nearest, ties to even: roundTf32)
        else if constexpr (std::is_same_v<Element, __half>)
            return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
        else
            return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    }

    // `type`: the copy's element type, the operands' by default (the skip's is FP32 as it is: no TF32 rounding).
    template <typename Element>
    CUtensorMap encode(const char* what, const void* base, int rank, const cuuint64_t* dims, const cuuint64_t* strides,
        const cuuint32_t* box, const cuuint32_t* steps, int rowPieces, CUtensorMapDataType type = tmaType<Element>())
    {
        CUtensorMap map;
        const CUresult rc
            = encodeTiled()(&map, type, cuuint32_t(rank), const_cast<void*>(base), dims, strides, box, steps,
                CU_TENSOR_MAP_INTERLEAVE_NONE, rowPieces == 8 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (rc != CUDA_SUCCESS)
            throw Error(std::string("cuda.tensor_core: cuTensorMapEncodeTiled refused the ") + what + " (CUresult "
                + std::to_string(int(rc)) + ")");
        return map;
    }

} // namespace

template <typename Element, int BlockN, int Stages, int RowPieces, bool PingPong, int WindowSlots, bool Transposed>
void launchTma(const ConvGeometry& g, const Plan& p, TmaParams tp, const Element* x, const Element* wp,
    const float* bias, Element* y, float* partial, cudaStream_t st)
{
    constexpr size_t smemBytes = tmaSmemBytes(BlockN, RowPieces, Stages, WindowSlots, Transposed) + 1024;
    auto* kernel = tmaConvKernel<Element, BlockN, Stages, RowPieces, PingPong, WindowSlots, Transposed>;
    if (!y) { // prepare: opt in to the shared memory (launch() in conv2d_tensor_core_kernel.cuh says why)
        CONVSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smemBytes)));
        return;
    }
    constexpr cuuint64_t e = sizeof(Element);
    constexpr cuuint32_t rowElems = 16 * RowPieces / sizeof(Element);
    // The input, NHWC, innermost first; its box: one k-tile row of channels × the block's pixels, stride-spaced.
    const cuuint64_t xDims[4] = { cuuint64_t(g.c), cuuint64_t(g.w), cuuint64_t(g.h), cuuint64_t(g.n) };
    const cuuint64_t xStrides[3] = { g.c * e, cuuint64_t(g.w) * g.c * e, cuuint64_t(g.h) * g.w * g.c * e };
    // Window tiles: one row of the block's pixels and the taps' reach (stride 1), read by every tap of a kernel row.
    const cuuint32_t xBox[4] = { rowElems, cuuint32_t(WindowSlots ? tmaWindowRows(g) : p.tileW * g.strideW),
        cuuint32_t(p.tileH * g.strideH), 1 };
    const cuuint32_t xSteps[4] = { 1, cuuint32_t(g.strideW), cuuint32_t(g.strideH), 1 };
    const CUtensorMap xMap = encode<Element>("input's box", x, 4, xDims, xStrides, xBox, xSteps, RowPieces);
    // The transposed tile's slot is two boxes: this one (the first 128 pixels), then xMap's.
    const cuuint32_t xHeadBox[4] = { rowElems, 128, 1, 1 };
    const CUtensorMap xHeadMap
        = Transposed ? encode<Element>("input's first box", x, 4, xDims, xStrides, xHeadBox, xSteps, RowPieces) : xMap;
    // The packed weights [K][ldw]; the box: one k-tile row × BlockN output channels.
    const cuuint64_t wDims[2] = { cuuint64_t(p.ldw), cuuint64_t(g.k) };
    const cuuint64_t wStrides[1] = { cuuint64_t(p.ldw) * e };
    const cuuint32_t wBox[2] = { rowElems, BlockN }, wSteps[2] = { 1, 1 };
    const CUtensorMap wMap = encode<Element>("weights' box", wp, 2, wDims, wStrides, wBox, wSteps, RowPieces);
    // A fused residual add's skip through the ring (the mainloop says how; tmaSkipInRing where): the skip NHWC like y,
    // its box 128 bytes of channels × the block's pixels.
    const bool skipRing
        = g.residual && tmaSkipInRing(g, p, int(e)) && (reinterpret_cast<uintptr_t>(g.residual) & 15) == 0;
    tp.skipRing = skipRing;
    const cuuint64_t sDims[4] = { cuuint64_t(g.k), cuuint64_t(g.q), cuuint64_t(g.p), cuuint64_t(g.n) };
    const cuuint64_t sStrides[3] = { g.k * e, cuuint64_t(g.q) * g.k * e, cuuint64_t(g.p) * g.q * g.k * e };
    const cuuint32_t sBox[4] = { rowElems, cuuint32_t(p.tileW), cuuint32_t(p.tileH), 1 }, sSteps[4] = { 1, 1, 1, 1 };
    const CUtensorMap skipMap = skipRing
        ? encode<Element>("skip's box", g.residual, 4, sDims, sStrides, sBox, sSteps, 8,
            std::is_same_v<Element, float> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : tmaType<Element>())
        : xMap;
    kernel<<<p.ctas, kTmaThreads, smemBytes, st>>>(xMap, xHeadMap, wMap, skipMap, tp, bias, y, partial);
    CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d tensor core (wgmma, TMA)");
}

template <typename Element>
void runTmaTyped(
    const ConvGeometry& g, const Plan& p, const void* xv, const float* bias, void* yv, void* scratch, cudaStream_t st)
{
    const LaunchArgs<Element> a(g, p, xv, yv, scratch);
    const int rowElems = 16 * p.rowPieces / int(sizeof(Element));
    const TmaParams tp { a.prm, std::countr_zero(unsigned(p.tileW)), p.tilesP, p.tilesQ, g.c / rowElems, p.mTiles,
        p.nTiles, p.mTiles * p.nTiles * p.splits, p.probe, p.spin, p.early, 0 /* skipRing: launchTma's */,
        (tmaWindowRows(g) + (kTiles[p.tile].transposed ? 128 : 0)) * 128 };
    // One instantiation a tma… tile of kTiles (block width, stages, row and windows from the table): the one p.tile
    // names, found among the last kTileCount − kTmaTile64 entries (the tma… tiles).
    auto run = [&](auto tile) {
        constexpr TileShape t = kTiles[decltype(tile)::value];
        launchTma<Element, t.bn(), t.stages, t.rowPieces, t.pingpong, t.windows, t.transposed>(
            g, p, tp, a.x, a.wp, bias, a.y, a.partial, st);
    };
    static_assert(kTiles[kTmaTile64].usesTma() && !kTiles[kTmaTile64 - 1].usesTma() && kTiles[kTileCount - 1].usesTma(),
        "the tma… tiles are the last entries of kTiles");
    const bool ran = [&]<int... I>(std::integer_sequence<int, I...>)
    {
        return ((p.tile == kTmaTile64 + I ? (run(std::integral_constant<int, kTmaTile64 + I>()), true) : false) || ...);
    }
    (std::make_integer_sequence<int, kTileCount - kTmaTile64>());
    if (!ran)
        throw Error("internal error: cuda.tensor_core: tile " + std::to_string(p.tile) + " is not a TMA tile");
    reduceSplits(g, p, a, bias, st, "conv2d tensor core (wgmma, TMA)");
}

template void runTmaTyped<float>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);
template void runTmaTyped<__half>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);
template void runTmaTyped<__nv_bfloat16>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);

} // namespace convscope::cuda::tc