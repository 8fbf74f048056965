#include "gui/document/receptive_field.h"

#include "compute/elementwise_math.h"
#include "compute/layer_kinds.h"
#include "compute/normalization.h"
#include "compute/reduce.h"
#include "compute/resize.h"

#include <algorithm>
#include <variant>

namespace convscope::gui {

namespace {

    using Mask = std::vector<bool>;

    // out[o] depends on in[o·stride − pad + dilation·k], k in [0, kernel).
    Mask backWindow(const Mask& out, int64_t inSize, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation)
    {
        Mask in(size_t(inSize), false);
        for (size_t o = 0; o < out.size(); ++o) {
            if (!out[o])
                continue;
            for (int64_t k = 0; k < kernel; ++k) {
                const int64_t i = int64_t(o) * stride - pad + dilation * k;
                if (i >= 0 && i < inSize)
                    in[size_t(i)] = true;
            }
        }
        return in;
    }

    // Transposed: in[i] contributes to out[i·stride − pad + dilation·k].
    Mask backTransposed(const Mask& out, int64_t inSize, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation)
    {
        Mask in(size_t(inSize), false);
        for (int64_t i = 0; i < inSize; ++i) {
            for (int64_t k = 0; k < kernel && !in[size_t(i)]; ++k) {
                const int64_t o = i * stride - pad + dilation * k;
                if (o >= 0 && o < int64_t(out.size()) && out[size_t(o)])
                    in[size_t(i)] = true;
            }
        }
        return in;
    }

    int64_t span(const Mask& m)
    {
        auto first = std::find(m.begin(), m.end(), true);
        if (first == m.end())
            return 0;
        auto last = std::find(m.rbegin(), m.rend(), true);
        return int64_t(m.rend() - last) - int64_t(first - m.begin());
    }

} // namespace

int64_t ReceptiveField::rowSpan() const { return span(rows); }
int64_t ReceptiveField::colSpan() const { return span(cols); }
int64_t ReceptiveField::count() const
{
    return int64_t(std::count(rows.begin(), rows.end(), true)) * int64_t(std::count(cols.begin(), cols.end(), true));
}

namespace {
    // What a layer's output depends on, as rows × columns of it; `whole` when it is every pixel (a fully connected
    // or global layer on the way).
    struct Region {
        Mask rows, cols;
        bool whole = false;
        bool any = false;
    };

    Region emptyRegion(const Shape& s) { return { Mask(size_t(s.flat ? 1 : s.h)), Mask(size_t(s.flat ? 1 : s.w)) }; }

    void merge(Region& into, const Region& from)
    {
        into.any = true;
        into.whole = into.whole || from.whole;
        if (into.whole)
            return;
        for (size_t k = 0; k < into.rows.size() && k < from.rows.size(); ++k)
            into.rows[k] = into.rows[k] || from.rows[k];
        for (size_t k = 0; k < into.cols.size() && k < from.cols.size(); ++k)
            into.cols[k] = into.cols[k] || from.cols[k];
    }

    // pad: output index o reads input o − before, mirrored or clamped at the edges; a constant border reads nothing.
    Mask backPad(const Mask& out, int64_t inSize, int64_t before, Pad::Mode mode)
    {
        Mask in(size_t(inSize), false);
        for (size_t o = 0; o < out.size(); ++o) {
            if (!out[o])
                continue;
            int64_t i = int64_t(o) - before;
            if (i < 0 || i >= inSize) {
                if (mode == Pad::Mode::Constant)
                    continue;
                i = mode == Pad::Mode::Replicate ? std::clamp<int64_t>(i, 0, inSize - 1)
                                                 : (i < 0 ? -i : 2 * (inSize - 1) - i);
            }
            if (i >= 0 && i < inSize)
                in[size_t(i)] = true;
        }
        return in;
    }

    // resize: output index o reads its taps along the axis (compute/resize_math.h), those of nonzero weight.
    Mask backResize(const Mask& out, const ResizePlan& plan, const ResizeAxis& axis)
    {
        Mask in(size_t(axis.in), false);
        for (size_t o = 0; o < out.size(); ++o) {
            if (!out[o])
                continue;
            int64_t idx[kResizeMaxTaps];
            float w[kResizeMaxTaps];
            const int n = resizeTaps(plan, axis, int64_t(o), idx, w);
            for (int t = 0; t < n; ++t)
                if (w[t] != 0 && idx[t] >= 0 && idx[t] < axis.in)
                    in[size_t(idx[t])] = true;
        }
        return in;
    }

    // The region of input `k` of layer `ls` that `out` depends on. Every kind is named.
    Region back(const LayerSpec& spec, const LayerShape& ls, size_t k, const Region& out)
    {
        const Shape& in = ls.ins[k];
        Region r = emptyRegion(in);
        r.any = true;
        if (out.whole || in.flat) {
            r.whole = true;
            return r;
        }
        const Padding2d& pad = ls.resolvedPadding;
        std::visit(
            [&](const auto& s) {
                using T = std::decay_t<decltype(s)>;
                if constexpr (std::is_same_v<T, Conv2d>) {
                    r.rows = backWindow(out.rows, in.h, s.kernel_size[0], s.stride[0], pad.top, s.dilation[0]);
                    r.cols = backWindow(out.cols, in.w, s.kernel_size[1], s.stride[1], pad.left, s.dilation[1]);
                } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                    r.rows = backTransposed(out.rows, in.h, s.kernel_size[0], s.stride[0], pad.top, s.dilation[0]);
                    r.cols = backTransposed(out.cols, in.w, s.kernel_size[1], s.stride[1], pad.left, s.dilation[1]);
                } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                    const Pair st = s.effectiveStride();
                    r.rows = backWindow(out.rows, in.h, s.kernel_size[0], st[0], pad.top, s.dilation[0]);
                    r.cols = backWindow(out.cols, in.w, s.kernel_size[1], st[1], pad.left, s.dilation[1]);
                } else if constexpr (std::is_same_v<T, AvgPool2d>) {
                    const Pair st = s.effectiveStride();
                    r.rows = backWindow(out.rows, in.h, s.kernel_size[0], st[0], pad.top, 1);
                    r.cols = backWindow(out.cols, in.w, s.kernel_size[1], st[1], pad.left, 1);
                } else if constexpr (std::is_same_v<T, Pad>) {
                    r.rows = backPad(out.rows, in.h, s.padding[0], s.mode);
                    r.cols = backPad(out.cols, in.w, s.padding[2], s.mode);
                } else if constexpr (std::is_same_v<T, Resize>) {
                    if (in.isVolume()) {
                        r.whole = true; // as the 3-D kinds: no 2-D picture of a volume
                    } else {
                        const ResizePlan plan = resizePlan(s, ls);
                        r.rows = backResize(out.rows, plan, plan.axis[1]);
                        r.cols = backResize(out.cols, plan, plan.axis[2]);
                    }
                } else if constexpr (std::is_same_v<T, Slice>) {
                    // A slice of H or W shifts the pixel by `start`; of N or C it keeps the pixel.
                    const auto shifted = [&](const Mask& m, int64_t size) {
                        Mask full(size_t(size), false);
                        for (size_t k = 0; k < m.size() && int64_t(k) + s.start < size; ++k)
                            full[k + size_t(s.start)] = m[k];
                        return full;
                    };
                    r.rows = s.dim == 2 ? shifted(out.rows, in.h) : out.rows;
                    r.cols = s.dim == 3 ? shifted(out.cols, in.w) : out.cols;
                } else if constexpr (
                    std::is_same_v<T,
                        GlobalAvgPool2d> || std::is_same_v<T, Flatten> || std::is_same_v<T, Linear> || std::is_same_v<T, Reshape> || std::is_same_v<T, Transpose>) {
                    r.whole = true; // reshape and transpose: the pixel's place is not a pixel of the input any more
                } else if constexpr (std::is_same_v<T, Concat>) {
                    // Along N or C: the same pixel; along another axis the picture is not the input's.
                    if (in.isImage() && wrappedDim(s, in.ndim()) <= 1)
                        r.rows = out.rows, r.cols = out.cols;
                    else
                        r.whole = true;
                } else if constexpr (std::is_same_v<T, Binary>) {
                    // NumPy's broadcast: an input of one row (column) feeds every output row (column). Between
                    // tensors that are not both images (other ranks: rankn's Shape::of) the axes are not rows and
                    // columns any more: the whole input.
                    if (!in.isImage() || !ls.out.isImage()) {
                        r.whole = true;
                    } else {
                        r.rows = in.h == 1 && ls.out.h != 1 ? Mask(1, true) : out.rows;
                        r.cols = in.w == 1 && ls.out.w != 1 ? Mask(1, true) : out.cols;
                    }
                } else if constexpr (std::is_same_v<T, Mul>) {
                    // The broadcast [N, C, 1, 1] gate: its one pixel feeds every output pixel.
                    if (in.h == 1 && in.w == 1 && !(in == ls.out))
                        r.rows = r.cols = Mask(1, true);
                    else
                        r.rows = out.rows, r.cols = out.cols;
                } else if constexpr (std::
                                         is_same_v<
                                             T, BatchNorm2d> || std::is_same_v<T, ReLU> || std::is_same_v<T, LeakyReLU> || std::is_same_v<T, Sigmoid> || std::is_same_v<T, Tanh> || std::is_same_v<T, ELU> || std::is_same_v<T, ReLU6> || std::is_same_v<T, Hardswish> || std::is_same_v<T, Hardsigmoid> || std::is_same_v<T, SiLU> || std::is_same_v<T, Hardtanh> || std::is_same_v<T, PReLU> || std::is_same_v<T, Add> || std::is_same_v<T, Identity> || std::is_same_v<T, Dropout> || std::is_same_v<T, ChannelShuffle> || isElementwiseMathKind<T>) {
                    // Element-wise (softmax over the channels of one pixel; concat along channels): same pixel.
                    r.rows = out.rows;
                    r.cols = out.cols;
                } else if constexpr (isNormKind<T>) {
                    // Every output reads its row's mean and variance: the whole row (the last axes, or a group's
                    // or a channel's every position).
                    r.whole = true;
                } else if constexpr (isSoftmaxKind<T> || std::is_same_v<T, Reduce>) {
                    // Along N or C of an image (and a reduce that keeps H and W as they are): the same pixel; along
                    // H or W, or another rank: the whole input.
                    bool samePixel = in.isImage() && ls.out.isImage() && in.h == ls.out.h && in.w == ls.out.w;
                    if constexpr (isSoftmaxKind<T>)
                        samePixel = samePixel && wrapAxis(s.dim, 4, "softmax") <= 1;
                    if (samePixel)
                        r.rows = out.rows, r.cols = out.cols;
                    else
                        r.whole = true;
                } else if constexpr (isVolumeKind<T>) {
                    // Volumes (the 3-D kinds) have no 2-D picture to mark the field on: the whole input.
                    r.whole = true;
                } else if constexpr (std::is_same_v<T, Matmul> || std::is_same_v<T, Gather>) {
                    // A row of a times a column of b; a gather's axis reads other places: the whole input.
                    r.whole = true;
                } else {
                    static_assert(dependent_false<T>, "receptive field: a layer kind has no rule");
                }
            },
            spec);
        return r;
    }
} // namespace

// Backwards through the graph: each layer's region of interest flows into every layer it reads (a residual add
// adds its skip's region to the branch's), so the field covers every path from the input to the pixel.
ReceptiveField receptiveField(const Network& net, const ShapeReport& shapes, size_t layer, int64_t row, int64_t col)
{
    ReceptiveField rf;
    if (layer >= net.layers.size() || layer >= shapes.layers.size())
        return rf;
    for (size_t i = 0; i <= layer; ++i)
        if (!shapes.layers[i].ok || shapes.layers[i].sources.size() != shapes.layers[i].ins.size())
            return rf;
    const Shape& out = shapes.layers[layer].out;
    std::vector<Region> regions(layer + 1);
    regions[layer] = emptyRegion(out);
    regions[layer].any = true;
    regions[layer].whole = out.flat;
    if (!out.flat) {
        if (row < 0 || row >= out.h || col < 0 || col >= out.w)
            return rf;
        regions[layer].rows[size_t(row)] = true;
        regions[layer].cols[size_t(col)] = true;
    }
    Region input = emptyRegion(shapes.input);
    for (size_t i = layer + 1; i-- > 0;) {
        if (!regions[i].any)
            continue;
        const LayerShape& ls = shapes.layers[i];
        for (size_t k = 0; k < ls.sources.size(); ++k) {
            const int src = ls.sources[k];
            if (src >= 0 && regions[size_t(src)].rows.empty() && regions[size_t(src)].cols.empty())
                regions[size_t(src)] = emptyRegion(shapes.layers[size_t(src)].out);
            merge(src < 0 ? input : regions[size_t(src)], back(net.layers[i].spec, ls, k, regions[i]));
        }
    }
    const Shape& in = shapes.input;
    if (input.whole || in.flat) {
        input.rows.assign(size_t(in.flat ? 1 : in.h), true);
        input.cols.assign(size_t(in.flat ? in.c : in.w), true);
    }
    rf.ok = true;
    rf.rows = std::move(input.rows);
    rf.cols = std::move(input.cols);
    return rf;
}

} // namespace convscope::gui
