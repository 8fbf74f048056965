// Padding of H and W, as torch.nn.functional.pad with mode "constant" (ConstantPad2d), "reflect" (ReflectionPad2d:
// the edge pixel is not repeated, so padding must be smaller than the size) and "replicate" (ReplicationPad2d: the
// edge pixel is repeated). Each output pixel finds its source row and column; a constant pixel has none.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/op_common.h"

#include <algorithm>
#include <cstring>

namespace convscope::cpu {

namespace {

    // The source index along one axis for output index o (in padded coordinates), or -1 for the constant fill.
    int64_t sourceIndex(int64_t o, int64_t before, int64_t size, Pad::Mode mode)
    {
        int64_t i = o - before;
        if (i >= 0 && i < size)
            return i;
        switch (mode) {
        case Pad::Mode::Constant:
            return -1;
        case Pad::Mode::Replicate:
            return i < 0 ? 0 : size - 1;
        case Pad::Mode::Reflect:
            // Mirror about the edge pixels; one reflection suffices because padding < size (shape inference).
            return i < 0 ? -i : 2 * (size - 1) - i;
        }
        return -1;
    }

    void padImpl(const Tensor& in, const Pad& spec, Tensor& out, bool parallel)
    {
        detail::requireNonEmpty(in, out, "pad");
        const Shape& s = in.shape();
        const Shape& o = out.shape();
        const auto& p = spec.padding;
        detail::require(o.n == s.n && o.c == s.c && o.h == s.h + p[0] + p[1] && o.w == s.w + p[2] + p[3], "pad",
            std::string("output ") + out.shape().str() + " does not match the input " + in.shape().str()
                + " and the padding");
        if (spec.mode == Pad::Mode::Reflect)
            detail::require(p[0] < s.h && p[1] < s.h && p[2] < s.w && p[3] < s.w, "pad",
                "reflect padding must be smaller than the input size");
        const float fill = static_cast<float>(spec.value);
        const int64_t planes = s.n * s.c;
#pragma omp parallel for schedule(static) if (parallel && out.numel() >= detail::kMinParallelElements)
        for (int64_t plane = 0; plane < planes; ++plane) {
            const float* src = in.data() + plane * s.h * s.w;
            float* dst = out.data() + plane * o.h * o.w;
            for (int64_t y = 0; y < o.h; ++y) {
                const int64_t sy = sourceIndex(y, p[0], s.h, spec.mode);
                float* row = dst + y * o.w;
                if (sy < 0) {
                    std::fill(row, row + o.w, fill);
                    continue;
                }
                // Columns [left, left + W) are the source row itself in every mode; only the borders need mapping.
                std::memcpy(row + p[2], src + sy * s.w, size_t(s.w) * sizeof(float));
                for (int64_t x = 0; x < o.w; ++x) {
                    if (x == p[2])
                        x += s.w;
                    if (x >= o.w)
                        break;
                    const int64_t sx = sourceIndex(x, p[2], s.w, spec.mode);
                    row[x] = sx < 0 ? fill : src[sy * s.w + sx];
                }
            }
        }
    }

} // namespace

void direct::pad(const Tensor& in, const Pad& spec, Tensor& out) { padImpl(in, spec, out, false); }
void fast::pad(const Tensor& in, const Pad& spec, Tensor& out) { padImpl(in, spec, out, true); }

} // namespace convscope::cpu
