#include "gui/document/network_axes.h"

#include "compute/error.h"
#include "compute/layer_kinds.h"

#include <algorithm>
#include <type_traits>
#include <variant>

namespace convscope::gui {

namespace {
    // Unknown axes of an image (or a volume) take the names the kind reads them by.
    AxisNames canonical(AxisNames names, bool volume)
    {
        static const char* const image[] = { "N", "C", "H", "W" };
        static const char* const vol[] = { "N", "C", "D", "H", "W" };
        const size_t rank = volume ? 5 : 4;
        if (names.size() != rank)
            return names;
        for (size_t i = 0; i < rank; ++i)
            if (!names[i].known())
                names[i] = AxisName::named(volume ? vol[i] : image[i], names[i].size());
        return names;
    }

    // Element-wise over broadcast inputs: each output axis (aligned from the right) is named by the first input that
    // has it at the output's size.
    AxisNames broadcastAxes(
        const std::vector<AxisNames>& ins, const std::vector<Shape>& shapes, const std::vector<int64_t>& dims)
    {
        AxisNames out = unknownAxes(dims);
        for (size_t j = 0; j < dims.size(); ++j) {
            const size_t fromRight = dims.size() - j;
            for (size_t k = 0; k < ins.size() && k < shapes.size(); ++k) {
                const std::vector<int64_t> d = shapes[k].dims();
                if (d.size() < fromRight || ins[k].size() != d.size())
                    continue;
                const size_t i = d.size() - fromRight;
                if (d[i] == dims[j] && ins[k][i].known()) {
                    out[j] = ins[k][i];
                    break;
                }
            }
        }
        return out;
    }

    AxisNames layerOutputAxes(const LayerSpec& spec, const std::vector<AxisNames>& ins, const LayerShape& shape)
    {
        const std::vector<int64_t> dims = shape.out.dims();
        const AxisNames& in = ins.front();
        const std::vector<int64_t> inDims = shape.in.dims();
        const LayerKindInfo& info = layerKind(spec);
        return std::visit(
            [&](const auto& s) -> AxisNames {
                using T = std::decay_t<decltype(s)>;
                (void)s; // read by the transpose branch only
                if constexpr (
                    std::is_same_v<T,
                        Conv2d> || std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, Conv3d> || std::is_same_v<T, ConvTranspose3d>) {
                    AxisNames out = canonical(fittedAxes(in, dims), isVolumeKind<T>);
                    if (out.size() > 1)
                        out[1] = AxisName::named("C", dims[1]); // new channels, whatever axis 1 was
                    return out;
                } else if constexpr (std::is_same_v<T, Linear>) {
                    // The leading axes stay (a [N, C, 1, 1] input is read flat: N stays); the last is new.
                    AxisNames out = unknownAxes(dims);
                    for (size_t i = 0; i + 1 < dims.size() && i < in.size(); ++i)
                        if (in[i].size() == dims[i])
                            out[i] = in[i];
                    if (!out.empty() && !in.empty())
                        out.back()
                            = AxisName::named(dims.size() >= 3 && in.back().is("C") ? "C" : "features", dims.back());
                    return out;
                } else if constexpr (std::is_same_v<T, Flatten> || std::is_same_v<T, Reshape>) {
                    return reshapedAxes(in, dims);
                } else if constexpr (std::is_same_v<T, Transpose>) {
                    return fittedAxes(permutedAxes(in, wrappedDims(s, int(in.size()))), dims);
                } else if constexpr (std::is_same_v<T,
                                         Concat> || std::is_same_v<T, Slice> || std::is_same_v<T, Resize>) {
                    return fittedAxes(in, dims);
                } else if constexpr (std::is_same_v<T, Binary> || std::is_same_v<T, Add> || std::is_same_v<T, Mul>) {
                    return broadcastAxes(ins, shape.ins, dims);
                } else {
                    // Every other kind: a view keeps the order of the elements; a kind that reads an image or a
                    // volume reads its axes as such; otherwise the axes whose size is kept keep their names.
                    if (info.family == KindFamily::Reshape && shape.out.numel() == shape.in.numel())
                        return reshapedAxes(in, dims);
                    if (info.needs & (kNeedsImage | kNeedsVolume))
                        return canonical(fittedAxes(in, dims), (info.needs & kNeedsVolume) != 0);
                    if (dims.size() != in.size())
                        return unknownAxes(dims);
                    AxisNames out = unknownAxes(dims);
                    for (size_t i = 0; i < dims.size(); ++i)
                        if (i < inDims.size() && inDims[i] == dims[i])
                            out[i] = in[i];
                    return out;
                }
            },
            spec);
    }
} // namespace

std::vector<AxisNames> layerAxes(const Network& net, const ShapeReport& shapes)
{
    const AxisNames input = inputAxes(shapes.input);
    std::vector<AxisNames> out(shapes.layers.size());
    for (size_t i = 0; i < shapes.layers.size() && i < net.layers.size(); ++i) {
        const LayerShape& s = shapes.layers[i];
        if (!s.ok)
            continue;
        std::vector<AxisNames> ins;
        for (size_t k = 0; k < std::max<size_t>(1, s.sources.size()); ++k) {
            const int src = k < s.sources.size() ? s.sources[k] : int(i) - 1;
            const Shape& inShape = k < s.ins.size() ? s.ins[k] : s.in;
            const AxisNames& names = src < 0 ? input : out[size_t(src)];
            ins.push_back(fittedAxes(names, inShape.dims()));
        }
        try {
            out[i] = fittedAxes(layerOutputAxes(net.layers[i].spec, ins, s), s.out.dims());
        } catch (const InputError&) { // a transpose's axes that shape inference let through: names unknown
            out[i] = unknownAxes(s.out.dims());
        }
    }
    return out;
}

} // namespace convscope::gui
