// Resize (layer_spec.h's Resize; ONNX Resize, torch.nn.functional.interpolate) of an image's H, W or a volume's D, H,
// W: each output element is the weighted sum of its taps, up to 4 along each axis (resize_math.h computes them, once
// per output index of each axis, into a table), computed separably: the input rows an output row reads are blended,
// then each output sums its x taps of the blend. fast:: spreads the output rows of every plane over the OpenMP team,
// and on an AVX-512 CPU computes 16 outputs of a row at a time for linear and cubic (resize_avx512.cpp).
#include "compute/cpu/conv2d_tap_avx512.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"
#include "compute/cpu/resize_avx512.h"
#include "compute/cpu/stream_store.h"
#include "compute/resize_math.h"

#include <memory>
#include <vector>
#include <xmmintrin.h>

namespace convscope::cpu {

namespace {

    // The taps of every output index along one axis: count[x], and idx/weight at [x · kResizeMaxTaps + k].
    struct AxisTaps {
        std::vector<int> count;
        std::vector<int64_t> idx;
        std::vector<float> weight;
    };

    AxisTaps tapsOf(const ResizePlan& p, const ResizeAxis& a)
    {
        AxisTaps t;
        t.count.resize(size_t(a.out));
        t.idx.resize(size_t(a.out) * kResizeMaxTaps);
        t.weight.resize(size_t(a.out) * kResizeMaxTaps);
        for (int64_t x = 0; x < a.out; ++x)
            t.count[size_t(x)]
                = resizeTaps(p, a, x, &t.idx[size_t(x) * kResizeMaxTaps], &t.weight[size_t(x) * kResizeMaxTaps]);
        return t;
    }

    // The taps of every output index along one axis, packed `taps` per index (each axis takes a fixed count: 1 for
    // nearest or a one-element axis, 2 for linear, 4 for cubic).
    struct PackedTaps {
        int taps = 1;
        std::vector<int64_t> idx;
        std::vector<float> weight;
    };
    PackedTaps pack(const AxisTaps& t, int64_t out)
    {
        PackedTaps p;
        p.taps = out > 0 ? t.count[0] : 1;
        p.idx.resize(size_t(out * p.taps));
        p.weight.resize(size_t(out * p.taps));
        for (int64_t x = 0; x < out; ++x)
            for (int c = 0; c < p.taps; ++c) {
                p.idx[size_t(x * p.taps + c)] = t.idx[size_t(x) * kResizeMaxTaps + size_t(c)];
                p.weight[size_t(x * p.taps + c)] = t.weight[size_t(x) * kResizeMaxTaps + size_t(c)];
            }
        return p;
    }

    // One output row from the input rows it reads (up to 4 × 4 for a volume's z and y taps, each with its weight),
    // separably: the rows are first blended into `blend` (contiguous, so it vectorises), then each output sums its
    // x taps of the blend. A row read whole with weight 1 (nearest, or an exact row) is not blended.
    template <int KX>
    void resizeRow(const float* const* rows, const float* rowWeight, int nRows, const PackedTaps& tx, int64_t inWidth,
        int64_t width, float* blend, float* line)
    {
        const float* src = rows[0];
        if (nRows > 1 || rowWeight[0] != 1.0f) {
            for (int64_t i = 0; i < inWidth; ++i)
                blend[i] = rowWeight[0] * rows[0][i];
            for (int r = 1; r < nRows; ++r) {
                const float* in = rows[r];
                const float wr = rowWeight[r];
                for (int64_t i = 0; i < inWidth; ++i)
                    blend[i] += wr * in[i];
            }
            src = blend;
        }
        const int64_t* idx = tx.idx.data();
        const float* w = tx.weight.data();
        if constexpr (KX == 1) { // nearest: weight 1, a copy
            for (int64_t x = 0; x < width; ++x)
                line[x] = src[idx[x]];
        } else {
            for (int64_t x = 0; x < width; ++x, idx += KX, w += KX) {
                float part = 0;
                for (int c = 0; c < KX; ++c)
                    part += w[c] * src[idx[c]];
                line[x] = part;
            }
        }
    }

    void resizeImpl(const Tensor& in, const ResizePlan& p, Tensor& out, bool parallel)
    {
        detail::requireNonEmpty(in, out, "resize");
        const Shape& s = in.shape();
        const Shape& o = out.shape();
        detail::require(o.n == s.n && o.c == s.c && p.axis[0].in == s.d && p.axis[1].in == s.h && p.axis[2].in == s.w
                && p.axis[0].out == o.d && p.axis[1].out == o.h && p.axis[2].out == o.w,
            "resize", "output " + o.str() + " does not match the input " + s.str() + " and the plan");
        const AxisTaps tz = tapsOf(p, p.axis[0]), ty = tapsOf(p, p.axis[1]);
        const PackedTaps tx = pack(tapsOf(p, p.axis[2]), o.w);
        // fast:: on an AVX-512 CPU: 16 outputs at a time (resize_avx512.cpp), a large output streamed past the caches.
        // Not for nearest (one tap), whose scalar copy below was faster on 2 cores (2× of 4×64×256²: 9.5 ms against
        // 13 ms streamed, 17 ms not).
        std::unique_ptr<fast::avx512::ResizeColumns> vx;
        if (parallel && tx.taps > 1 && fast::avx512::haveAvx512() && fast::avx512::canResize(s.w))
            vx = std::make_unique<fast::avx512::ResizeColumns>(
                fast::avx512::resizeColumns(tx.idx.data(), tx.weight.data(), tx.taps, o.w, s.w));
        const bool stream = vx && detail::streamOutput(out.numel());
        const int64_t inPlane = s.d * s.h * s.w, outPlane = o.d * o.h * o.w;
        const int64_t rows = s.n * s.c * o.d * o.h; // one output row: (plane, z, y)
        const float* src = in.data();
        float* dst = out.data();
#pragma omp parallel if (parallel && out.numel() >= detail::kMinParallelElements)
        {
            std::vector<float> blend(size_t(s.w));
#pragma omp for schedule(static)
            for (int64_t row = 0; row < rows; ++row) {
                const int64_t y = row % o.h, z = (row / o.h) % o.d, plane = row / (o.h * o.d);
                const float* x0 = src + plane * inPlane;
                float* line = dst + plane * outPlane + (z * o.h + y) * o.w;
                const size_t zt = size_t(z) * kResizeMaxTaps, yt = size_t(y) * kResizeMaxTaps;
                const float* inputRows[kResizeMaxTaps * kResizeMaxTaps] = {};
                float rowWeight[kResizeMaxTaps * kResizeMaxTaps] = {};
                int nRows = 0;
                for (int a = 0; a < tz.count[size_t(z)]; ++a)
                    for (int b = 0; b < ty.count[size_t(y)]; ++b, ++nRows) {
                        inputRows[nRows] = x0 + (tz.idx[zt + a] * s.h + ty.idx[yt + b]) * s.w;
                        rowWeight[nRows] = tz.weight[zt + a] * ty.weight[yt + b];
                    }
                if (vx) {
                    fast::avx512::resizeLine(*vx, inputRows, rowWeight, nRows, blend.data(), line, stream);
                    continue;
                }
                switch (tx.taps) {
                case 1:
                    resizeRow<1>(inputRows, rowWeight, nRows, tx, s.w, o.w, blend.data(), line);
                    break;
                case 2:
                    resizeRow<2>(inputRows, rowWeight, nRows, tx, s.w, o.w, blend.data(), line);
                    break;
                default:
                    resizeRow<kResizeMaxTaps>(inputRows, rowWeight, nRows, tx, s.w, o.w, blend.data(), line);
                    break;
                }
            }
            if (stream)
                _mm_sfence(); // this thread's streamed stores, visible before the team's barrier
        }
    }

} // namespace

void direct::resize(const Tensor& in, const ResizePlan& plan, Tensor& out) { resizeImpl(in, plan, out, false); }
void fast::resize(const Tensor& in, const ResizePlan& plan, Tensor& out) { resizeImpl(in, plan, out, true); }

} // namespace convscope::cpu
