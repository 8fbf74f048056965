#include "gui/receptive_field.h"

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

ReceptiveField receptiveField(const Network& net, const ShapeReport& shapes, size_t layer, int64_t row, int64_t col)
{
    ReceptiveField rf;
    if (layer >= net.layers.size() || layer >= shapes.layers.size())
        return rf;
    for (size_t i = 0; i <= layer; ++i)
        if (!shapes.layers[i].ok)
            return rf;
    const Shape& out = shapes.layers[layer].out;
    Mask rows(size_t(out.flat ? 1 : out.h), false), cols(size_t(out.flat ? 1 : out.w), false);
    bool whole = out.flat;
    if (!whole) {
        if (row < 0 || row >= out.h || col < 0 || col >= out.w)
            return rf;
        rows[size_t(row)] = true;
        cols[size_t(col)] = true;
    }
    for (size_t i = layer + 1; i-- > 0 && !whole;) {
        const LayerShape& ls = shapes.layers[i];
        const Padding2d& pad = ls.resolvedPadding;
        const int64_t ih = ls.in.h, iw = ls.in.w;
        std::visit(
            [&](const auto& s) {
                using T = std::decay_t<decltype(s)>;
                if constexpr (std::is_same_v<T, Conv2d>) {
                    rows = backWindow(rows, ih, s.kernel_size[0], s.stride[0], pad.top, s.dilation[0]);
                    cols = backWindow(cols, iw, s.kernel_size[1], s.stride[1], pad.left, s.dilation[1]);
                } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                    rows = backTransposed(rows, ih, s.kernel_size[0], s.stride[0], pad.top, s.dilation[0]);
                    cols = backTransposed(cols, iw, s.kernel_size[1], s.stride[1], pad.left, s.dilation[1]);
                } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                    const Pair st = s.effectiveStride();
                    rows = backWindow(rows, ih, s.kernel_size[0], st[0], pad.top, s.dilation[0]);
                    cols = backWindow(cols, iw, s.kernel_size[1], st[1], pad.left, s.dilation[1]);
                } else if constexpr (std::is_same_v<T, AvgPool2d>) {
                    const Pair st = s.effectiveStride();
                    rows = backWindow(rows, ih, s.kernel_size[0], st[0], pad.top, 1);
                    cols = backWindow(cols, iw, s.kernel_size[1], st[1], pad.left, 1);
                } else if constexpr (std::is_same_v<T,
                                         GlobalAvgPool2d> || std::is_same_v<T, Flatten> || std::is_same_v<T, Linear>) {
                    whole = true;
                } else {
                    // Element-wise (activations, batch norm, 4-D softmax over channels): same pixel. A flat
                    // input reaching one means the layer above was fully connected already.
                    if (ls.in.flat)
                        whole = true;
                }
            },
            net.layers[i].spec);
    }
    const Shape& in = shapes.input;
    if (whole || in.flat) {
        rows.assign(size_t(in.flat ? 1 : in.h), true);
        cols.assign(size_t(in.flat ? in.c : in.w), true);
    }
    rf.ok = true;
    rf.rows = std::move(rows);
    rf.cols = std::move(cols);
    return rf;
}

} // namespace convscope::gui
