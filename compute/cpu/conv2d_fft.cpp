// conv2d by FFT (cpu.fft), with FFTW3 in single precision.
//
// The convolution theorem: a (circular) correlation is a product of spectra,
//
//   y = x ⋆ w   ⇔   Y(f) = X(f) · conj(W(f))          (x, w real; ⋆ correlation, which is what conv2d computes)
//
// so a layer with C/g input and K/g output channels per group costs, per tile of N = tileH·tileW pixels,
// C/g + K/g transforms (N log N each) and K/g · C/g complex multiply-adds per frequency, instead of kh·kw
// multiply-adds per output pixel and channel pair. The larger the kernel, the more FFT wins: the transforms do
// not grow with it (the lecture's 1000×1000 image with a 15×15 kernel: 225 multiply-adds per pixel against
// about 2 · 2.5 · log2 N ≈ 100 flops).
//
// The steps, as the code runs them for one (image, group, tile):
//   1. pad       copy the tile's input window into a tileH × tileW real plane, zeros outside the image: the
//                layer's padding is nothing but the window starting above / left of the image
//   2. forward   r2c transform of each input plane: X[c] = FFT(tile of channel c), tileH · (tileW/2 + 1) complex
//                numbers (the other half of a real signal's spectrum is the mirror image)
//   3. multiply  Y[k] = Σ_c X[c] · S[k][c] for every frequency: a complex GEMM per frequency, K/g × C/g by
//                C/g × 1. S = conj(FFT(kernel)) / N was computed once, when the session was prepared, with the
//                kernel dilated (zeros between its taps) and placed at the plane's origin. The loop runs over
//                blocks of frequencies so the block of X stays in L1/L2 while every output channel reads it.
//   4. inverse   c2r transform of each output plane (unnormalised: the 1/N is already in S)
//   5. crop      the first validH × validW pixels are exact; the rest wrapped around the tile's edge. Copy them
//                to the output with the bias.
// Overlap-save tiling (compute/fft_tiling.h) bounds the memory and keeps each tile's transforms in cache; the
// tiles are the unit of work of one OpenMP loop, each thread with its own buffers (FFTW's execute functions are
// thread-safe on distinct arrays, its planner is not: plans are made under a lock and cached per size).
//
// Accuracy: a float FFT's rounding error grows like log N, and every output sums over all N pixels of the tile,
// not just kh·kw taps, so the error is larger than a direct sum's: relative L2 around 1e-7 to 1e-6 against the
// double-precision cpu.direct (tests/compute/cpu_fft_test.cpp keeps it within 1e-5).
#include "compute/cpu/conv2d_fft.h"

#include "compute/cpu/op_common.h"
#include "compute/error.h"

#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace convscope::cpu {

namespace {

    const char* const kSelection = "cpu.fft";

    // FFTW arrays (aligned for its SIMD codelets); released with fftwf_free.
    struct FftwFree {
        void operator()(void* p) const { fftwf_free(p); }
    };
    using FloatBuffer = std::unique_ptr<float[], FftwFree>;

    FloatBuffer allocate(int64_t floats, const std::string& what)
    {
        auto* p = static_cast<float*>(fftwf_malloc(size_t(floats) * sizeof(float)));
        if (!p)
            throw OutOfMemoryError(
                std::string(kSelection) + ": could not allocate " + std::to_string(floats >> 18) + " MiB for " + what);
        return FloatBuffer(p);
    }

    // One plan per (size, direction) for the whole process, made on arrays of the alignment every buffer here has
    // (fftwf_malloc's, and plane offsets that are multiples of 64 bytes), so the new-array execute functions can
    // run it on any of them. FFTW_MEASURE tries several algorithms on the spot (bounded by a time limit): slower to
    // plan, faster to run; the planning is untimed (session prepare).
    // The cache, and FFTW's planner state with it, goes at exit (no leak for LeakSanitizer to report); no session
    // outlives main.
    struct PlanCache {
        std::mutex lock;
        std::map<std::tuple<int64_t, int64_t, bool>, fftwf_plan> plans;
        ~PlanCache()
        {
            for (auto& [key, plan] : plans)
                fftwf_destroy_plan(plan);
            fftwf_cleanup();
        }
    };

    fftwf_plan cachedPlan(int64_t h, int64_t w, bool forward)
    {
        static PlanCache cache;
        auto& plans = cache.plans;
        const std::lock_guard<std::mutex> guard(cache.lock);
        const auto key = std::make_tuple(h, w, forward);
        if (const auto it = plans.find(key); it != plans.end())
            return it->second;
        const int64_t freqs = h * (w / 2 + 1);
        FloatBuffer real = allocate(h * w, "planning"), spectrum = allocate(2 * freqs, "planning");
        auto* cplx = reinterpret_cast<fftwf_complex*>(spectrum.get());
        fftwf_set_timelimit(2.0);
        fftwf_plan plan = forward ? fftwf_plan_dft_r2c_2d(int(h), int(w), real.get(), cplx, FFTW_MEASURE)
                                  : fftwf_plan_dft_c2r_2d(int(h), int(w), cplx, real.get(), FFTW_MEASURE);
        if (!plan)
            throw Error(std::string(kSelection) + ": FFTW could not plan a " + std::to_string(h) + "×"
                + std::to_string(w) + (forward ? " r2c" : " c2r") + " transform");
        plans.emplace(key, plan);
        return plan;
    }

    // Complex numbers per plane, rounded up to 64 bytes so every plane starts aligned.
    int64_t paddedFreqs(int64_t freqs) { return (freqs + 7) / 8 * 8; }

    constexpr int64_t kFreqBlock = 256; // 2 KiB of one plane's spectrum: C/g of them stay in L1/L2

} // namespace

FftTilingTarget cpuFftTarget(int64_t forcedTile)
{
    FftTilingTarget t;
    t.forcedTile = forcedTile;
    t.maxTile = 1024;
    t.kernelSpectraBudgetBytes = int64_t(1) << 30;
    t.parallelTiles = omp_get_max_threads();
    return t;
}

struct FftConv2d::Impl {
    Conv2d spec;
    LayerShape shape;
    FftTiling tiling;
    int64_t cg = 0, kg = 0, fs = 0;
    int64_t batch = 1; // tiles per task: they share each read of the kernel spectra
    int threads = 1;
    fftwf_plan forward = nullptr, inverse = nullptr;
    FloatBuffer spectra; // S[k][c][f] = conj(FFT(dilated kernel)) / N, interleaved re/im
    std::vector<FloatBuffer> work; // per thread: X[batch][C/g][fs], Y[batch][K/g][fs] (complex), then the real tile

    // Input spectrum of channel c of the task's tile j, output spectrum of channel k, the thread's real plane.
    float* x(int thread, int64_t j, int64_t c) const { return work[size_t(thread)].get() + 2 * (j * cg + c) * fs; }
    float* y(int thread, int64_t j, int64_t k) const { return x(thread, batch, 0) + 2 * (j * kg + k) * fs; }
    float* plane(int thread) const { return y(thread, batch, 0); }
    int64_t workFloats() const { return 2 * batch * (cg + kg) * fs + tiling.tileH * tiling.tileW; }

    void transformKernels(const Tensor& weight)
    {
        const int64_t th = tiling.tileH, tw = tiling.tileW, kh = spec.kernel_size[0], kw = spec.kernel_size[1];
        const int64_t k = shape.out.c;
        const float scale = 1.0f / float(th * tw);
        spectra = allocate(2 * k * cg * fs, "the kernel spectra");
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (int64_t pair = 0; pair < k * cg; ++pair) {
            float* tile = plane(omp_get_thread_num());
            std::fill(tile, tile + th * tw, 0.0f);
            const float* w = weight.data() + pair * kh * kw;
            for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j)
                    tile[i * spec.dilation[0] * tw + j * spec.dilation[1]] = w[i * kw + j];
            float* s = spectra.get() + 2 * pair * fs;
            fftwf_execute_dft_r2c(forward, tile, reinterpret_cast<fftwf_complex*>(s));
            for (int64_t f = 0; f < tiling.freqs; ++f) { // correlation, not convolution: the conjugate
                s[2 * f] *= scale;
                s[2 * f + 1] *= -scale;
            }
        }
    }

    // Steps 1 and 2 for input channel c of tile j: the window at (ih0, iw0) of `src` (one H × W plane) into X[j][c].
    void forwardPlane(int thread, const float* src, int64_t ih0, int64_t iw0, int64_t j, int64_t c) const
    {
        const int64_t th = tiling.tileH, tw = tiling.tileW, h = shape.in.h, w = shape.in.w;
        float* tile = plane(thread);
        const int64_t lo = std::clamp<int64_t>(-iw0, 0, tw), hi = std::clamp<int64_t>(w - iw0, lo, tw);
        for (int64_t r = 0; r < th; ++r) {
            float* row = tile + r * tw;
            const int64_t ih = ih0 + r;
            if (ih < 0 || ih >= h) {
                std::fill(row, row + tw, 0.0f);
                continue;
            }
            std::fill(row, row + lo, 0.0f);
            std::memcpy(row + lo, src + ih * w + iw0 + lo, size_t(hi - lo) * sizeof(float));
            std::fill(row + hi, row + tw, 0.0f);
        }
        fftwf_execute_dft_r2c(forward, tile, reinterpret_cast<fftwf_complex*>(x(thread, j, c)));
    }

    // Step 3 for group `group` and the task's `count` tiles: Y[j][k] = Σ_c X[j][c] · S[k][c], blocked over
    // frequencies. A block of S[k] (C/g · 2 KiB) is read from memory once for all the tiles, which is what makes the
    // products of a wide layer run from cache: one tile per read made 64→64 channels memory-bound on S.
    void multiply(int thread, int64_t group, int64_t count) const
    {
        const int64_t freqs = tiling.freqs;
        for (int64_t f0 = 0; f0 < freqs; f0 += kFreqBlock) {
            const int64_t f1 = std::min(freqs, f0 + kFreqBlock);
            for (int64_t k = 0; k < kg; ++k) {
                const float* sk = spectra.get() + 2 * (group * kg + k) * cg * fs;
                for (int64_t j = 0; j < count; ++j) {
                    float* yk = y(thread, j, k);
                    std::fill(yk + 2 * f0, yk + 2 * f1, 0.0f);
                    for (int64_t c = 0; c < cg; ++c) {
                        const float* xc = x(thread, j, c);
                        const float* s = sk + 2 * c * fs;
                        for (int64_t f = f0; f < f1; ++f) {
                            const float xr = xc[2 * f], xi = xc[2 * f + 1], sr = s[2 * f], si = s[2 * f + 1];
                            yk[2 * f] += xr * sr - xi * si;
                            yk[2 * f + 1] += xr * si + xi * sr;
                        }
                    }
                }
            }
        }
    }

    // Steps 4 and 5 for output channel k of the group and tile j: Y[j][k] back to a plane, its exact part to `dst`.
    void inversePlane(int thread, int64_t j, int64_t k, float* dst, int64_t rows, int64_t cols, float bias) const
    {
        float* tile = plane(thread);
        fftwf_execute_dft_c2r(inverse, reinterpret_cast<fftwf_complex*>(y(thread, j, k)), tile);
        const int64_t q = shape.out.w, tw = tiling.tileW;
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t i = 0; i < cols; ++i)
                dst[r * q + i] = tile[r * tw + i] + bias;
    }
};

FftConv2d::FftConv2d(const Conv2d& spec, const LayerShape& shape, const Tensor& weight, int64_t forcedTile)
    : m(std::make_unique<Impl>())
{
    m->spec = spec;
    m->shape = shape;
    const FftTilingTarget target = cpuFftTarget(forcedTile);
    m->tiling = chooseFftTiling(spec, shape, target, kSelection);
    m->cg = shape.in.c / spec.groups;
    m->kg = shape.out.c / spec.groups;
    m->fs = paddedFreqs(m->tiling.freqs);
    detail::requireWeight(weight, shape.out.c, m->cg, spec.kernel_size[0], spec.kernel_size[1], "conv2d");
    // Tiles per task: several when the spectra are large (they are then read once per task, not per tile), as long
    // as every thread still gets a task. Then as many threads as tasks can run at once and the budget has room for.
    const int64_t units = shape.in.n * spec.groups * m->tiling.tiles();
    const int64_t free = target.kernelSpectraBudgetBytes - m->tiling.kernelSpectraBytes;
    if (m->tiling.kernelSpectraBytes >= (int64_t(4) << 20))
        m->batch = std::clamp<int64_t>(units / omp_get_max_threads(), 1, std::min<int64_t>(8, m->tiling.tiles()));
    while (m->batch > 1 && m->workFloats() * 4 * omp_get_max_threads() > free)
        --m->batch;
    const int64_t tasks = shape.in.n * spec.groups * ((m->tiling.tiles() + m->batch - 1) / m->batch);
    const int64_t room = free / std::max<int64_t>(1, m->workFloats() * 4);
    m->threads = int(std::max<int64_t>(1, std::min<int64_t>({ omp_get_max_threads(), tasks, room })));
    m->forward = cachedPlan(m->tiling.tileH, m->tiling.tileW, true);
    m->inverse = cachedPlan(m->tiling.tileH, m->tiling.tileW, false);
    for (int t = 0; t < m->threads; ++t)
        m->work.push_back(allocate(m->workFloats(), "the per-thread buffers"));
    m->transformKernels(weight);
}

FftConv2d::~FftConv2d() = default;

const FftTiling& FftConv2d::tiling() const { return m->tiling; }

std::string FftConv2d::note() const
{
    const int64_t bytes = int64_t(m->threads) * m->workFloats() * 4;
    return "FFTW r2c/c2r, " + m->tiling.describe()
        + (m->batch > 1 ? ", " + std::to_string(m->batch) + " tiles per task" : "") + ", workspace "
        + std::to_string(std::max<int64_t>(1, (bytes + (1 << 19)) >> 20)) + " MiB (" + std::to_string(m->threads)
        + (m->threads == 1 ? " thread)" : " threads)");
}

void FftConv2d::run(const Tensor& in, const Tensor* bias, Tensor& out)
{
    const std::string op = "conv2d";
    const Impl& s = *m;
    detail::requireNonEmpty(in, out, op);
    detail::require(in.shape() == s.shape.in, op,
        "cpu.fft was prepared for an input of " + s.shape.in.str() + " but got " + in.shape().str());
    detail::require(out.shape() == s.shape.out, op,
        "cpu.fft was prepared for an output of " + s.shape.out.str() + " but got " + out.shape().str());
    detail::requireVector(bias, s.shape.out.c, op, "bias");

    const FftTiling& t = s.tiling;
    const int64_t groups = s.spec.groups, tiles = t.tiles(), batch = s.shape.in.n;
    const int64_t c = s.shape.in.c, k = s.shape.out.c, h = s.shape.in.h, w = s.shape.in.w;
    const int64_t p = s.shape.out.h, q = s.shape.out.w;
    const Padding2d& pad = s.shape.resolvedPadding;
    const int64_t runs = (tiles + s.batch - 1) / s.batch; // tasks per image and group
    const int64_t tasks = batch * groups * runs;
#pragma omp parallel for schedule(dynamic) num_threads(s.threads)
    for (int64_t task = 0; task < tasks; ++task) {
        const int thread = omp_get_thread_num();
        const int64_t first = (task % runs) * s.batch, group = (task / runs) % groups, n = task / (runs * groups);
        const int64_t count = std::min(s.batch, tiles - first);
        for (int64_t j = 0; j < count; ++j) {
            const int64_t tile = first + j;
            const int64_t oh0 = (tile / t.tilesX) * t.validH, ow0 = (tile % t.tilesX) * t.validW;
            for (int64_t ic = 0; ic < s.cg; ++ic)
                s.forwardPlane(
                    thread, in.data() + ((n * c + group * s.cg + ic) * h) * w, oh0 - pad.top, ow0 - pad.left, j, ic);
        }
        s.multiply(thread, group, count);
        for (int64_t j = 0; j < count; ++j) {
            const int64_t tile = first + j;
            const int64_t oh0 = (tile / t.tilesX) * t.validH, ow0 = (tile % t.tilesX) * t.validW;
            const int64_t rows = std::min(t.validH, p - oh0), cols = std::min(t.validW, q - ow0);
            for (int64_t oc = 0; oc < s.kg; ++oc) {
                const int64_t channel = group * s.kg + oc;
                s.inversePlane(thread, j, oc, out.data() + ((n * k + channel) * p + oh0) * q + ow0, rows, cols,
                    bias ? bias->data()[channel] : 0.0f);
            }
        }
    }
}

} // namespace convscope::cpu
