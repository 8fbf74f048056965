// ONNX Resize (opsets 10 to 21) and Upsample (7 to 9) into the resize kind (compute/layer_spec.h's Resize). Its
// scales, sizes (and roi) must be constants — initializers, Constant nodes, or shape arithmetic the folder computed
// (torchvision's FCN and DeepLabV3 take the sizes from Shape → Slice → Concat). Only the spatial axes may change: N and
// C keep scale 1. Refused with the node named: tf_crop_and_resize, antialias when downscaling with linear or cubic,
// rank other than 4 or 5, and align_corners (pytorch_half_pixel to 1) by scales whose resized length is fractional.
#include "compute/onnx/onnx_converters.h"

#include "compute/error.h"
#include "compute/resize.h"

#include <cmath>

namespace convscope::onnx::convert {

namespace {

    using Node = ::onnx::NodeProto;

    std::string numbers(const std::vector<double>& v)
    {
        std::string s = "[";
        for (size_t k = 0; k < v.size(); ++k)
            s += (k ? ", " : "") + std::to_string(v[k]);
        return s + "]";
    }

    // scales or sizes given for `axes` only (opset 18): spread over every axis, the others 1 (scales) or kept (sizes).
    template <typename V>
    std::vector<V> spread(const std::vector<V>& given, const std::vector<int64_t>& axes, const std::vector<V>& full,
        int64_t rank, const Attributes& a)
    {
        if (axes.empty())
            return given;
        if (given.size() != axes.size())
            a.fail("Resize's axes " + npyDimsText(axes) + " and its scales or sizes differ in length");
        std::vector<V> out = full;
        for (size_t k = 0; k < axes.size(); ++k) {
            const int64_t ax = axes[k] < 0 ? axes[k] + rank : axes[k];
            if (ax < 0 || ax >= rank)
                a.fail(
                    "Resize's axis " + std::to_string(axes[k]) + " is out of range for rank " + std::to_string(rank));
            out[size_t(ax)] = given[k];
        }
        return out;
    }

} // namespace

void resize(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
{
    const Shape in = g.activation(in0(n, a), a).shape;
    const bool upsample = n.op_type() == "Upsample";
    if (in.flat)
        refuse(n, a, n.op_type() + " of the 2-D " + in.str() + " (ConvScope resizes images and volumes)");
    const std::vector<int64_t> dims = in.dims();
    const int64_t rank = int64_t(dims.size());
    Resize l;
    l.scale_factor.clear();

    // The operator's version of the attributes.
    const std::string mode = a.getString("mode", "nearest");
    if (mode == "nearest")
        l.mode = Resize::Mode::Nearest;
    else if (mode == "linear" || mode == "bilinear")
        l.mode = Resize::Mode::Linear;
    else if (mode == "cubic" && !upsample && g.opset >= 11)
        l.mode = Resize::Mode::Cubic;
    else
        refuse(n, a, n.op_type() + " mode \"" + mode + "\"");
    const bool opset10 = upsample || g.opset < 11;
    if (opset10) {
        // Upsample and Resize-10: asymmetric coordinates; onnxruntime's nearest floors when upsampling and takes
        // the ceiling when downsampling (set below from the scales).
        l.coordinate_transformation_mode = Resize::Coordinates::Asymmetric;
        l.nearest_mode = Resize::NearestMode::Floor;
    } else {
        const std::string ctm = a.getString("coordinate_transformation_mode", "half_pixel");
        if (ctm == "tf_crop_and_resize")
            refuse(n, a,
                "Resize with coordinate_transformation_mode \"tf_crop_and_resize\" (a crop by roi with an "
                "extrapolation value; ConvScope's resize reads the whole input)");
        const auto c = resizeCoordinatesFrom(ctm);
        if (!c || (ctm == "half_pixel_symmetric" && g.opset < 19) || (ctm == "tf_half_pixel_for_nn" && g.opset >= 13))
            a.fail("Resize has an unknown coordinate_transformation_mode \"" + ctm + "\" for opset "
                + std::to_string(g.opset));
        l.coordinate_transformation_mode = *c;
        const std::string nm = a.getString("nearest_mode", "round_prefer_floor");
        const auto m = resizeNearestModeFrom(nm);
        if (!m)
            a.fail("Resize has an unknown nearest_mode \"" + nm + "\"");
        l.nearest_mode = *m;
        l.cubic_coeff_a = a.getFloat("cubic_coeff_a", -0.75f);
        l.exclude_outside = a.getInt("exclude_outside", 0) != 0;
    }

    // Scales or sizes, over every axis (N and C included).
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    const std::vector<int64_t> axes
        = g.opset >= 18 && !opset10 ? a.getInts("axes").value_or(std::vector<int64_t> {}) : std::vector<int64_t> {};
    if (upsample && g.opset < 9) {
        const auto s = a.getFloats("scales");
        if (!s)
            a.fail("Upsample without scales");
        scales.assign(s->begin(), s->end());
    } else {
        const int scalesInput = opset10 ? 1 : 2;
        if (const ConstTensor* s = g.optionalConstant(n, scalesInput, a, "scales"); s && s->numel() > 0)
            for (int64_t k = 0; k < s->numel(); ++k)
                scales.push_back(s->at(size_t(k)));
        if (!opset10)
            if (const ConstTensor* s = g.optionalConstant(n, 3, a, "sizes"); s && s->numel() > 0)
                sizes = s->ints(a.where() + ": sizes");
        if (!scales.empty() && !sizes.empty())
            a.fail("Resize has both scales and sizes (ONNX allows one)");
        if (scales.empty() && sizes.empty())
            a.fail(n.op_type() + " has neither scales nor sizes");
    }
    if (!scales.empty())
        scales = spread(scales, axes, std::vector<double>(size_t(rank), 1.0), rank, a);
    if (!sizes.empty())
        sizes = spread(sizes, axes, dims, rank, a);
    if (rank != 4 && rank != 5)
        refuse(n, a, n.op_type() + " of a rank-" + std::to_string(rank) + " tensor (ConvScope resizes 4-D and 5-D)");
    if (!scales.empty()) {
        if (int64_t(scales.size()) != rank)
            a.fail(n.op_type() + "'s scales " + numbers(scales) + " do not match the rank-" + std::to_string(rank)
                + " input " + in.str());
        if (scales[0] != 1 || scales[1] != 1)
            refuse(n, a,
                n.op_type() + " with scales " + numbers(scales)
                    + " (ConvScope resizes the spatial axes only: scale 1 on N and C)");
        for (int64_t k = 2; k < rank; ++k) {
            if (!(scales[size_t(k)] > 0) || std::isinf(scales[size_t(k)]))
                a.fail(n.op_type() + "'s scales " + numbers(scales) + " must be positive");
            l.scale_factor.push_back(scales[size_t(k)]);
            // align_corners divides by the resized length less one, and pytorch_half_pixel tests it for 1. Given
            // scales whose product with the input is not whole, ONNX's reference takes that length as in · scale
            // (a fraction), onnxruntime and PyTorch as the output size: the two disagree, so ConvScope does not pick.
            const float length = float(dims[size_t(k)]) * float(scales[size_t(k)]); // as ONNX computes it
            const bool whole = std::floor(length) == length;
            const auto c = l.coordinate_transformation_mode;
            if (!whole
                && (c == Resize::Coordinates::AlignCorners
                    || (c == Resize::Coordinates::PytorchHalfPixel && std::floor(length) == 1)))
                refuse(n, a,
                    "Resize " + std::string(resizeCoordinatesName(c)) + " by the scale "
                        + numbers({ scales[size_t(k)] }) + " of axis " + std::to_string(k) + " (size "
                        + std::to_string(dims[size_t(k)]) + "): its resized length " + std::to_string(length)
                        + " is not whole, and ONNX's reference reads it as that fraction where onnxruntime and "
                          "PyTorch read the output size; give the Resize sizes instead of scales");
        }
    } else {
        if (int64_t(sizes.size()) != rank)
            a.fail("Resize's sizes " + npyDimsText(sizes) + " do not match the rank-" + std::to_string(rank) + " input "
                + in.str());
        if (sizes[0] != dims[0] || sizes[1] != dims[1])
            refuse(n, a,
                "Resize to sizes " + npyDimsText(sizes) + " from " + in.str()
                    + " (ConvScope resizes the spatial axes only: N and C kept)");
        for (int64_t k = 2; k < rank; ++k)
            l.size.push_back(sizes[size_t(k)]);
        const std::string policy = g.opset >= 18 ? a.getString("keep_aspect_ratio_policy", "stretch") : "stretch";
        if (policy == "not_larger" || policy == "not_smaller") {
            // One scale for the resized axes (the smallest or largest ratio); each size is round(scale · in).
            double s = policy == "not_larger" ? 1e300 : 0;
            for (int64_t k = 2; k < rank; ++k) {
                if (!axes.empty() && sizes[size_t(k)] == dims[size_t(k)])
                    continue; // an axis not listed keeps its size
                const double r = double(sizes[size_t(k)]) / double(dims[size_t(k)]);
                s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
            }
            for (int64_t k = 2; k < rank; ++k) {
                l.scale_factor.push_back(s);
                l.size[size_t(k - 2)] = int64_t(std::floor(s * double(dims[size_t(k)]) + 0.5));
            }
        } else if (policy != "stretch") {
            a.fail("Resize has an unknown keep_aspect_ratio_policy \"" + policy + "\"");
        }
    }
    if (opset10 && l.mode == Resize::Mode::Nearest) {
        bool down = false, up = false;
        for (double s : l.scale_factor)
            (s < 1 ? down : up) = true;
        if (down && up)
            refuse(n, a,
                n.op_type()
                    + " nearest that shrinks one axis and grows another (onnxruntime rounds each axis its "
                      "own way; ConvScope's resize has one nearest_mode)");
        if (down)
            l.nearest_mode = Resize::NearestMode::Ceil;
    }
    if (g.opset >= 18 && !opset10 && a.getInt("antialias", 0) != 0 && l.mode != Resize::Mode::Nearest) {
        const LayerShape s = inferResize(l, in);
        const bool shrinks = s.out.d < in.d || s.out.h < in.h || s.out.w < in.w;
        if (shrinks)
            refuse(n, a, "Resize with antialias = 1 that downscales (ConvScope's resize has no antialiasing filter)");
    }
    g.addLayer(name, l, { n.input(0) }, n.output(0), a);
}

} // namespace convscope::onnx::convert
