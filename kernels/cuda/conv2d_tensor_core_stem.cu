// cuda.tensor_core's stem kernel: a convolution of few input channels (C < 16, not a multiple of 8) on mma.sync in
// fp16 or bf16. The shape, the rule that picks it and the reasons are in conv2d_tensor_core_stem.h; the plan
// (conv2d_tensor_core_plan.h, planOf) sets Plan::stem and packs the weights as [K][kpad] with cp = cpad.
#include "kernels/cuda/conv2d_tensor_core_kernel.cuh"
#include "kernels/cuda/conv2d_tensor_core_stem.h"

namespace convscope::cuda::tc {

namespace {

    // Blocks a multiprocessor holds: 128 threads at ≤ 128 registers (64 accumulators, 16 B-fragment words) leave room
    // for 4, which stemPlanOf's persistent grid counts on where the shared memory allows it (ResNet's 7×7 stem: 28 KB
    // of weights, 6 of window, 18 of stage).
    constexpr int kStemMinBlocks = 4;

    // Cpad: the window's halves a pixel (StemShape::cpad); kFillPixels the pixels a thread loads before it stores them
    // (32 words in flight).
    template <typename Element, int Cpad>
    __global__ void __launch_bounds__(kStemThreads, kStemMinBlocks)
        stemKernel(ConvGeometry g, StemShape s, int tiles, const Element* __restrict__ x,
            const Element* __restrict__ wp, const float* __restrict__ bias, Element* __restrict__ y)
    {
        extern __shared__ __align__(16) unsigned char smem[];
        Element* weights = reinterpret_cast<Element*>(smem); // [64][wStride]
        Element* window = reinterpret_cast<Element*>(smem + s.weightBytes); // [fr][rowHalves]: [fc][cpad], padding
        int* table = reinterpret_cast<int*>(smem + s.weightBytes + s.windowBytes); // [kpad / 2]
        Element* stage = reinterpret_cast<Element*>(smem + s.weightBytes + s.windowBytes + s.tableBytes); // [128][72]
        float* biasOf = reinterpret_cast<float*>(smem + s.weightBytes + s.windowBytes + s.tableBytes + s.stageBytes);
        const uint32_t* windowWords = reinterpret_cast<const uint32_t*>(window);
        uint32_t* windowWordsOut = reinterpret_cast<uint32_t*>(window);
        constexpr int kFillPixels = 64 / Cpad;

        const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, grp = lane >> 2, tig = lane & 3;
        const int k0 = blockIdx.y * kStemChannels;

        // The block's 64 weight rows (zero past K) and the tap table, once.
        const int rowPieces = s.kpad / 8;
        for (int i = tid; i < kStemChannels * rowPieces; i += kStemThreads) {
            const int row = i / rowPieces, piece = i % rowPieces;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (k0 + row < g.k)
                v = __ldg(reinterpret_cast<const uint4*>(wp + size_t(k0 + row) * s.kpad) + piece);
            *reinterpret_cast<uint4*>(weights + row * s.wStride + piece * 8) = v;
        }
        for (int i = tid; i < s.kpad / 2; i += kStemThreads)
            table[i] = stemTapWord(g, s, i);
        if (tid < kStemChannels)
            biasOf[tid] = bias && k0 + tid < g.k ? __ldg(&bias[k0 + tid]) : 0.0f;

        // The window words of the thread's A rows: pixels warp·32 + mi·16 + grp (+ 8).
        int pixelWord[2][2];
#pragma unroll
        for (int mi = 0; mi < 2; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h)
                pixelWord[mi][h] = stemPixelWord(g, s, warp * 32 + mi * 16 + grp + 8 * h);
        // ldmatrix.x4 over 16 weight rows × 16 positions: lanes 0-7 address matrix 0 (rows 0-7, positions 0-7), 8-15
        // matrix 1 (rows 0-7, positions 8-15), 16-23 and 24-31 the same for rows 8-15, so its four registers are the
        // b0, b1 of two n8 tiles.
        const uint32_t bLane = sharedAddress(weights)
            + uint32_t(((((lane >> 4) & 1) * 8 + (lane & 7)) * s.wStride + ((lane >> 3) & 1) * 8) * 2);
        const int steps = s.kpad / 16, perImage = s.tilesP * s.tilesQ;
        const Element zero = gpu::fromFloat<Element>(0.0f);

        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const int n = tile / perImage, rest = tile % perImage;
            const int p0 = rest / s.tilesQ * s.tp, q0 = rest % s.tilesQ * s.tq;
            __syncthreads(); // the previous tile's window and stage are read (and, at first, the weights written)

            // The window: input rows p0·sh − top …, columns q0·sw − left …, zero off the image and past C. A thread
            // fills pixel tid, tid + 128, … of it (a pixel: its C halves loaded, Cpad halves stored as words),
            // kFillPixels at a time: the batch's loads are all issued before the first is stored, so a tile waits for
            // a few round trips to memory, not one a pixel.
            const int ih0 = p0 * g.strideH - g.padTop, iw0 = q0 * g.strideW - g.padLeft;
            const Element* xImage = x + size_t(n) * g.h * g.w * g.c;
            int fr = 0, fc = tid;
            while (fc >= s.fc) // windows narrower than the block (16 output columns at stride 1)
                fc -= s.fc, ++fr;
            while (fr < s.fr) {
                uint32_t words[kFillPixels][Cpad / 2];
                int at[kFillPixels];
#pragma unroll
                for (int b = 0; b < kFillPixels; ++b) {
                    const int ih = ih0 + fr, iw = iw0 + fc;
                    const bool in = fr < s.fr && ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
                    const Element* src = xImage + (size_t(in ? ih : 0) * g.w + (in ? iw : 0)) * g.c;
                    at[b] = fr < s.fr ? (fr * s.rowHalves + fc * Cpad) / 2 : -1;
#pragma unroll
                    for (int c = 0; c < Cpad; c += 2) {
                        const Element lo = in && c < g.c ? src[c] : zero, hi = in && c + 1 < g.c ? src[c + 1] : zero;
                        words[b][c / 2] = uint32_t(*reinterpret_cast<const uint16_t*>(&lo))
                            | uint32_t(*reinterpret_cast<const uint16_t*>(&hi)) << 16;
                    }
                    for (fc += kStemThreads; fc >= s.fc && fr < s.fr;)
                        fc -= s.fc, ++fr;
                }
#pragma unroll
                for (int b = 0; b < kFillPixels; ++b)
                    if (at[b] >= 0)
#pragma unroll
                        for (int c = 0; c < Cpad / 2; ++c)
                            windowWordsOut[at[b] + c] = words[b][c];
            }
            __syncthreads();

            float acc[2][8][4] = {};
            for (int step = 0; step < steps; ++step) {
                const int e0 = table[step * 8 + tig], e1 = table[step * 8 + 4 + tig];
                const int t0 = stemEntryWord(e0), t1 = stemEntryWord(e1);
                const uint32_t keep0 = stemEntryReal(e0) ? ~0u : 0u, keep1 = stemEntryReal(e1) ? ~0u : 0u;
                uint32_t a[2][4];
#pragma unroll
                for (int mi = 0; mi < 2; ++mi) {
                    a[mi][0] = windowWords[pixelWord[mi][0] + t0] & keep0;
                    a[mi][1] = windowWords[pixelWord[mi][1] + t0] & keep0;
                    a[mi][2] = windowWords[pixelWord[mi][0] + t1] & keep1;
                    a[mi][3] = windowWords[pixelWord[mi][1] + t1] & keep1;
                }
                uint32_t b[8][2];
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    uint32_t r[4];
                    ldmatrixX4(r, bLane + uint32_t((j * 16 * s.wStride + step * 16) * 2));
                    b[2 * j][0] = r[0], b[2 * j][1] = r[1], b[2 * j + 1][0] = r[2], b[2 * j + 1][1] = r[3];
                }
#pragma unroll
                for (int mi = 0; mi < 2; ++mi)
#pragma unroll
                    for (int nj = 0; nj < 8; ++nj)
                        mma<Element>(acc[mi][nj], a[mi], b[nj]);
            }

            // Stage the tile: with the bias, the activation and the rounding; with a skip to add, the rounded sum
            // (as the conv's stored output, residualSum's order), the add and the activation come at the write.
#pragma unroll
            for (int mi = 0; mi < 2; ++mi)
#pragma unroll
                for (int nj = 0; nj < 8; ++nj) {
                    const int k = nj * 8 + 2 * tig;
                    const float2 b = *reinterpret_cast<const float2*>(biasOf + k);
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        float v0 = acc[mi][nj][2 * h] + b.x, v1 = acc[mi][nj][2 * h + 1] + b.y;
                        if (!g.residual)
                            v0 = epilogue(g.act, g.actParam, v0), v1 = epilogue(g.act, g.actParam, v1);
                        storePair(
                            stage + (warp * 32 + mi * 16 + grp + 8 * h) * kStemStageStride + k, v0, v1, true, true);
                    }
                }
            __syncthreads();

            // The write: 16-byte pieces of 8 channels, 8 threads a pixel's 64.
            for (int i = tid; i < kStemPixels * 8; i += kStemThreads) {
                const int m = i >> 3, piece = i & 7;
                const int p = p0 + (m >> s.tqShift), q = q0 + (m & (s.tq - 1)), k = k0 + piece * 8;
                if (p >= g.p || q >= g.q || k >= g.k)
                    continue;
                const size_t at = ((size_t(n) * g.p + p) * g.q + q) * g.k + k;
                const uint4 piece8 = *reinterpret_cast<const uint4*>(stage + m * kStemStageStride + piece * 8);
                const int count = g.k - k < 8 ? g.k - k : 8;
                if (!g.residual && count == 8 && g.k % 8 == 0) { // whole, aligned, final: the common case
                    *reinterpret_cast<uint4*>(y + at) = piece8;
                    continue;
                }
                Element v[8];
                memcpy(v, &piece8, sizeof(v));
                if (g.residual)
                    for (int e = 0; e < count; ++e)
                        v[e] = gpu::fromFloat<Element>(
                            epilogue(g.act, g.actParam, gpu::toFloat(v[e]) + skipAt<Element>(g.residual, at + e)));
                if (count == 8 && g.k % 8 == 0)
                    *reinterpret_cast<uint4*>(y + at) = *reinterpret_cast<const uint4*>(v);
                else
                    for (int e = 0; e < count; ++e)
                        y[at + e] = v[e];
            }
        }
    }

    template <typename Element>
    void launchStem(
        const ConvGeometry& g, const Plan& p, const void* x, const float* bias, void* y, void* scratch, cudaStream_t st)
    {
        const StemShape s = stemShapeOf(g);
        auto* kernel = s.cpad == 4 ? stemKernel<Element, 4>
            : s.cpad == 8          ? stemKernel<Element, 8>
                                   : stemKernel<Element, 16>;
        if (!y) { // prepare: the shared memory above 48 KB, on this device, outside any capture (launch() says why)
            CONVSCOPE_CUDA_CHECK(
                cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(s.sharedBytes)));
            return;
        }
        kernel<<<dim3(p.ctas, p.nTiles), kStemThreads, s.sharedBytes, st>>>(g, s, p.mTiles,
            static_cast<const Element*>(x), static_cast<const Element*>(scratch), bias, static_cast<Element*>(y));
        CONVSCOPE_CUDA_CHECK_LAUNCH("conv2d tensor core stem");
    }

} // namespace

template <typename Element>
void runStemTyped(
    const ConvGeometry& g, const Plan& p, const void* x, const float* bias, void* y, void* scratch, cudaStream_t st)
{
    if constexpr (std::is_same_v<Element, float>)
        throw Error("cuda.tensor_core: the stem kernel is fp16 / bf16 only"); // planOf never plans it for tf32
    else
        launchStem<Element>(g, p, x, bias, y, scratch, st);
}

template void runStemTyped<float>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);
template void runStemTyped<__half>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);
template void runStemTyped<__nv_bfloat16>(
    const ConvGeometry&, const Plan&, const void*, const float*, void*, void*, cudaStream_t);

} // namespace convscope::cuda::tc
