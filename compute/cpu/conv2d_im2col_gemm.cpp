// conv2d, im2col + GEMM (cpu.im2col_gemm).
//
// A convolution is a matrix product once the input windows are laid out as columns. For one image and one
// group, with K = (C_in/g)·kh·kw and P = H_out·W_out:
//
//   col[K, P]       col[(ic, ki, kj), (oh, ow)] = in[ic, oh·s_h − pad.top + ki·d_h, ow·s_w − pad.left + kj·d_w]
//                   (zero where the tap falls into the padding)
//   out[C_out/g, P] = W[C_out/g, K] · col[K, P]          one cblas_sgemm
//
// Version 1 built the whole column matrix of an image (up to a workspace bound), split im2col across OpenMP
// threads and left sgemm to OpenBLAS's own thread pool. Two things made it slow (docs/PERFORMANCE.md, "## CPU"):
//   * the column matrix of a big layer is kh·kw times the input (600 MB for 64→64 at 512²): im2col wrote it
//     to memory and sgemm read it back, so the layer ran at the speed of DRAM, not of the FMA units;
//   * two thread pools took turns: libgomp's workers spin for a while after each parallel region and
//     competed with OpenBLAS's workers for the same cores.
// Version 2 (this file) cuts the output pixels into tiles whose columns fit in the core's L2 cache (about
// 1 MiB of columns, at least 128 pixels) and makes (image, group, tile) the unit of work of one OpenMP loop.
// Each thread builds its tile's columns in its own buffer and multiplies them at once with a single-threaded
// sgemm, so the columns go from L2 into the GEMM kernel without a trip to memory, and only one pool of threads
// (OpenMP's, the same one oneDNN uses) ever runs. The bias is added to the tile while it is still in cache.
// im2col copies each row segment with one memcpy (stride 1) or a strided loop, zero-filling the padding
// outside it instead of testing every element. A 1×1 convolution with stride 1 and no padding needs no im2col
// at all: the tile of the input plane already is the column matrix.
// Small maps (v4): a map of fewer pixels than a tile is one sgemm per image of few columns, and every sgemm packs the
// weight block again — ResNet's 7² layer4 (512 × 4608 weights for 49 columns) and DCGAN's 4² layer (512 × 4096 for 16)
// spent most of their time packing. Such layers bundle several images into one tile: their columns side by side in
// the thread's buffer (the pointwise ones copied too), one sgemm into a per-thread product, copied to each image's
// rows with the bias.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/dense_convolution.h"
#include "compute/cpu/op_common.h"
#include "compute/cpu_threads.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstring>

namespace convscope::cpu::fast {

namespace {

    struct ConvGeometry {
        int64_t inH, inW, outW, kh, kw, sh, sw, dh, dw, padTop, padLeft;
    };

    // The first and one-past-last output column ow whose tap kj lands inside the input row.
    inline void validColumns(const ConvGeometry& g, int64_t kj, int64_t* lo, int64_t* hi)
    {
        const int64_t shift = kj * g.dw - g.padLeft; // iw = ow·s + shift
        // iw >= 0  ⇔  ow >= ceil(−shift / s);  iw < inW  ⇔  ow <= floor((inW − 1 − shift) / s)
        const int64_t first = shift >= 0 ? 0 : (-shift + g.sw - 1) / g.sw;
        const int64_t last = g.inW - 1 - shift < 0 ? -1 : (g.inW - 1 - shift) / g.sw;
        *lo = std::min(first, g.outW);
        *hi = std::clamp<int64_t>(last + 1, *lo, g.outW);
    }

    // Writes the columns of output pixels [p0, p0 + count) for `channels` input planes into col[K, count], rows `ld`
    // floats apart (one thread: it runs inside the caller's parallel loop).
    void im2colTile(
        const float* planes, int64_t channels, const ConvGeometry& g, int64_t p0, int64_t count, float* col, int64_t ld)
    {
        const int64_t taps = g.kh * g.kw;
        for (int64_t ic = 0; ic < channels; ++ic) {
            const float* plane = planes + ic * g.inH * g.inW;
            for (int64_t ki = 0; ki < g.kh; ++ki) {
                for (int64_t kj = 0; kj < g.kw; ++kj) {
                    float* dst = col + (ic * taps + ki * g.kw + kj) * ld;
                    int64_t lo, hi;
                    validColumns(g, kj, &lo, &hi);
                    const int64_t shift = kj * g.dw - g.padLeft;
                    int64_t oh = p0 / g.outW, ow = p0 % g.outW;
                    for (int64_t i = 0; i < count;) {
                        const int64_t segment = std::min(g.outW - ow, count - i);
                        const int64_t end = ow + segment;
                        const int64_t ih = oh * g.sh - g.padTop + ki * g.dh;
                        float* d = dst + i - ow; // d[ow'] is the column of output column ow' of this row
                        if (ih < 0 || ih >= g.inH) {
                            std::fill(d + ow, d + end, 0.0f);
                        } else {
                            const float* src = plane + ih * g.inW;
                            const int64_t a = std::clamp(lo, ow, end), b = std::clamp(hi, a, end);
                            std::fill(d + ow, d + a, 0.0f);
                            if (g.sw == 1)
                                std::memcpy(d + a, src + a + shift, size_t(b - a) * sizeof(float));
                            else
                                for (int64_t x = a; x < b; ++x)
                                    d[x] = src[x * g.sw + shift];
                            std::fill(d + b, d + end, 0.0f);
                        }
                        i += segment;
                        ++oh;
                        ow = 0;
                    }
                }
            }
        }
    }

    // The output channels cut into chunks so that `pixelTasks` units of pixels fill the threads (chunks of at least 16
    // channels): tasks are (pixel unit, chunk). The callers copy the fields into locals, not structured bindings,
    // which clang's OpenMP regions cannot capture.
    struct ChannelSplit {
        int64_t chunks, step, tasks;
        int threads;
    };
    ChannelSplit splitChannels(int64_t pixelTasks, int64_t outPerGroup, int maxThreads)
    {
        ChannelSplit c;
        c.chunks = std::clamp<int64_t>(
            (maxThreads + pixelTasks - 1) / pixelTasks, 1, std::max<int64_t>(1, outPerGroup / 16));
        c.step = (outPerGroup + c.chunks - 1) / c.chunks;
        c.tasks = pixelTasks * c.chunks;
        c.threads = int(std::min<int64_t>(maxThreads, c.tasks));
        return c;
    }

    // Small maps: `bundle` images a task, their columns side by side in one K × (bundle · P) matrix and one sgemm
    // (the weights packed once for them all), the product copied to each image's rows with the bias. Tasks are
    // (bundle of images, group, chunk of output channels), the chunks filling the threads.
    // With more threads than (bundle, group) units the output channels split into chunks, and each chunk's task used
    // to build its unit's columns again: on 16 threads ResNet-18's 7² layer4 at batch 8 (2 bundles, 8 chunks each)
    // wrote every column matrix (3.6 MB) eight times and ran slower than on 2 threads (10.5 ms against 7.6). Then the
    // columns are built once, by all the threads (an image and a block of input channels a task), into one matrix per
    // unit that every chunk's sgemm reads.
    void conv2dBundled(const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec,
        const ConvGeometry& geometry, const detail::ConvSizes& g, int64_t bundle, int maxThreads, Tensor& out)
    {
        const int64_t groups = spec.groups, inPerGroup = g.inPerGroup, outPerGroup = g.outPerGroup;
        const int64_t depth = inPerGroup * g.kh * g.kw, pixels = g.outH * g.outW, inPlane = g.inH * g.inW;
        const int64_t columns = bundle * pixels;
        const int64_t bundles = (g.batch + bundle - 1) / bundle;
        const ChannelSplit split = splitChannels(bundles * groups, outPerGroup, maxThreads);
        const int64_t ocChunks = split.chunks, ocStep = split.step, tasks = split.tasks;
        const int threads = split.threads;
        detail::requireBlasDimensions({ depth, columns, ocStep }, "conv2d");
        const bool shared = ocChunks > 1; // then bundles · groups < threads: the shared matrices take no more memory
        const int64_t matrices = shared ? bundles * groups : int64_t(threads);
        const std::unique_ptr<float[]> col = detail::allocateWorkspace(matrices * depth * columns, "conv2d");
        const std::unique_ptr<float[]> product
            = detail::allocateWorkspace(int64_t(threads) * ocStep * columns, "conv2d");
        keepBlasOnCallingThread();
        // Image n of group gr into its unit's matrix (ld: the unit's columns), input channels [ic0, ic0 + count).
        const auto columnsOf = [&](int64_t n, int64_t gr, int64_t ic0, int64_t count, float* unit, int64_t ld) {
            const int64_t b = n % bundle, taps = g.kh * g.kw;
            im2colTile(in.data() + (n * g.inC + gr * inPerGroup + ic0) * inPlane, count, geometry, 0, pixels,
                unit + ic0 * taps * ld + b * pixels, ld);
        };
        const auto unitColumns = [&](int64_t n0) { return std::min(bundle, g.batch - n0) * pixels; };
        // The shared matrix of the unit (bundle starting at image n0, group gr).
        const auto unitMatrix
            = [&](int64_t n0, int64_t gr) { return col.get() + (n0 / bundle * groups + gr) * depth * columns; };
        if (shared) {
            const int64_t blocks
                = std::clamp<int64_t>((threads + g.batch * groups - 1) / (g.batch * groups), 1, inPerGroup),
                blockStep = (inPerGroup + blocks - 1) / blocks;
#pragma omp parallel for schedule(static) num_threads(threads)
            for (int64_t task = 0; task < g.batch * groups * blocks; ++task) {
                const int64_t block = task % blocks, gr = (task / blocks) % groups, n = task / (blocks * groups);
                const int64_t ic0 = block * blockStep, count = std::min(blockStep, inPerGroup - ic0);
                const int64_t n0 = n / bundle * bundle;
                if (count > 0)
                    columnsOf(n, gr, ic0, count, unitMatrix(n0, gr), unitColumns(n0));
            }
        }
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (int64_t task = 0; task < tasks; ++task) {
            const int64_t chunk = task % ocChunks;
            const int64_t gr = (task / ocChunks) % groups;
            const int64_t n0 = task / (ocChunks * groups) * bundle;
            const int64_t images = std::min(bundle, g.batch - n0);
            const int64_t oc0 = chunk * ocStep, ocCount = std::min(ocStep, outPerGroup - oc0);
            if (ocCount <= 0)
                continue;
            const int64_t ld = unitColumns(n0);
            const int me = omp_get_thread_num();
            float* mine = shared ? unitMatrix(n0, gr) : col.get() + int64_t(me) * depth * columns;
            float* result = product.get() + int64_t(me) * ocStep * columns;
            if (!shared)
                for (int64_t b = 0; b < images; ++b)
                    columnsOf(n0 + b, gr, 0, inPerGroup, mine, ld);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(ocCount), blasint(ld), blasint(depth), 1.0f,
                weight.data() + (gr * outPerGroup + oc0) * depth, blasint(depth), mine, blasint(ld), 0.0f, result,
                blasint(ld));
            for (int64_t b = 0; b < images; ++b)
                for (int64_t oc = 0; oc < ocCount; ++oc) {
                    const float* from = result + oc * ld + b * pixels;
                    float* to = out.data() + ((n0 + b) * g.outC + gr * outPerGroup + oc0 + oc) * pixels;
                    const float add = bias ? bias->data()[gr * outPerGroup + oc0 + oc] : 0.0f;
                    for (int64_t i = 0; i < pixels; ++i)
                        to[i] = from[i] + add;
                }
        }
    }

} // namespace

void conv2d(
    const Tensor& in, const Tensor& weight, const Tensor* bias, const Conv2d& spec, const Padding2d& pad, Tensor& out)
{
    const std::string op = "conv2d";
    const detail::ConvSizes g = detail::checkConvolution(in, weight, bias, spec, out, op, false);
    if (conv2dIsDense(spec, pad, in.shape(), out.shape()))
        return denseConv2d(in, weight, bias, out); // a window over the whole input: a linear layer
    const int64_t batch = g.batch, inC = g.inC, inH = g.inH, inW = g.inW;
    const int64_t outC = g.outC, outH = g.outH, outW = g.outW, kh = g.kh, kw = g.kw;
    const int64_t inPerGroup = g.inPerGroup, outPerGroup = g.outPerGroup, groups = spec.groups;

    const int64_t depth = inPerGroup * kh * kw; // K: the shared dimension of the product
    const int64_t pixels = outH * outW; // P
    const int64_t inPlane = inH * inW;
    const bool pointwise = kh == 1 && kw == 1 && spec.stride[0] == 1 && spec.stride[1] == 1 && pad.top == 0
        && pad.bottom == 0 && pad.left == 0 && pad.right == 0 && outH == inH && outW == inW;

    detail::requireBlasDimensions({ depth, pixels, inPlane, outPerGroup }, op);
    const ConvGeometry geometry { inH, inW, outW, kh, kw, spec.stride[0], spec.stride[1], spec.dilation[0],
        spec.dilation[1], pad.top, pad.left };

    // Tile: about 1 MiB of columns (half a Sapphire Rapids / Ice Lake L2), but never fewer pixels than output
    // channels (up to 1024): every sgemm packs the whole weight block W[C_out/g, K] again, which costs
    // ∝ C_out·K against the product's C_out·K·tile, so a narrow tile on a wide layer spends its time packing
    // (v2 with 128-pixel tiles: 512→1024 at 32² ran at 58% of the FMA peak on one core, this v3 at 6x%).
    // A multiple of 16 pixels (one AVX-512 register).
    const int64_t fitsL2 = (int64_t(1) << 20) / (4 * depth);
    int64_t tile = std::min(pixels, std::max<int64_t>({ 512, fitsL2, std::min<int64_t>(outPerGroup, 1024) }) / 16 * 16);
    // At batch 1 a small layer is one or two tiles: the tiles then shrink (to no fewer than 64 pixels, where the
    // product still amortises packing the weights) until every thread has one, and only then do the output channels
    // split too (each part repeats its tile's im2col, which is the cheaper of the two only when the tile cannot
    // shrink).
    const int maxThreads = omp_get_max_threads();
    // Small maps: `bundle` images a tile, up to a tile's columns and 4 MiB of them (a thread's buffer).
    const int64_t bundleColumns = std::min(std::max<int64_t>(512, std::min<int64_t>(outPerGroup, 1024)),
        std::max<int64_t>(16, (int64_t(1) << 20) / depth));
    const int64_t bundle = pixels * 4 <= bundleColumns ? std::min(batch, bundleColumns / pixels) : 1;
    if (bundle > 1)
        return conv2dBundled(in, weight, bias, spec, geometry, g, bundle, maxThreads, out);
    const int64_t images = batch * groups;
    if (images * ((pixels + tile - 1) / tile) < maxThreads) {
        const int64_t perImage = (maxThreads + images - 1) / images;
        tile = std::min(tile, std::max<int64_t>(64, ((pixels + perImage - 1) / perImage + 15) / 16 * 16));
    }
    const int64_t tiles = (pixels + tile - 1) / tile;
    const ChannelSplit split = splitChannels(images * tiles, outPerGroup, maxThreads);
    const int64_t ocChunks = split.chunks, ocStep = split.step, tasks = split.tasks;
    const int threads = split.threads;
    std::unique_ptr<float[]> col;
    if (!pointwise)
        col = detail::allocateWorkspace(int64_t(threads) * depth * tile, op);

    keepBlasOnCallingThread();
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (int64_t task = 0; task < tasks; ++task) {
        const int64_t chunk = task % ocChunks;
        const int64_t t = (task / ocChunks) % tiles;
        const int64_t gr = (task / (ocChunks * tiles)) % groups;
        const int64_t n = task / (ocChunks * tiles * groups);
        const int64_t oc0 = chunk * ocStep, ocCount = std::min(ocStep, outPerGroup - oc0);
        if (ocCount <= 0)
            continue;
        const int64_t p0 = t * tile;
        const int64_t count = std::min(tile, pixels - p0);
        const float* planes = in.data() + (n * inC + gr * inPerGroup) * inPlane;
        const float* w = weight.data() + (gr * outPerGroup + oc0) * depth;
        float* dst = out.data() + (n * outC + gr * outPerGroup + oc0) * pixels + p0;
        if (pointwise) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(ocCount), blasint(count), blasint(depth),
                1.0f, w, blasint(depth), planes + p0, blasint(inPlane), 0.0f, dst, blasint(pixels));
        } else {
            float* mine = col.get() + int64_t(omp_get_thread_num()) * depth * tile;
            im2colTile(planes, inPerGroup, geometry, p0, count, mine, count);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(ocCount), blasint(count), blasint(depth),
                1.0f, w, blasint(depth), mine, blasint(count), 0.0f, dst, blasint(pixels));
        }
        if (bias)
            for (int64_t oc = 0; oc < ocCount; ++oc) {
                const float b = bias->data()[gr * outPerGroup + oc0 + oc];
                float* row = dst + oc * pixels;
                for (int64_t i = 0; i < count; ++i)
                    row[i] += b;
            }
    }
}

} // namespace convscope::cpu::fast
