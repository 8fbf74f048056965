// Output-size rules, written once. They are PyTorch's (torch.nn.Conv2d, ConvTranspose2d, MaxPool2d,
// AvgPool2d docs and ATen's pooling_output_shape), extended in the obvious way to asymmetric padding
// [top, bottom, left, right]; "same"/"valid" follow TensorFlow (the extra pixel goes bottom/right).
// Every backend allocates from these shapes, so a kernel never re-derives a size on its own.
// The walk over a whole network (each layer's sources, the totals, the live memory) is in shape_inference_network.cpp.
#include "compute/shape_inference.h"
#include "compute/normalization.h"
#include "compute/shape_inference_math.h"
#include "compute/shape_inference_reduce.h"
#include "compute/shape_inference_tensor.h"
#include "compute/shape_inference_views.h"
#include "compute/shape_inference_volume.h"

#include "compute/checked_math.h"
#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/resize.h"

#include <cmath>
#include <sstream>
#include <type_traits>

namespace convscope {

namespace {

    struct Axis {
        const char* label; // "H" or "W"
        const char* extent; // "tall" or "wide"
    };
    constexpr Axis kAxes[2] = { { "H", "tall" }, { "W", "wide" } };

    void requirePositive(const Pair& p, const char* key)
    {
        if (p[0] < 1 || p[1] < 1)
            throw InputError(std::string(key) + " must be at least 1, got [" + std::to_string(p[0]) + ", "
                + std::to_string(p[1]) + "]");
    }

    void requireImage(const Shape& in, const std::string& type)
    {
        if (in.flat)
            throw InputError(type + " needs an image-shaped input [N, C, H, W], but the layer above gives " + in.str()
                + " (fully connected)");
        // Every kind that needs an image is a 2-D layer; its 3-D sibling takes volumes.
        if (in.isVolume())
            throw InputError(type + " is a 2-D layer and needs a 4-D [N, C, H, W] input, but the layer above gives the "
                + in.rankText() + " volume " + in.str());
        if (!in.isImage())
            throw InputError(type + " is a 2-D layer and needs a 4-D [N, C, H, W] input, but the layer above gives the "
                + in.rankText() + " " + in.str());
    }

    Padding2d resolvePadding(const Padding2d& p, const Shape& in, const Pair& k, const Pair& s, const Pair& d)
    {
        Padding2d r;
        if (p.mode == Padding2d::Mode::Same) {
            const auto [top, bottom] = samePadding(in.h, k[0], s[0], d[0]);
            const auto [left, right] = samePadding(in.w, k[1], s[1], d[1]);
            r = { Padding2d::Mode::Explicit, top, bottom, left, right };
        } else if (p.mode == Padding2d::Mode::Explicit) {
            r = p;
            if (p.top < 0 || p.bottom < 0 || p.left < 0 || p.right < 0)
                throw InputError("padding must not be negative");
        }
        return r;
    }

    // Sliding-window output size along one axis with the formula text.
    int64_t windowOutput(int ax, int64_t in, int64_t before, int64_t after, int64_t k, int64_t s, int64_t d,
        bool ceilMode, std::ostringstream& formula)
    {
        const int64_t span = d * (k - 1) + 1;
        const int64_t padded = in + before + after;
        if (span > padded) {
            std::ostringstream e;
            e << "kernel " << k;
            if (d != 1)
                e << " with dilation " << d << " spans " << span << " pixels but";
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
        std::string pad = before == after ? (before ? " + 2·" + std::to_string(before) : std::string())
                                          : " + " + std::to_string(before) + " + " + std::to_string(after);
        formula << kAxes[ax].label << "_out = " << (ceilMode ? "⌈" : "⌊") << "(" << in << pad << " − " << d << "·(" << k
                << "−1) − 1) / " << s << (ceilMode ? "⌉" : "⌋") << " + 1";
        if (ceilMode && out != (num + s - 1) / s + 1)
            formula << " − 1 (last window would start in the padding)";
        formula << " = " << out;
        return out;
    }

    void checkPoolPadding(const Padding2d& p, const Pair& k, const Pair& d)
    {
        // PyTorch: "pad should be at most half of effective kernel size".
        const int64_t pads[2][2] = { { p.top, p.bottom }, { p.left, p.right } };
        for (int ax = 0; ax < 2; ++ax) {
            const int64_t span = d[ax] * (k[ax] - 1) + 1;
            for (int64_t pad : pads[ax])
                if (pad > span / 2)
                    throw InputError("padding " + std::to_string(pad) + " is more than half of the "
                        + (d[ax] != 1 ? std::string("effective ") : std::string()) + "kernel size "
                        + std::to_string(span) + " along " + kAxes[ax].label + " (PyTorch refuses this)");
        }
    }

    double bytesOf(int64_t n) { return double(n) * 4.0; }

    // A parameter as a person writes it: -1, 0.5, 6 (no trailing zeros).
    std::string numberText(double v)
    {
        std::ostringstream s;
        s << v;
        return s.str();
    }

    // What conv2d and conv_transpose2d both require of their parameters and input.
    template <typename Conv> void checkConvolution(const Conv& l, const Shape& in, const std::string& type)
    {
        requireImage(in, type);
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

    LayerShape inferConv(const Conv2d& l, const Shape& in)
    {
        LayerShape r;
        checkConvolution(l, in, "conv2d");
        r.resolvedPadding = resolvePadding(l.padding, in, l.kernel_size, l.stride, l.dilation);
        const Padding2d& p = r.resolvedPadding;
        std::ostringstream f;
        const int64_t oh
            = windowOutput(0, in.h, p.top, p.bottom, l.kernel_size[0], l.stride[0], l.dilation[0], false, f);
        f << "\n";
        const int64_t ow
            = windowOutput(1, in.w, p.left, p.right, l.kernel_size[1], l.stride[1], l.dilation[1], false, f);
        r.formula = f.str();
        r.out = Shape::nchw(in.n, l.out_channels, oh, ow);
        const int64_t kArea = checkedProduct({ in.c / l.groups, l.kernel_size[0], l.kernel_size[1] }, "conv2d weight");
        r.cost.params = checkedAdd(
            checkedMul(l.out_channels, kArea, "conv2d weight"), l.bias ? l.out_channels : 0, "conv2d parameters");
        r.cost.flops = 2.0 * double(r.out.numel()) * double(kArea);
        r.cost.bytesRead = bytesOf(in.numel()) + bytesOf(r.cost.params);
        r.cost.bytesWritten = bytesOf(r.out.numel());
        return r;
    }

    LayerShape inferConvTranspose(const ConvTranspose2d& l, const Shape& in)
    {
        LayerShape r;
        checkConvolution(l, in, "conv_transpose2d");
        if (l.padding.mode == Padding2d::Mode::Same)
            throw InputError(
                "conv_transpose2d does not take \"same\" padding (PyTorch neither); give explicit padding");
        r.resolvedPadding = l.padding.mode == Padding2d::Mode::Valid ? Padding2d {} : l.padding;
        const Padding2d& p = r.resolvedPadding;
        if (p.top < 0 || p.bottom < 0 || p.left < 0 || p.right < 0)
            throw InputError("padding must not be negative");
        const int64_t pads[2][2] = { { p.top, p.bottom }, { p.left, p.right } };
        const int64_t ins[2] = { in.h, in.w };
        int64_t outs[2] = {};
        std::ostringstream f;
        for (int ax = 0; ax < 2; ++ax) {
            const int64_t s = l.stride[ax], d = l.dilation[ax], k = l.kernel_size[ax], op = l.output_padding[ax];
            if (op < 0 || (op >= s && op >= d))
                throw InputError("output_padding " + std::to_string(op) + " along " + kAxes[ax].label
                    + " must be smaller than either stride (" + std::to_string(s) + ") or dilation ("
                    + std::to_string(d) + ")");
            const int64_t full = checkedAdd(
                checkedMul(ins[ax] - 1, s, "conv_transpose2d"), d * (k - 1) + op + 1, "conv_transpose2d output");
            outs[ax] = full - pads[ax][0] - pads[ax][1];
            if (ax)
                f << "\n";
            f << kAxes[ax].label << "_out = (" << ins[ax] << " − 1)·" << s;
            if (pads[ax][0] == pads[ax][1])
                f << (pads[ax][0] ? " − 2·" + std::to_string(pads[ax][0]) : std::string());
            else
                f << " − " << pads[ax][0] << " − " << pads[ax][1];
            f << " + " << d << "·(" << k << "−1)" << (op ? " + " + std::to_string(op) : std::string())
              << " + 1 = " << outs[ax];
            if (outs[ax] < 1)
                throw InputError("padding " + std::to_string(pads[ax][0]) + " + " + std::to_string(pads[ax][1])
                    + " crops the whole transposed output along " + kAxes[ax].label + " (" + std::to_string(full)
                    + " pixels before cropping)");
        }
        r.formula = f.str();
        r.out = Shape::nchw(in.n, l.out_channels, outs[0], outs[1]);
        const int64_t kArea = checkedProduct(
            { l.out_channels / l.groups, l.kernel_size[0], l.kernel_size[1] }, "conv_transpose2d weight");
        r.cost.params = checkedAdd(checkedMul(in.c, kArea, "conv_transpose2d weight"), l.bias ? l.out_channels : 0,
            "conv_transpose2d parameters");
        // Counted on the input: every input pixel scatters into kh·kw·C_out/g outputs.
        r.cost.flops = 2.0 * double(in.numel()) * double(kArea);
        r.cost.bytesRead = bytesOf(in.numel()) + bytesOf(r.cost.params);
        r.cost.bytesWritten = bytesOf(r.out.numel());
        return r;
    }

    template <typename Pool>
    LayerShape inferPool(const Pool& l, const Shape& in, const std::string& type, const Pair& dilation)
    {
        LayerShape r;
        requireImage(in, type);
        requirePositive(l.kernel_size, "kernel_size");
        const Pair s = l.effectiveStride();
        requirePositive(s, "stride");
        requirePositive(dilation, "dilation");
        r.resolvedPadding = resolvePadding(l.padding, in, l.kernel_size, s, dilation);
        if (l.padding.mode == Padding2d::Mode::Explicit)
            checkPoolPadding(r.resolvedPadding, l.kernel_size, dilation);
        const Padding2d& p = r.resolvedPadding;
        std::ostringstream f;
        const int64_t oh = windowOutput(0, in.h, p.top, p.bottom, l.kernel_size[0], s[0], dilation[0], l.ceil_mode, f);
        f << "\n";
        const int64_t ow = windowOutput(1, in.w, p.left, p.right, l.kernel_size[1], s[1], dilation[1], l.ceil_mode, f);
        if constexpr (std::is_same_v<Pool, MaxPool2d>) {
            requireWindowsReachInput(type, "H", in.h, p.top, l.kernel_size[0], s[0], dilation[0], oh);
            requireWindowsReachInput(type, "W", in.w, p.left, l.kernel_size[1], s[1], dilation[1], ow);
        }
        r.formula = f.str();
        r.out = Shape::nchw(in.n, in.c, oh, ow);
        r.cost.flops = double(r.out.numel()) * double(l.kernel_size[0] * l.kernel_size[1]);
        r.cost.bytesRead = bytesOf(in.numel());
        r.cost.bytesWritten = bytesOf(r.out.numel());
        return r;
    }

    LayerShape elementwise(const Shape& in, double flopsPerElement)
    {
        LayerShape r;
        r.out = in;
        r.formula = "output shape = input shape " + in.str();
        r.cost.flops = flopsPerElement * double(in.numel());
        r.cost.bytesRead = bytesOf(in.numel());
        r.cost.bytesWritten = bytesOf(in.numel());
        return r;
    }

    // A copy of one input (identity, dropout, flatten's data): no arithmetic, the traffic of a copy.
    LayerShape passThrough(const Shape& in, const std::string& formula)
    {
        LayerShape r = elementwise(in, 0);
        r.formula = formula;
        return r;
    }

    std::string inputName(const std::vector<std::string>& names, size_t k)
    {
        return k < names.size() ? "\"" + names[k] + "\"" : "input " + std::to_string(k);
    }

    LayerShape inferAdd(const std::vector<Shape>& ins, const std::vector<std::string>& names)
    {
        for (size_t k = 1; k < ins.size(); ++k)
            if (!(ins[k] == ins[0]))
                throw InputError("add needs inputs of one shape, but " + inputName(names, 0) + " gives " + ins[0].str()
                    + " and " + inputName(names, k) + " gives " + ins[k].str());
        LayerShape r = elementwise(ins[0], double(ins.size() - 1));
        r.cost.bytesRead = bytesOf(ins[0].numel()) * double(ins.size());
        r.formula = "output shape = every input's shape " + ins[0].str();
        return r;
    }

    LayerShape inferMul(const std::vector<Shape>& ins, const std::vector<std::string>& names)
    {
        const Shape &a = ins[0], &b = ins[1];
        const auto gate = [](const Shape& big, const Shape& small) {
            return !big.flat && !small.flat && small.rank == big.rank && small.d == 1 && small.h == 1 && small.w == 1
                && small.n == big.n && small.c == big.c;
        };
        LayerShape r;
        if (a == b || gate(a, b) || gate(b, a)) {
            const Shape& out = gate(b, a) && !(a == b) ? b : a;
            r = elementwise(out, 1);
            r.cost.bytesRead = bytesOf(a.numel()) + bytesOf(b.numel());
            r.formula = a == b ? "output shape = both inputs' shape " + a.str()
                               : "output shape = " + out.str() + " (the [N, C, 1, 1] input is broadcast over H and W)";
            return r;
        }
        throw InputError("mul needs inputs of one shape, or one of [N, C, 1, 1] to broadcast over the other's H and W, "
            + std::string("but ") + inputName(names, 0) + " gives " + a.str() + " and " + inputName(names, 1)
            + " gives " + b.str());
    }

    LayerShape inferPad(const Pad& l, const Shape& in)
    {
        const int64_t* p = l.padding.data();
        for (int k = 0; k < 4; ++k)
            if (p[k] < 0)
                throw InputError("padding must not be negative, got " + std::to_string(p[k]));
        if (l.mode == Pad::Mode::Reflect) {
            const int64_t dims[2] = { in.h, in.w };
            for (int ax = 0; ax < 2; ++ax)
                for (int side = 0; side < 2; ++side)
                    if (p[2 * ax + side] >= dims[ax])
                        throw InputError("reflect padding " + std::to_string(p[2 * ax + side]) + " along "
                            + kAxes[ax].label + " must be smaller than the input's " + std::to_string(dims[ax])
                            + " (PyTorch refuses this too)");
        }
        LayerShape r;
        r.out = Shape::nchw(in.n, in.c, checkedAdd(checkedAdd(in.h, p[0], "pad"), p[1], "pad"),
            checkedAdd(checkedAdd(in.w, p[2], "pad"), p[3], "pad"));
        r.resolvedPadding = { Padding2d::Mode::Explicit, p[0], p[1], p[2], p[3] };
        r.formula = "H_out = " + std::to_string(in.h) + " + " + std::to_string(p[0]) + " + " + std::to_string(p[1])
            + " = " + std::to_string(r.out.h) + "\nW_out = " + std::to_string(in.w) + " + " + std::to_string(p[2])
            + " + " + std::to_string(p[3]) + " = " + std::to_string(r.out.w);
        r.cost.bytesRead = bytesOf(in.numel());
        r.cost.bytesWritten = bytesOf(r.out.numel());
        return r;
    }

    LayerShape inferImpl(const LayerSpec& spec, const std::vector<Shape>& ins, const std::vector<std::string>& names)
    {
        const LayerKindInfo& kind = layerKind(spec);
        const int n = int(ins.size());
        const auto* conv = std::get_if<Conv2d>(&spec);
        if (conv && conv->fused_residual) { // the fusion pass's form (compute/fusion.h): x and the skip
            if (n != 2)
                throw InputError("conv2d with a fused residual add reads exactly 2 inputs (x and the skip), but it "
                                 "has "
                    + std::to_string(n));
            requireImage(ins[0], kind.type);
            LayerShape r = inferConv(*conv, ins[0]);
            if (!(ins[1] == r.out))
                throw InputError("the skip " + ins[1].str() + " of a conv2d with a fused residual add must have its "
                    + "output's shape " + r.out.str());
            r.cost.flops += double(r.out.numel());
            r.cost.bytesRead += bytesOf(r.out.numel());
            return r;
        }
        if (n < kind.minInputs || n > kind.maxInputs) {
            std::string want = kind.minInputs == kind.maxInputs ? "exactly " + std::to_string(kind.minInputs)
                : kind.maxInputs >= kUnboundedInputs
                ? "at least " + std::to_string(kind.minInputs)
                : std::to_string(kind.minInputs) + " to " + std::to_string(kind.maxInputs);
            throw InputError(std::string(kind.type) + " reads " + want + (kind.maxInputs == 1 ? " input" : " inputs")
                + ", but it has " + std::to_string(n)
                + (kind.minInputs > 1 ? "; name them with \"inputs\": [\"a\", \"b\"]" : std::string()));
        }
        if (kind.needs & kNeedsImage)
            requireImage(ins[0], kind.type);
        if (kind.needs & kNeedsVolume)
            volume::requireVolume(ins[0], kind.type);
        const Shape& in = ins[0];
        return std::visit(
            [&](const auto& l) -> LayerShape {
                using T = std::decay_t<decltype(l)>;
                if constexpr (std::is_same_v<T, Conv2d>) {
                    return inferConv(l, in);
                } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                    return inferConvTranspose(l, in);
                } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                    return inferPool(l, in, "maxpool2d", l.dilation);
                } else if constexpr (std::is_same_v<T, AvgPool2d>) {
                    if (l.divisor_override && *l.divisor_override == 0)
                        throw InputError("divisor_override must not be 0");
                    return inferPool(l, in, "avgpool2d", Pair { 1, 1 });
                } else if constexpr (std::is_same_v<T, GlobalAvgPool2d>) {
                    LayerShape r;
                    r.out = Shape::nchw(in.n, in.c, 1, 1);
                    r.formula
                        = "H_out = W_out = 1 (mean over " + std::to_string(in.h) + "×" + std::to_string(in.w) + ")";
                    r.cost.flops = double(in.numel());
                    r.cost.bytesRead = bytesOf(in.numel());
                    r.cost.bytesWritten = bytesOf(r.out.numel());
                    return r;
                } else if constexpr (std::is_same_v<T, BatchNorm2d>) {
                    if (!(l.eps > 0))
                        throw InputError("eps must be positive");
                    LayerShape r = elementwise(in, 2);
                    r.cost.params = l.affine ? 2 * in.c : 0;
                    r.cost.bytesRead += bytesOf(4 * in.c);
                    return r;
                } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                    return views::inferChannelShuffle(l, in);
                } else if constexpr (std::is_same_v<T, Slice>) {
                    return views::inferSlice(l, in);
                } else if constexpr (std::is_same_v<T, Flatten>) {
                    return views::inferFlatten(l, in);
                } else if constexpr (std::is_same_v<T, Reshape>) {
                    return views::inferReshape(l, in);
                } else if constexpr (std::is_same_v<T, Transpose>) {
                    return views::inferTranspose(l, in);
                } else if constexpr (std::is_same_v<T, Linear>) {
                    return inferLinear(l, in); // the last axis, any rank (shape_inference_tensor.cpp)
                } else if constexpr (isSoftmaxKind<T>) {
                    return inferSoftmax(l.dim, isLogSoftmax<T>, in);
                } else if constexpr (std::is_same_v<T, Reduce>) {
                    return inferReduce(l, in);
                } else if constexpr (std::is_same_v<T,
                                         ReLU> || std::is_same_v<T, LeakyReLU> || std::is_same_v<T, ReLU6>) {
                    return elementwise(in, 1);
                } else if constexpr (std::is_same_v<T, Sigmoid> || std::is_same_v<T, Tanh> || std::is_same_v<T, ELU>) {
                    return elementwise(in, 1);
                } else if constexpr (std::is_same_v<T, Hardsigmoid>) {
                    return elementwise(in, 3); // add, clamp, scale
                } else if constexpr (std::is_same_v<T, Hardswish> || std::is_same_v<T, SiLU>) {
                    return elementwise(in, 4); // the gate as above (or exp, add, divide) and the product
                } else if constexpr (std::is_same_v<T, Hardtanh>) {
                    if (!(l.min_val < l.max_val))
                        throw InputError("hardtanh needs min_val below max_val, got min_val " + numberText(l.min_val)
                            + " and max_val " + numberText(l.max_val));
                    LayerShape r = elementwise(in, 2); // two comparisons
                    r.formula += "\ny = min(max(x, " + numberText(l.min_val) + "), " + numberText(l.max_val) + ")";
                    return r;
                } else if constexpr (isElementwiseMathKind<T>) {
                    return inferElementwiseMath(in, l);
                } else if constexpr (std::is_same_v<T, Binary>) {
                    return inferBinary(l, ins, names);
                } else if constexpr (std::is_same_v<T, PReLU>) {
                    // PyTorch's rule: one slope shared by every element, or one per channel (dim 1 of an image, a
                    // volume or a flat [N, F] input: the features).
                    const char* what = in.flat ? "features" : "channels";
                    if (l.num_parameters != 1 && l.num_parameters != in.c)
                        throw InputError("prelu has num_parameters " + std::to_string(l.num_parameters)
                            + " but its input " + in.str() + " has " + std::to_string(in.c) + " " + what
                            + " (dim 1); num_parameters must be 1 (one slope for all) or " + std::to_string(in.c)
                            + " (one slope per " + (in.flat ? "feature" : "channel") + ")");
                    LayerShape r = elementwise(in, 2); // compare, multiply
                    r.cost.params = l.num_parameters;
                    r.cost.bytesRead += bytesOf(l.num_parameters);
                    if (l.num_parameters == 1)
                        r.formula += "\ny = x > 0 ? x : a·x (one slope a)";
                    else
                        r.formula += "\ny = x > 0 ? x : a[c]·x (" + std::to_string(l.num_parameters)
                            + " slopes, one per " + (in.flat ? "feature" : "channel") + ")";
                    return r;
                } else if constexpr (std::is_same_v<T, Add>) {
                    return inferAdd(ins, names);
                } else if constexpr (std::is_same_v<T, Mul>) {
                    return inferMul(ins, names);
                } else if constexpr (std::is_same_v<T, Concat>) {
                    return views::inferConcat(l, ins, names);
                } else if constexpr (std::is_same_v<T, Pad>) {
                    return inferPad(l, in);
                } else if constexpr (std::is_same_v<T, Resize>) {
                    return inferResize(l, in);
                } else if constexpr (std::is_same_v<T, Conv3d>) {
                    return volume::inferConv3d(l, in);
                } else if constexpr (std::is_same_v<T, ConvTranspose3d>) {
                    return volume::inferConvTranspose3d(l, in);
                } else if constexpr (std::is_same_v<T, MaxPool3d>) {
                    return volume::inferMaxPool3d(l, in);
                } else if constexpr (std::is_same_v<T, AvgPool3d>) {
                    return volume::inferAvgPool3d(l, in);
                } else if constexpr (std::is_same_v<T, GlobalAvgPool3d>) {
                    return volume::inferGlobalAvgPool3d(in);
                } else if constexpr (std::is_same_v<T, BatchNorm3d>) {
                    return volume::inferBatchNorm3d(l, in);
                } else if constexpr (std::is_same_v<T, Identity>) {
                    return passThrough(in, "output = input " + in.str());
                } else if constexpr (std::is_same_v<T, Dropout>) {
                    if (!(l.p >= 0 && l.p <= 1))
                        throw InputError("p must be between 0 and 1");
                    return passThrough(in, "output = input " + in.str() + " (dropout does nothing at inference)");
                } else if constexpr (isNormKind<T>) {
                    return inferNormalization(l, in);
                } else if constexpr (std::is_same_v<T, Matmul>) {
                    return inferMatmul(l, ins, names);
                } else if constexpr (std::is_same_v<T, Gather>) {
                    return inferGather(l, in);
                } else {
                    static_assert(dependent_false<T>, "shape inference: a layer kind has no rule");
                }
            },
            spec);
    }

} // namespace

LayerShape inferLayer(const LayerSpec& spec, const Shape& in) { return inferLayer(spec, std::vector<Shape> { in }); }

LayerShape inferLayer(const LayerSpec& spec, const std::vector<Shape>& ins, const std::vector<std::string>& names)
{
    LayerShape r;
    try {
        if (ins.empty())
            throw InputError(std::string(layerKind(spec).type) + " has no input");
        r = inferImpl(spec, ins, names);
        r.out.bytes(); // throws on overflow (of the element count or of the bytes)
        r.ok = true;
    } catch (const InputError& e) {
        r = LayerShape {};
        r.ok = false;
        r.error = e.what();
    }
    r.ins = ins;
    if (!ins.empty())
        r.in = ins[0];
    return r;
}

void requireWindowsReachInput(const std::string& type, const std::string& axis, int64_t in, int64_t before, int64_t k,
    int64_t s, int64_t d, int64_t out)
{
    for (int64_t o = 0; o < out; ++o) {
        const int64_t start = o * s - before;
        const int64_t firstTap = start < 0 ? (-start + d - 1) / d : 0; // the first tap at or after index 0
        if (firstTap < k && start + firstTap * d < in)
            continue;
        std::ostringstream e;
        e << type << ": window " << o << " along " << axis << " reads only padding (it covers " << start << " … "
          << start + (k - 1) * d << (d != 1 ? " in steps of " + std::to_string(d) : std::string()) << " of an input of "
          << in << "): it has no maximum (PyTorch gives −inf there); use less padding, a smaller dilation or a "
          << "larger input";
        throw InputError(e.str());
    }
}

std::array<int64_t, 2> samePadding(int64_t in, int64_t k, int64_t s, int64_t d)
{
    const int64_t out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>((out - 1) * s + (k - 1) * d + 1 - in, 0);
    return { total / 2, total - total / 2 };
}

} // namespace convscope
