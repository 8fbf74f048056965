// Resize (layer_spec.h's Resize; ONNX Resize, torch.nn.functional.interpolate) of an image's H, W or a volume's D, H,
// W: each output element is the weighted sum of its taps, up to 4 along each axis (resize_math.h computes them, once
// per output index of each axis, into a table). fast:: spreads the output rows of every plane over the OpenMP team.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"
#include "compute/resize_math.h"

#include <vector>

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

    // One output row from the input rows it reads (up to 4 × 4 for a volume's z and y taps, each with its weight):
    // the sums in the same order for every tap count, so the result does not depend on which loop ran it.
    template <int KX>
    void resizeRow(
        const float* const* rows, const float* rowWeight, int nRows, const PackedTaps& tx, int64_t width, float* line)
    {
        const int64_t* idx = tx.idx.data();
        const float* w = tx.weight.data();
        for (int64_t x = 0; x < width; ++x, idx += KX, w += KX) {
            float acc = 0;
            for (int r = 0; r < nRows; ++r) {
                float part = 0;
                for (int c = 0; c < KX; ++c)
                    part += w[c] * rows[r][idx[c]];
                acc += rowWeight[r] * part;
            }
            line[x] = acc;
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
        const int64_t inPlane = s.d * s.h * s.w, outPlane = o.d * o.h * o.w;
        const int64_t rows = s.n * s.c * o.d * o.h; // one output row: (plane, z, y)
        const float* src = in.data();
        float* dst = out.data();
#pragma omp parallel for schedule(static) if (parallel && out.numel() >= detail::kMinParallelElements)
        for (int64_t row = 0; row < rows; ++row) {
            const int64_t y = row % o.h, z = (row / o.h) % o.d, plane = row / (o.h * o.d);
            const float* x0 = src + plane * inPlane;
            float* line = dst + plane * outPlane + (z * o.h + y) * o.w;
            const size_t zt = size_t(z) * kResizeMaxTaps, yt = size_t(y) * kResizeMaxTaps;
            const float* inputRows[kResizeMaxTaps * kResizeMaxTaps];
            float rowWeight[kResizeMaxTaps * kResizeMaxTaps];
            int nRows = 0;
            for (int a = 0; a < tz.count[size_t(z)]; ++a)
                for (int b = 0; b < ty.count[size_t(y)]; ++b, ++nRows) {
                    inputRows[nRows] = x0 + (tz.idx[zt + a] * s.h + ty.idx[yt + b]) * s.w;
                    rowWeight[nRows] = tz.weight[zt + a] * ty.weight[yt + b];
                }
            switch (tx.taps) {
            case 1:
                resizeRow<1>(inputRows, rowWeight, nRows, tx, o.w, line);
                break;
            case 2:
                resizeRow<2>(inputRows, rowWeight, nRows, tx, o.w, line);
                break;
            default:
                resizeRow<kResizeMaxTaps>(inputRows, rowWeight, nRows, tx, o.w, line);
                break;
            }
        }
    }

} // namespace

void direct::resize(const Tensor& in, const ResizePlan& plan, Tensor& out) { resizeImpl(in, plan, out, false); }
void fast::resize(const Tensor& in, const ResizePlan& plan, Tensor& out) { resizeImpl(in, plan, out, true); }

} // namespace convscope::cpu
