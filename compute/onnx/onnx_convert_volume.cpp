// ONNX's 3-D window operators on volumes [N, C, D, H, W] → ConvScope's 3-D kinds: Conv and ConvTranspose with a
// rank-5 weight (conv3d, conv_transpose3d), MaxPool and AveragePool with a 3-D kernel_shape, GlobalAveragePool and
// GlobalMaxPool of a volume (BatchNormalization is onnx_convert.cpp's, which picks batchnorm3d for a volume).
// auto_pad and output_shape become explicit padding here, from the known input size.
#include "compute/onnx/onnx_graph.h"

#include "compute/error.h"
#include "compute/shape_inference.h"

#include <algorithm>

namespace convscope::onnx {

namespace {

    using Node = ::onnx::NodeProto;

    Triple tripleAttr(const Attributes& a, const char* name, Triple fallback)
    {
        const auto v = a.getInts(name);
        if (!v)
            return fallback;
        if (v->size() != 3)
            a.fail(std::string("\"") + name + "\" " + npyDimsText(*v) + " is not 3-D");
        return { (*v)[0], (*v)[1], (*v)[2] };
    }

    Triple spatial(const Shape& s) { return { s.d, s.h, s.w }; }

    // ONNX pads [d0, h0, w0, d1, h1, w1] or auto_pad → explicit [front, back, top, bottom, left, right].
    Padding3d windowPadding(const Attributes& a, const Shape& in, Triple k, Triple s, Triple d)
    {
        const std::string autoPad = a.getString("auto_pad", "NOTSET");
        std::array<int64_t, 6> p {}; // ONNX order
        if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
            const Triple n = spatial(in);
            for (size_t ax = 0; ax < 3; ++ax) {
                const auto [small, large] = samePadding(n[ax], k[ax], s[ax], d[ax]);
                p[ax] = autoPad == "SAME_UPPER" ? small : large;
                p[ax + 3] = autoPad == "SAME_UPPER" ? large : small;
            }
        } else if (autoPad == "NOTSET") {
            const std::vector<int64_t> v = a.getInts("pads").value_or(std::vector<int64_t>(6, 0));
            if (v.size() != 6)
                a.fail("\"pads\" " + npyDimsText(v) + " is not that of a 3-D window");
            for (size_t i = 0; i < 6; ++i) {
                if (v[i] < 0)
                    a.fail("negative pads " + npyDimsText(v));
                p[i] = v[i];
            }
        } else if (autoPad != "VALID") {
            a.fail("auto_pad \"" + autoPad + "\" (ONNX has NOTSET, SAME_UPPER, SAME_LOWER, VALID)");
        }
        return { Padding3d::Mode::Explicit, p[0], p[3], p[1], p[4], p[2], p[5] };
    }

    std::shared_ptr<Layer::Embedded> weights(
        const GraphBuilder& g, const Node& n, const Attributes& a, const ConstTensor& w, int64_t biasSize)
    {
        auto e = std::make_shared<Layer::Embedded>();
        e->weight = toTensor(w, Shape::ncdhw(w.dims[0], w.dims[1], w.dims[2], w.dims[3], w.dims[4]), a, "the weight");
        if (const ConstTensor* b = g.optionalConstant(n, 2, a, "the bias"))
            e->bias = toTensor(*b, Shape::nchw(biasSize, 1, 1, 1), a, "the bias");
        return e;
    }

    void conv(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a, const Shape& in,
        const ConstTensor& w)
    {
        Conv3d c;
        c.out_channels = w.dims[0];
        c.kernel_size = tripleAttr(a, "kernel_shape", { w.dims[2], w.dims[3], w.dims[4] });
        if (c.kernel_size != Triple { w.dims[2], w.dims[3], w.dims[4] })
            a.fail("kernel_shape differs from the weight's " + npyDimsText(w.dims));
        c.stride = tripleAttr(a, "strides", { 1, 1, 1 });
        c.dilation = tripleAttr(a, "dilations", { 1, 1, 1 });
        c.groups = a.getInt("group", 1);
        if (c.groups < 1 || w.dims[1] * c.groups != in.c)
            a.fail("weight " + npyDimsText(w.dims) + " with group " + std::to_string(c.groups)
                + " does not fit an input of " + std::to_string(in.c) + " channels");
        c.padding = windowPadding(a, in, c.kernel_size, c.stride, c.dilation);
        auto e = weights(g, n, a, w, c.out_channels);
        c.bias = e->bias != nullptr;
        g.addLayer(name, c, { n.input(0) }, n.output(0), a, e);
    }

    void convTranspose(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a, const Shape& in,
        const ConstTensor& w)
    {
        ConvTranspose3d c;
        c.groups = a.getInt("group", 1);
        if (c.groups < 1 || w.dims[0] != in.c)
            a.fail("weight " + npyDimsText(w.dims) + " does not fit an input of " + std::to_string(in.c) + " channels");
        c.out_channels = w.dims[1] * c.groups;
        c.kernel_size = tripleAttr(a, "kernel_shape", { w.dims[2], w.dims[3], w.dims[4] });
        c.stride = tripleAttr(a, "strides", { 1, 1, 1 });
        c.dilation = tripleAttr(a, "dilations", { 1, 1, 1 });
        c.output_padding = tripleAttr(a, "output_padding", { 0, 0, 0 });
        const std::string autoPad = a.getString("auto_pad", "NOTSET");
        const auto outShape = a.getInts("output_shape");
        if (outShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
            // The crop that gives the wanted size: output_shape, or in · stride for SAME.
            const Triple n0 = spatial(in);
            Triple want = { n0[0] * c.stride[0], n0[1] * c.stride[1], n0[2] * c.stride[2] };
            if (outShape) {
                if (outShape->size() < 3)
                    a.fail("output_shape " + npyDimsText(*outShape) + " is not 3-D");
                std::copy(outShape->end() - 3, outShape->end(), want.begin());
            }
            std::array<int64_t, 3> before {}, after {};
            for (size_t ax = 0; ax < 3; ++ax) {
                const int64_t total = c.stride[ax] * (n0[ax] - 1) + c.output_padding[ax]
                    + (c.kernel_size[ax] - 1) * c.dilation[ax] + 1 - want[ax];
                // ONNX's rule with Python's floor division; a negative end pad is output_padding (as in 2-D).
                const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
                before[ax] = autoPad == "SAME_UPPER" ? half : total - half;
                after[ax] = total - before[ax];
                if (before[ax] < 0)
                    a.fail("output_shape " + std::to_string(want[ax]) + " needs negative padding at the start");
                if (after[ax] < 0) {
                    c.output_padding[ax] -= after[ax];
                    after[ax] = 0;
                }
            }
            c.padding = { Padding3d::Mode::Explicit, before[0], after[0], before[1], after[1], before[2], after[2] };
        } else {
            c.padding = windowPadding(a, in, c.kernel_size, c.stride, c.dilation);
        }
        auto e = weights(g, n, a, w, c.out_channels);
        c.bias = e->bias != nullptr;
        g.addLayer(name, c, { n.input(0) }, n.output(0), a, e);
    }

} // namespace

bool convertVolumeNode(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
{
    const std::string& op = n.op_type();
    if (n.input_size() < 1 || !g.isActivation(n.input(0)))
        return false;
    const Shape in = g.activation(n.input(0), a).shape;
    if (op == "Conv" || op == "ConvTranspose") {
        if (n.input_size() < 2 || !g.isConstant(n.input(1)))
            return false;
        const ConstTensor& w = g.constant(n.input(1), a, "the weight");
        if (w.dims.size() != 5)
            return false;
        if (!in.isVolume())
            a.fail("a 3-D weight " + npyDimsText(w.dims) + " on the input " + in.str() + " (" + in.rankText()
                + "); a 3-D convolution needs a volume [N, C, D, H, W]");
        if (op == "Conv")
            conv(g, n, name, a, in, w);
        else
            convTranspose(g, n, name, a, in, w);
        return true;
    }
    // The window operators only: any other operator on a volume (a Split of MViT's 5-D attention input) is the
    // operator table's.
    if (!in.isVolume()
        || (op != "MaxPool" && op != "AveragePool" && op != "GlobalAveragePool" && op != "GlobalMaxPool"))
        return false;
    for (int k = 1; k < n.output_size(); ++k)
        if (!n.output(k).empty() && g.uses.count(n.output(k)))
            a.fail("output " + std::to_string(k) + " (\"" + n.output(k) + "\") is used; ConvScope computes only "
                + "the first output of " + op);
    if (op == "MaxPool" || op == "AveragePool") {
        const auto ks = a.getInts("kernel_shape");
        if (!ks || ks->size() != 3)
            a.fail("kernel_shape " + (ks ? npyDimsText(*ks) : std::string("is missing")) + " on a volume " + in.str()
                + " (ConvScope's 3-D pools take a 3-D window)");
        const Triple k = { (*ks)[0], (*ks)[1], (*ks)[2] };
        const Triple s = tripleAttr(a, "strides", { 1, 1, 1 }); // ONNX's default stride is 1, PyTorch's the kernel
        const Triple d = tripleAttr(a, "dilations", { 1, 1, 1 });
        const bool ceil = a.getInt("ceil_mode", 0) != 0;
        const Padding3d p = windowPadding(a, in, k, s, d);
        if (op == "MaxPool") {
            MaxPool3d m;
            m.kernel_size = k, m.stride = s, m.dilation = d, m.padding = p, m.ceil_mode = ceil;
            g.addLayer(name, m, { n.input(0) }, n.output(0), a);
        } else {
            if (d != Triple { 1, 1, 1 })
                a.fail("dilations on AveragePool (PyTorch's AvgPool3d has none)");
            AvgPool3d m;
            m.kernel_size = k, m.stride = s, m.padding = p, m.ceil_mode = ceil;
            m.count_include_pad = a.getInt("count_include_pad", 0) != 0; // ONNX's default 0, PyTorch's True
            g.addLayer(name, m, { n.input(0) }, n.output(0), a);
        }
        return true;
    }
    if (op == "GlobalAveragePool") {
        g.addLayer(name, GlobalAvgPool3d {}, { n.input(0) }, n.output(0), a);
        return true;
    }
    if (op == "GlobalMaxPool") { // a max pool whose window is the whole D×H×W
        MaxPool3d m;
        m.kernel_size = { in.d, in.h, in.w };
        g.addLayer(name, m, { n.input(0) }, n.output(0), a);
        return true;
    }
    return false;
}

} // namespace convscope::onnx
