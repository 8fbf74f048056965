// Output-size rules of the 3-D kinds: PyTorch's (torch.nn.Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d and ATen's
// pooling_output_shape / pool3d_shape_check), applied to each of D, H and W in turn, with asymmetric padding
// [front, back, top, bottom, left, right]; "same"/"valid" follow TensorFlow (the extra plane goes back/bottom/right),
// as the 2-D rules in shape_inference.cpp do. The per-axis formula is the 2-D one with D in front, so the shapes table
// reads the same for images and volumes.
#include "compute/shape_inference_volume.h"

#include "compute/checked_math.h"
#include "compute/error.h"
#include "compute/shape_inference.h"

#include <sstream>
#include <type_traits>

namespace convscope::volume {

namespace {

    struct Axis {
        const char* label; // "D", "H" or "W"
        const char* extent; // "deep", "tall" or "wide"
    };
    constexpr Axis kAxes[3] = { { "D", "deep" }, { "H", "tall" }, { "W", "wide" } };

    double bytesOf(int64_t n) { return double(n) * 4.0; }

    std::string tripleText(const Triple& t)
    {
        return "[" + std::to_string(t[0]) + ", " + std::to_string(t[1]) + ", " + std::to_string(t[2]) + "]";
    }

    void requirePositive(const Triple& t, const char* key)
    {
        if (t[0] < 1 || t[1] < 1 || t[2] < 1)
            throw InputError(std::string(key) + " must be at least 1, got " + tripleText(t));
    }

    int64_t inputExtent(const Shape& in, int axis) { return axis == 0 ? in.d : axis == 1 ? in.h : in.w; }

    Padding3d resolvePadding(const Padding3d& p, const Shape& in, const Triple& k, const Triple& s, const Triple& d)
    {
        Padding3d r;
        if (p.mode == Padding3d::Mode::Same) {
            const auto [front, back] = samePadding(in.d, k[0], s[0], d[0]);
            const auto [top, bottom] = samePadding(in.h, k[1], s[1], d[1]);
            const auto [left, right] = samePadding(in.w, k[2], s[2], d[2]);
            r = { Padding3d::Mode::Explicit, front, back, top, bottom, left, right };
        } else if (p.mode == Padding3d::Mode::Explicit) {
            r = p;
            if (p.front < 0 || p.back < 0 || p.top < 0 || p.bottom < 0 || p.left < 0 || p.right < 0)
                throw InputError("padding must not be negative");
        }
        return r;
    }

    std::string padText(int64_t before, int64_t after)
    {
        return before == after ? (before ? " + 2·" + std::to_string(before) : std::string())
                               : " + " + std::to_string(before) + " + " + std::to_string(after);
    }

    // Sliding-window output size along one axis, with its formula line.
    int64_t windowOutput(int ax, int64_t in, int64_t before, int64_t after, int64_t k, int64_t s, int64_t d,
        bool ceilMode, std::ostringstream& formula)
    {
        const int64_t span = d * (k - 1) + 1;
        const int64_t padded = in + before + after;
        if (span > padded) {
            std::ostringstream e;
            e << "kernel " << k << " along " << kAxes[ax].label;
            if (d != 1)
                e << " with dilation " << d << " spans " << span << " voxels but";
            else
                e << " is larger than";
            e << " the padded input, which is only " << padded << " " << kAxes[ax].extent << " (" << kAxes[ax].label
              << " " << in << " + padding " << before << " + " << after << ")";
            throw InputError(e.str());
        }
        const int64_t num = padded - span;
        int64_t out = (ceilMode ? (num + s - 1) / s : num / s) + 1;
        // PyTorch: with ceil_mode the last window must start inside the input or the leading padding.
        if (ceilMode && (out - 1) * s >= in + before)
            --out;
        formula << kAxes[ax].label << "_out = " << (ceilMode ? "⌈" : "⌊") << "(" << in << padText(before, after)
                << " − " << d << "·(" << k << "−1) − 1) / " << s << (ceilMode ? "⌉" : "⌋") << " + 1";
        if (ceilMode && out != (num + s - 1) / s + 1)
            formula << " − 1 (last window would start in the padding)";
        formula << " = " << out;
        return out;
    }

    template <typename Conv> void checkConvolution(const Conv& l, const Shape& in)
    {
        if (l.out_channels < 1)
            throw InputError("out_channels must be at least 1");
        requirePositive(l.kernel_size, "kernel_size");
        requirePositive(l.stride, "stride");
        requirePositive(l.dilation, "dilation");
        if (l.groups < 1)
            throw InputError("groups must be at least 1");
        if (in.c % l.groups)
            throw InputError(
                "groups " + std::to_string(l.groups) + " does not divide in_channels " + std::to_string(in.c));
        if (l.out_channels % l.groups)
            throw InputError("groups " + std::to_string(l.groups) + " does not divide out_channels "
                + std::to_string(l.out_channels));
    }

    template <typename Pool> LayerShape inferPool(const Pool& l, const Shape& in, const Triple& dilation)
    {
        LayerShape r;
        requirePositive(l.kernel_size, "kernel_size");
        const Triple s = l.effectiveStride();
        requirePositive(s, "stride");
        requirePositive(dilation, "dilation");
        r.resolvedPadding3d = resolvePadding(l.padding, in, l.kernel_size, s, dilation);
        const Padding3d& p = r.resolvedPadding3d;
        if (l.padding.mode == Padding3d::Mode::Explicit) {
            // ATen's pool3d_shape_check: "pad should be smaller than or equal to half of kernel size".
            for (int ax = 0; ax < 3; ++ax)
                for (int64_t pad : p.along(ax))
                    if (pad > l.kernel_size[size_t(ax)] / 2)
                        throw InputError("padding " + std::to_string(pad) + " along " + kAxes[ax].label
                            + " is more than half of the kernel size " + std::to_string(l.kernel_size[size_t(ax)])
                            + " (PyTorch refuses this)");
        }
        std::ostringstream f;
        int64_t outs[3];
        for (int ax = 0; ax < 3; ++ax) {
            if (ax)
                f << "\n";
            const auto [before, after] = p.along(ax);
            outs[ax] = windowOutput(ax, inputExtent(in, ax), before, after, l.kernel_size[size_t(ax)], s[size_t(ax)],
                dilation[size_t(ax)], l.ceil_mode, f);
            if constexpr (std::is_same_v<Pool, MaxPool3d>)
                requireWindowsReachInput("maxpool3d", kAxes[ax].label, inputExtent(in, ax), before,
                    l.kernel_size[size_t(ax)], s[size_t(ax)], dilation[size_t(ax)], outs[ax]);
        }
        r.formula = f.str();
        r.out = Shape::ncdhw(in.n, in.c, outs[0], outs[1], outs[2]);
        r.cost.flops = double(r.out.numel()) * double(l.kernel_size[0] * l.kernel_size[1] * l.kernel_size[2]);
        r.cost.bytesRead = bytesOf(in.numel());
        r.cost.bytesWritten = bytesOf(r.out.numel());
        return r;
    }

} // namespace

void requireVolume(const Shape& in, const std::string& type)
{
    if (in.isVolume())
        return;
    throw InputError(type + " is a 3-D layer and needs a 5-D [N, C, D, H, W] input, but the layer above gives the "
        + in.rankText()
        + (in.flat             ? " features "
                : in.isImage() ? " image "
                               : " ")
        + in.str());
}

LayerShape inferConv3d(const Conv3d& l, const Shape& in)
{
    LayerShape r;
    checkConvolution(l, in);
    r.resolvedPadding3d = resolvePadding(l.padding, in, l.kernel_size, l.stride, l.dilation);
    const Padding3d& p = r.resolvedPadding3d;
    std::ostringstream f;
    int64_t outs[3];
    for (int ax = 0; ax < 3; ++ax) {
        if (ax)
            f << "\n";
        const auto [before, after] = p.along(ax);
        outs[ax] = windowOutput(ax, inputExtent(in, ax), before, after, l.kernel_size[size_t(ax)], l.stride[size_t(ax)],
            l.dilation[size_t(ax)], false, f);
    }
    r.formula = f.str();
    r.out = Shape::ncdhw(in.n, l.out_channels, outs[0], outs[1], outs[2]);
    const int64_t kVolume
        = checkedProduct({ in.c / l.groups, l.kernel_size[0], l.kernel_size[1], l.kernel_size[2] }, "conv3d weight");
    r.cost.params = checkedAdd(
        checkedMul(l.out_channels, kVolume, "conv3d weight"), l.bias ? l.out_channels : 0, "conv3d parameters");
    r.cost.flops = 2.0 * double(r.out.numel()) * double(kVolume);
    r.cost.bytesRead = bytesOf(in.numel()) + bytesOf(r.cost.params);
    r.cost.bytesWritten = bytesOf(r.out.numel());
    return r;
}

LayerShape inferConvTranspose3d(const ConvTranspose3d& l, const Shape& in)
{
    LayerShape r;
    checkConvolution(l, in);
    if (l.padding.mode == Padding3d::Mode::Same)
        throw InputError("conv_transpose3d does not take \"same\" padding (PyTorch neither); give explicit padding");
    r.resolvedPadding3d = l.padding.mode == Padding3d::Mode::Valid ? Padding3d {} : l.padding;
    const Padding3d& p = r.resolvedPadding3d;
    if (p.front < 0 || p.back < 0 || p.top < 0 || p.bottom < 0 || p.left < 0 || p.right < 0)
        throw InputError("padding must not be negative");
    int64_t outs[3] = {};
    std::ostringstream f;
    for (int ax = 0; ax < 3; ++ax) {
        const size_t a = size_t(ax);
        const int64_t s = l.stride[a], d = l.dilation[a], k = l.kernel_size[a], op = l.output_padding[a];
        const int64_t in0 = inputExtent(in, ax);
        const auto [before, after] = p.along(ax);
        if (op < 0 || (op >= s && op >= d))
            throw InputError("output_padding " + std::to_string(op) + " along " + kAxes[ax].label
                + " must be smaller than either stride (" + std::to_string(s) + ") or dilation (" + std::to_string(d)
                + ")");
        const int64_t full
            = checkedAdd(checkedMul(in0 - 1, s, "conv_transpose3d"), d * (k - 1) + op + 1, "conv_transpose3d output");
        outs[ax] = full - before - after;
        if (ax)
            f << "\n";
        f << kAxes[ax].label << "_out = (" << in0 << " − 1)·" << s;
        if (before == after)
            f << (before ? " − 2·" + std::to_string(before) : std::string());
        else
            f << " − " << before << " − " << after;
        f << " + " << d << "·(" << k << "−1)" << (op ? " + " + std::to_string(op) : std::string())
          << " + 1 = " << outs[ax];
        if (outs[ax] < 1)
            throw InputError("padding " + std::to_string(before) + " + " + std::to_string(after)
                + " crops the whole transposed output along " + kAxes[ax].label + " (" + std::to_string(full)
                + " voxels before cropping)");
    }
    r.formula = f.str();
    r.out = Shape::ncdhw(in.n, l.out_channels, outs[0], outs[1], outs[2]);
    const int64_t kVolume = checkedProduct(
        { l.out_channels / l.groups, l.kernel_size[0], l.kernel_size[1], l.kernel_size[2] }, "conv_transpose3d weight");
    r.cost.params = checkedAdd(checkedMul(in.c, kVolume, "conv_transpose3d weight"), l.bias ? l.out_channels : 0,
        "conv_transpose3d parameters");
    // Counted on the input: every input voxel scatters into kd·kh·kw·C_out/g outputs.
    r.cost.flops = 2.0 * double(in.numel()) * double(kVolume);
    r.cost.bytesRead = bytesOf(in.numel()) + bytesOf(r.cost.params);
    r.cost.bytesWritten = bytesOf(r.out.numel());
    return r;
}

LayerShape inferMaxPool3d(const MaxPool3d& l, const Shape& in) { return inferPool(l, in, l.dilation); }

LayerShape inferAvgPool3d(const AvgPool3d& l, const Shape& in)
{
    if (l.divisor_override && *l.divisor_override == 0)
        throw InputError("divisor_override must not be 0");
    return inferPool(l, in, Triple { 1, 1, 1 });
}

LayerShape inferGlobalAvgPool3d(const Shape& in)
{
    LayerShape r;
    r.out = Shape::ncdhw(in.n, in.c, 1, 1, 1);
    r.formula = "D_out = H_out = W_out = 1 (mean over " + std::to_string(in.d) + "×" + std::to_string(in.h) + "×"
        + std::to_string(in.w) + ")";
    r.cost.flops = double(in.numel());
    r.cost.bytesRead = bytesOf(in.numel());
    r.cost.bytesWritten = bytesOf(r.out.numel());
    return r;
}

LayerShape inferBatchNorm3d(const BatchNorm3d& l, const Shape& in)
{
    if (!(l.eps > 0))
        throw InputError("eps must be positive");
    LayerShape r;
    r.out = in;
    r.formula = "output shape = input shape " + in.str();
    r.cost.flops = 2.0 * double(in.numel());
    r.cost.params = l.affine ? 2 * in.c : 0;
    r.cost.bytesRead = bytesOf(in.numel()) + bytesOf(4 * in.c);
    r.cost.bytesWritten = bytesOf(in.numel());
    return r;
}

} // namespace convscope::volume
