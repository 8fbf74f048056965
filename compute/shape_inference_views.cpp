// Shape inference of channel_shuffle and slice (compute/shape_inference_views.h).
#include "compute/shape_inference_views.h"

#include "compute/error.h"

#include <string>

namespace convscope::views {

namespace {
    // The name of axis `dim` of `s` as PyTorch's docs write it.
    std::string axisName(const Shape& s, int64_t dim)
    {
        if (dim == 0)
            return "N";
        if (dim == 1)
            return s.flat ? "F" : "C";
        static const char* image[] = { "H", "W" };
        static const char* volume[] = { "D", "H", "W" };
        return s.isVolume() ? volume[dim - 2] : image[dim - 2];
    }
} // namespace

LayerShape inferChannelShuffle(const ChannelShuffle& l, const Shape& in)
{
    if (in.flat)
        throw InputError(
            "channel_shuffle needs channels with a spatial extent [N, C, H, W] or [N, C, D, H, W], but the "
            "layer above gives "
            + in.str() + " (fully connected)");
    if (l.groups < 1)
        throw InputError("groups must be at least 1");
    if (in.c % l.groups != 0)
        throw InputError(
            "groups " + std::to_string(l.groups) + " does not divide the " + std::to_string(in.c) + " input channels");
    LayerShape r;
    r.out = in;
    r.formula = "C_out = C = " + std::to_string(in.c) + ": channel j·" + std::to_string(l.groups) + " + i ← channel i·"
        + std::to_string(in.c / l.groups) + " + j";
    const double bytes = double(in.numel()) * 4.0;
    r.cost.bytesRead = bytes;
    r.cost.bytesWritten = bytes;
    return r;
}

LayerShape inferSlice(const Slice& l, const Shape& in)
{
    const std::vector<int64_t> dims = in.dims();
    if (l.dim < 0 || l.dim >= int64_t(dims.size()))
        throw InputError("dim " + std::to_string(l.dim) + " is not an axis of " + in.str() + " (0 to "
            + std::to_string(dims.size() - 1) + ")");
    const int64_t size = dims[size_t(l.dim)];
    if (l.start < 0 || l.end > size || l.start >= l.end)
        throw InputError("slice [" + std::to_string(l.start) + ", " + std::to_string(l.end) + ") of "
            + axisName(in, l.dim) + " (dim " + std::to_string(l.dim) + ", size " + std::to_string(size)
            + ") is empty or out of range: need 0 ≤ start < end ≤ " + std::to_string(size));
    LayerShape r;
    r.out = in;
    const int64_t kept = l.end - l.start;
    switch (l.dim) {
    case 0:
        r.out.n = kept;
        break;
    case 1:
        r.out.c = kept;
        break;
    default:
        if (in.isVolume())
            (l.dim == 2 ? r.out.d : l.dim == 3 ? r.out.h : r.out.w) = kept;
        else
            (l.dim == 2 ? r.out.h : r.out.w) = kept;
    }
    r.formula = axisName(in, l.dim) + "_out = " + std::to_string(l.end) + " − " + std::to_string(l.start) + " = "
        + std::to_string(kept);
    r.cost.bytesRead = double(r.out.numel()) * 4.0;
    r.cost.bytesWritten = r.cost.bytesRead;
    return r;
}

} // namespace convscope::views
