// The resize kind's names, shape rule and plan (resize.h).
#include "compute/resize.h"

#include "compute/checked_math.h"
#include "compute/error.h"

#include <cmath>
#include <sstream>

namespace convscope {

const char* resizeModeName(Resize::Mode mode)
{
    switch (mode) {
    case Resize::Mode::Nearest:
        return "nearest";
    case Resize::Mode::Linear:
        return "linear";
    case Resize::Mode::Cubic:
        return "cubic";
    }
    return "nearest";
}

const char* resizeCoordinatesName(Resize::Coordinates c)
{
    switch (c) {
    case Resize::Coordinates::HalfPixel:
        return "half_pixel";
    case Resize::Coordinates::PytorchHalfPixel:
        return "pytorch_half_pixel";
    case Resize::Coordinates::AlignCorners:
        return "align_corners";
    case Resize::Coordinates::Asymmetric:
        return "asymmetric";
    case Resize::Coordinates::HalfPixelSymmetric:
        return "half_pixel_symmetric";
    case Resize::Coordinates::TfHalfPixelForNn:
        return "tf_half_pixel_for_nn";
    }
    return "asymmetric";
}

const char* resizeNearestModeName(Resize::NearestMode m)
{
    switch (m) {
    case Resize::NearestMode::RoundPreferFloor:
        return "round_prefer_floor";
    case Resize::NearestMode::RoundPreferCeil:
        return "round_prefer_ceil";
    case Resize::NearestMode::Floor:
        return "floor";
    case Resize::NearestMode::Ceil:
        return "ceil";
    }
    return "floor";
}

std::optional<Resize::Mode> resizeModeFrom(const std::string& name)
{
    if (name == "nearest")
        return Resize::Mode::Nearest;
    if (name == "linear" || name == "bilinear" || name == "trilinear")
        return Resize::Mode::Linear;
    if (name == "cubic" || name == "bicubic")
        return Resize::Mode::Cubic;
    return std::nullopt;
}

std::optional<Resize::Coordinates> resizeCoordinatesFrom(const std::string& name)
{
    for (auto c : { Resize::Coordinates::HalfPixel, Resize::Coordinates::PytorchHalfPixel,
             Resize::Coordinates::AlignCorners, Resize::Coordinates::Asymmetric,
             Resize::Coordinates::HalfPixelSymmetric, Resize::Coordinates::TfHalfPixelForNn })
        if (name == resizeCoordinatesName(c))
            return c;
    return std::nullopt;
}

std::optional<Resize::NearestMode> resizeNearestModeFrom(const std::string& name)
{
    for (auto m : { Resize::NearestMode::RoundPreferFloor, Resize::NearestMode::RoundPreferCeil,
             Resize::NearestMode::Floor, Resize::NearestMode::Ceil })
        if (name == resizeNearestModeName(m))
            return m;
    return std::nullopt;
}

namespace {

    std::string number(double v)
    {
        std::ostringstream s;
        s.precision(9);
        s << v;
        return s.str();
    }

    // A list of one value applies to every axis; else it must name each.
    template <typename V> V perAxis(const std::vector<V>& list, int axis, int axes, const char* key)
    {
        if (list.size() == 1)
            return list[0];
        if (int(list.size()) != axes)
            throw InputError(std::string("resize's ") + key + " has " + std::to_string(list.size())
                + " values, but its input has " + std::to_string(axes) + " spatial axes ("
                + (axes == 3 ? "D, H, W" : "H, W") + "): give one value or " + std::to_string(axes));
        return list[size_t(axis)];
    }

    constexpr const char* kAxisNames[3] = { "D", "H", "W" };

} // namespace

LayerShape inferResize(const Resize& l, const Shape& in)
{
    if (!in.isImage() && !in.isVolume())
        throw InputError("resize needs an image [N, C, H, W] or a volume [N, C, D, H, W], but the layer above gives "
            + in.str() + (in.flat ? " (fully connected)" : " (" + in.rankText() + ")"));
    if (l.size.empty() && l.scale_factor.empty())
        throw InputError("resize needs a size or a scale_factor");
    if (!(l.cubic_coeff_a == l.cubic_coeff_a) || std::isinf(l.cubic_coeff_a))
        throw InputError("resize's cubic_coeff_a must be a finite number");
    const int axes = in.isVolume() ? 3 : 2;
    const int64_t dims[3] = { in.d, in.h, in.w };
    int64_t out[3] = { in.d, in.h, in.w };
    std::string formula;
    for (int k = 0; k < axes; ++k) {
        const int ax = 3 - axes + k; // index into D, H, W
        const int64_t inSize = dims[ax];
        std::string line = std::string(kAxisNames[ax]) + "_out = ";
        std::optional<double> scale;
        if (!l.scale_factor.empty()) {
            scale = perAxis(l.scale_factor, k, axes, "scale_factor");
            if (!(*scale > 0) || std::isinf(*scale))
                throw InputError("resize's scale_factor along " + std::string(kAxisNames[ax])
                    + " must be a positive number, got " + number(*scale));
        }
        if (!l.size.empty()) {
            out[ax] = perAxis(l.size, k, axes, "size");
            line += std::to_string(out[ax]) + " (size)";
            if (out[ax] < 1)
                throw InputError("resize's size along " + std::string(kAxisNames[ax]) + " must be at least 1, got "
                    + std::to_string(out[ax]));
        } else {
            const double o = std::floor(double(inSize) * *scale);
            if (!(o < 9.0e18))
                throw InputError("resize of " + std::string(kAxisNames[ax]) + " " + std::to_string(inSize) + " by "
                    + number(*scale) + " gives more than 2^63 elements");
            out[ax] = int64_t(o);
            line += "⌊" + std::to_string(inSize) + " · " + number(*scale) + "⌋ = " + std::to_string(out[ax]);
            if (out[ax] < 1)
                throw InputError("resize of " + std::string(kAxisNames[ax]) + " " + std::to_string(inSize) + " by "
                    + number(*scale) + " gives " + std::string(kAxisNames[ax]) + "_out = " + std::to_string(out[ax])
                    + ": the output would be empty");
        }
        formula += (formula.empty() ? "" : "\n") + line;
    }
    LayerShape r;
    r.out = in.isVolume() ? Shape::ncdhw(in.n, in.c, out[0], out[1], out[2]) : Shape::nchw(in.n, in.c, out[1], out[2]);
    const int64_t count = checkedProduct({ in.n, in.c, out[0], out[1], out[2] }, "resize output");
    formula += std::string("\n") + resizeModeName(l.mode);
    if (l.mode == Resize::Mode::Nearest)
        formula += std::string(" (") + resizeNearestModeName(l.nearest_mode) + ")";
    formula += std::string(", ") + resizeCoordinatesName(l.coordinate_transformation_mode);
    r.formula = formula;
    const double taps = l.mode == Resize::Mode::Nearest ? 0 : std::pow(l.mode == Resize::Mode::Linear ? 2 : 4, axes);
    r.cost.flops = 2.0 * taps * double(count);
    r.cost.bytesRead = double(in.numel()) * 4.0;
    r.cost.bytesWritten = double(count) * 4.0;
    return r;
}

ResizePlan resizePlan(const Resize& l, const LayerShape& s)
{
    ResizePlan p;
    p.mode = int(l.mode);
    p.coordinates = int(l.coordinate_transformation_mode);
    p.nearestMode = int(l.nearest_mode);
    p.cubicA = l.cubic_coeff_a;
    p.excludeOutside = l.exclude_outside;
    const int axes = s.in.isVolume() ? 3 : 2;
    const int64_t ins[3] = { s.in.d, s.in.h, s.in.w }, outs[3] = { s.out.d, s.out.h, s.out.w };
    for (int ax = 0; ax < 3; ++ax) {
        ResizeAxis& a = p.axis[ax];
        a.in = ins[ax];
        a.out = outs[ax];
        const int k = ax - (3 - axes);
        if (k < 0)
            a.scale = 1; // an image's D
        else if (!l.scale_factor.empty())
            a.scale = l.scale_factor.size() == 1 ? l.scale_factor[0] : l.scale_factor[size_t(k)];
        else
            a.scale = double(a.out) / double(a.in);
    }
    return p;
}

} // namespace convscope
