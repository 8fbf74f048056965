// Shape inference of channel_shuffle and slice (compute/shape_inference_views.h).
#include "compute/shape_inference_views.h"

#include "compute/checked_math.h"
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
        if (!s.isImage() && !s.isVolume())
            return "dim " + std::to_string(dim);
        static const char* image[] = { "H", "W" };
        static const char* volume[] = { "D", "H", "W" };
        return s.isVolume() ? volume[dim - 2] : image[dim - 2];
    }
} // namespace

LayerShape inferChannelShuffle(const ChannelShuffle& l, const Shape& in)
{
    if (in.flat || in.ndim() < 3)
        throw InputError(
            "channel_shuffle needs channels with a spatial extent [N, C, *] ([N, C, H, W], [N, C, D, H, W], ...), but "
            "the layer above gives "
            + in.str() + (in.flat ? " (fully connected)" : ""));
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
    const int64_t kept = l.end - l.start;
    std::vector<int64_t> outDims = dims;
    outDims[size_t(l.dim)] = kept;
    r.out = Shape::of(outDims);
    r.formula = axisName(in, l.dim) + "_out = " + std::to_string(l.end) + " − " + std::to_string(l.start) + " = "
        + std::to_string(kept);
    r.cost.bytesRead = double(r.out.numel()) * 4.0;
    r.cost.bytesWritten = r.cost.bytesRead;
    return r;
}

int64_t wrapDim(int64_t dim, int rank, const std::string& what)
{
    if (dim < -rank || dim >= rank)
        throw InputError(what + " " + std::to_string(dim) + " is out of range for a " + std::to_string(rank)
            + "-D input (" + std::to_string(-rank) + " to " + std::to_string(rank - 1) + ")");
    return dim < 0 ? dim + rank : dim;
}

std::string listText(const std::vector<int64_t>& v)
{
    std::string s = "[";
    for (const int64_t x : v)
        s += (s.size() > 1 ? ", " : "") + std::to_string(x);
    return s + "]";
}

LayerShape inferFlatten(const Flatten& l, const Shape& in)
{
    const std::vector<int64_t> dims = in.dims();
    const int rank = int(dims.size());
    const int64_t start = wrapDim(l.start_dim, rank, "flatten's start_dim");
    const int64_t end = wrapDim(l.end_dim, rank, "flatten's end_dim");
    if (start > end)
        throw InputError("flatten's start_dim " + std::to_string(l.start_dim) + " (dim " + std::to_string(start)
            + ") comes after its end_dim " + std::to_string(l.end_dim) + " (dim " + std::to_string(end) + ") on "
            + in.str());
    std::vector<int64_t> out(dims.begin(), dims.begin() + start);
    int64_t f = 1;
    std::string product;
    for (int64_t k = start; k <= end; ++k) {
        f = checkedMul(f, dims[size_t(k)], "flatten");
        product += (k > start ? "·" : "") + std::to_string(dims[size_t(k)]);
    }
    out.push_back(f);
    out.insert(out.end(), dims.begin() + end + 1, dims.end());
    LayerShape r;
    r.out = Shape::of(out);
    r.formula = "dims " + std::to_string(start) + ".." + std::to_string(end) + " → " + product + " = "
        + std::to_string(f) + "; output " + r.out.str();
    return r; // a view: no work, no traffic
}

LayerShape inferReshape(const Reshape& l, const Shape& in)
{
    const int64_t count = in.numel();
    if (l.shape.empty() || l.shape.size() > size_t(Shape::kMaxRank))
        throw InputError(
            "reshape's shape " + listText(l.shape) + " must have 1 to " + std::to_string(Shape::kMaxRank) + " dims");
    int inferred = -1;
    int64_t known = 1;
    for (size_t k = 0; k < l.shape.size(); ++k) {
        const int64_t v = l.shape[k];
        if (v == -1) {
            if (inferred >= 0)
                throw InputError("reshape's shape " + listText(l.shape) + " has two -1s (dims "
                    + std::to_string(inferred) + " and " + std::to_string(k) + "); only one dim can be inferred");
            inferred = int(k);
        } else if (v < 1) {
            throw InputError("reshape's shape " + listText(l.shape) + " has " + std::to_string(v) + " at dim "
                + std::to_string(k) + "; every dim must be positive, or -1 for the one inferred");
        } else {
            known = checkedMul(known, v, "reshape's shape " + listText(l.shape));
        }
    }
    std::vector<int64_t> out = l.shape;
    if (inferred >= 0) {
        if (count % known != 0)
            throw InputError("reshape cannot make " + in.str() + " (" + std::to_string(count) + " elements) into "
                + listText(l.shape) + ": " + std::to_string(count) + " is not a multiple of " + std::to_string(known));
        out[size_t(inferred)] = count / known;
    } else if (known != count) {
        throw InputError("reshape cannot make " + in.str() + " (" + std::to_string(count) + " elements) into "
            + listText(l.shape) + " (" + std::to_string(known) + " elements): the element counts differ");
    }
    LayerShape r;
    r.out = Shape::of(out);
    r.formula = in.str() + " → " + r.out.str() + " (" + std::to_string(count) + " elements"
        + (inferred >= 0
                ? ", dim " + std::to_string(inferred) + " = " + std::to_string(count) + " / " + std::to_string(known)
                : std::string())
        + ")";
    return r; // a view: no work, no traffic
}

LayerShape inferTranspose(const Transpose& l, const Shape& in)
{
    const std::vector<int64_t> dims = in.dims();
    const int rank = int(dims.size());
    if (int(l.dims.size()) != rank)
        throw InputError("transpose's dims " + listText(l.dims) + " name " + std::to_string(l.dims.size())
            + " axes, but its input " + in.str() + " has " + std::to_string(rank));
    std::vector<bool> seen(size_t(rank), false);
    std::vector<int64_t> out;
    for (const int64_t d : l.dims) {
        const int64_t k = wrapDim(d, rank, "transpose's dims " + listText(l.dims) + ": axis");
        if (seen[size_t(k)])
            throw InputError("transpose's dims " + listText(l.dims) + " name axis " + std::to_string(k)
                + " twice; they must be a permutation of 0.." + std::to_string(rank - 1));
        seen[size_t(k)] = true;
        out.push_back(dims[size_t(k)]);
    }
    LayerShape r;
    r.out = Shape::of(out);
    r.formula = in.str() + " permuted by " + listText(l.dims) + " → " + r.out.str();
    const double bytes = double(in.numel()) * 4.0;
    r.cost.bytesRead = bytes;
    r.cost.bytesWritten = bytes;
    return r;
}

LayerShape inferConcat(const Concat& l, const std::vector<Shape>& ins, const std::vector<std::string>& names)
{
    const auto nameOf
        = [&](size_t k) { return k < names.size() ? "\"" + names[k] + "\"" : "input " + std::to_string(k); };
    const std::vector<int64_t> first = ins[0].dims();
    const int rank = int(first.size());
    const int64_t dim = wrapDim(l.dim, rank, "concat's dim");
    std::vector<int64_t> out = first;
    std::string sum = std::to_string(first[size_t(dim)]);
    for (size_t k = 1; k < ins.size(); ++k) {
        const std::vector<int64_t> d = ins[k].dims();
        bool agree = d.size() == first.size();
        for (size_t a = 0; agree && a < d.size(); ++a)
            agree = int64_t(a) == dim || d[a] == first[a];
        if (!agree) {
            std::string what;
            if (d.size() != first.size()) {
                what = "one is " + ins[0].rankText() + " and the other " + ins[k].rankText();
            } else if (d[0] != first[0] && dim != 0) {
                what = "the batch differs";
            } else if (dim == 1 && (ins[0].isImage() || ins[0].isVolume())) {
                what = ins[0].isVolume() ? "the depth, height and width differ" : "the height and width differ";
            } else {
                int count = 0;
                for (size_t a = 0; a < d.size(); ++a)
                    if (int64_t(a) != dim && d[a] != first[a])
                        what += (count++ ? ", dim " : "dim ") + std::to_string(a);
                what += count > 1 ? " differ" : " differs";
            }
            throw InputError("concat joins dim " + std::to_string(dim) + ", so every other dim must agree, but "
                + nameOf(0) + " gives " + ins[0].str() + " and " + nameOf(k) + " gives " + ins[k].str() + " (" + what
                + ")");
        }
        out[size_t(dim)] = checkedAdd(out[size_t(dim)], d[size_t(dim)], "concat");
        sum += " + " + std::to_string(d[size_t(dim)]);
    }
    LayerShape r;
    r.out = Shape::of(out);
    r.formula = (dim == 1 ? std::string("C_out = ") : "dim " + std::to_string(dim) + " = ") + sum + " = "
        + std::to_string(out[size_t(dim)]);
    for (const Shape& s : ins)
        r.cost.bytesRead += double(s.numel()) * 4.0;
    r.cost.bytesWritten = double(r.out.numel()) * 4.0;
    return r;
}

} // namespace convscope::views
