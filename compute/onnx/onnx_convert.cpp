// The converters of the ONNX operators with attributes to read (convolutions, pools, batch norm, Gemm, Pad) and the
// helpers every converter shares, with the attribute defaults of opsets 6 to 21; the operator table that dispatches to
// them is onnx_operators.cpp (Clip and PRelu: onnx_convert_activation.cpp). Anything that does not fit is an
// InputError naming the node and listing what ConvScope takes.
#include "compute/onnx/onnx_converters.h"

#include "compute/error.h"
#include "compute/shape_inference.h"

#include <cmath>
#include <limits>

namespace convscope::onnx {

using Node = ::onnx::NodeProto;

const std::string& in0(const Node& n, const Attributes& a)
{
    if (n.input_size() < 1 || n.input(0).empty())
        a.fail("the node has no input");
    return n.input(0);
}

// Outputs after the first (a pool's indices, batch norm's training statistics, dropout's mask) must be unused.
void onlyFirstOutput(const GraphBuilder& g, const Node& n, const Attributes& a)
{
    for (int k = 1; k < n.output_size(); ++k)
        if (!n.output(k).empty() && g.uses.count(n.output(k)))
            a.fail("output " + std::to_string(k) + " (\"" + n.output(k) + "\") is used; ConvScope computes only "
                + "the first output of " + n.op_type());
}

[[noreturn]] void refuse(const Node& n, const Attributes& a, const std::string& why)
{
    (void)n;
    a.fail(why + ". ConvScope takes " + supportedOperatorList());
}

namespace convert {

    Pair pairOf(const std::vector<int64_t>& v, const char* name, const Attributes& a)
    {
        if (v.size() != 2)
            a.fail(std::string("\"") + name + "\" " + npyDimsText(v) + " is not 2-D (ConvScope takes 2-D windows)");
        return { v[0], v[1] };
    }

    Pair pairAttr(const Attributes& a, const char* name, Pair fallback)
    {
        const auto v = a.getInts(name);
        return v ? pairOf(*v, name, a) : fallback;
    }

    void need4d(const Shape& s, const Attributes& a)
    {
        if (s.flat)
            a.fail("the input is " + s.str() + "; this operator needs an image [N, C, H, W]");
    }

    // ONNX pads [top, left, bottom, right] and auto_pad → ConvScope's Padding2d.
    Padding2d windowPadding(const Attributes& a, const Shape& in, Pair k, Pair s, Pair d)
    {
        const std::string autoPad = a.getString("auto_pad", "NOTSET");
        if (autoPad == "VALID")
            return { Padding2d::Mode::Valid, 0, 0, 0, 0 };
        if (autoPad == "SAME_UPPER")
            return { Padding2d::Mode::Same, 0, 0, 0, 0 };
        if (autoPad == "SAME_LOWER") {
            // As SAME_UPPER, with the odd extra pixel at the top / left.
            const auto [small_h, large_h] = samePadding(in.h, k[0], s[0], d[0]);
            const auto [small_w, large_w] = samePadding(in.w, k[1], s[1], d[1]);
            return { Padding2d::Mode::Explicit, large_h, small_h, large_w, small_w };
        }
        if (autoPad != "NOTSET")
            a.fail("auto_pad \"" + autoPad + "\" (ONNX has NOTSET, SAME_UPPER, SAME_LOWER, VALID)");
        const std::vector<int64_t> p = a.getInts("pads").value_or(std::vector<int64_t> { 0, 0, 0, 0 });
        if (p.size() != 4)
            a.fail("\"pads\" " + npyDimsText(p) + " is not 2-D");
        for (int64_t v : p)
            if (v < 0)
                a.fail("negative pads " + npyDimsText(p));
        return { Padding2d::Mode::Explicit, p[0], p[2], p[1], p[3] };
    }

    std::shared_ptr<Layer::Embedded> weights(
        GraphBuilder& g, const ConstTensor& w, const Shape& ws, const ConstTensor* b, int64_t bn, const Attributes& a)
    {
        (void)g;
        auto e = std::make_shared<Layer::Embedded>();
        e->weight = toTensor(w, ws, a, "the weight");
        if (b)
            e->bias = toTensor(*b, Shape::nchw(bn, 1, 1, 1), a, "the bias");
        return e;
    }

    void conv(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
    {
        const Shape in = g.activation(in0(n, a), a).shape;
        need4d(in, a);
        if (n.input_size() < 2)
            a.fail("Conv without a weight");
        const ConstTensor& w = g.constant(n.input(1), a, "the weight");
        if (w.dims.size() != 4)
            a.fail("weight " + npyDimsText(w.dims) + " is not that of a 2-D convolution (ConvScope takes 2-D Conv)");
        const ConstTensor* b = g.optionalConstant(n, 2, a, "the bias");
        Conv2d c;
        c.out_channels = w.dims[0];
        c.kernel_size = pairAttr(a, "kernel_shape", { w.dims[2], w.dims[3] });
        if (c.kernel_size != Pair { w.dims[2], w.dims[3] })
            a.fail("kernel_shape differs from the weight's " + npyDimsText(w.dims));
        c.stride = pairAttr(a, "strides", { 1, 1 });
        c.dilation = pairAttr(a, "dilations", { 1, 1 });
        c.groups = a.getInt("group", 1);
        if (c.groups < 1 || w.dims[1] * c.groups != in.c)
            a.fail("weight " + npyDimsText(w.dims) + " with group " + std::to_string(c.groups)
                + " does not fit an input of " + std::to_string(in.c) + " channels");
        c.padding = windowPadding(a, in, c.kernel_size, c.stride, c.dilation);
        c.bias = b != nullptr;
        auto e = weights(g, w, Shape::nchw(w.dims[0], w.dims[1], w.dims[2], w.dims[3]), b, c.out_channels, a);
        g.addLayer(name, c, { n.input(0) }, n.output(0), a, e);
    }

    void convTranspose(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
    {
        const Shape in = g.activation(in0(n, a), a).shape;
        need4d(in, a);
        if (n.input_size() < 2)
            a.fail("ConvTranspose without a weight");
        const ConstTensor& w = g.constant(n.input(1), a, "the weight");
        if (w.dims.size() != 4)
            a.fail("weight " + npyDimsText(w.dims) + " is not that of a 2-D transposed convolution");
        const ConstTensor* b = g.optionalConstant(n, 2, a, "the bias");
        ConvTranspose2d c;
        c.groups = a.getInt("group", 1);
        if (c.groups < 1 || w.dims[0] != in.c)
            a.fail("weight " + npyDimsText(w.dims) + " does not fit an input of " + std::to_string(in.c) + " channels");
        c.out_channels = w.dims[1] * c.groups;
        c.kernel_size = pairAttr(a, "kernel_shape", { w.dims[2], w.dims[3] });
        c.stride = pairAttr(a, "strides", { 1, 1 });
        c.dilation = pairAttr(a, "dilations", { 1, 1 });
        c.output_padding = pairAttr(a, "output_padding", { 0, 0 });
        const std::string autoPad = a.getString("auto_pad", "NOTSET");
        const auto outShape = a.getInts("output_shape");
        if (outShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
            // The padding that gives the wanted size: output_shape, or in · stride for SAME.
            Pair want = { in.h * c.stride[0], in.w * c.stride[1] };
            if (outShape) {
                const std::vector<int64_t>& o = *outShape;
                want = pairOf(
                    std::vector<int64_t>(o.end() - std::min<long>(2, long(o.size())), o.end()), "output_shape", a);
            }
            int64_t before[2], after[2];
            for (int ax = 0; ax < 2; ++ax) {
                const int64_t n0 = ax ? in.w : in.h;
                const int64_t total = c.stride[size_t(ax)] * (n0 - 1) + c.output_padding[size_t(ax)]
                    + (c.kernel_size[size_t(ax)] - 1) * c.dilation[size_t(ax)] + 1 - want[size_t(ax)];
                // ONNX's rule, with Python's floor division: a negative total pads the end negatively, which is
                // output_padding (torchvision-style exports of an odd output size have it).
                const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
                before[ax] = autoPad == "SAME_UPPER" ? half : total - half;
                after[ax] = total - before[ax];
                if (before[ax] < 0)
                    a.fail("output_shape " + std::to_string(want[size_t(ax)]) + " needs negative padding before the "
                        + std::string(ax ? "left" : "top") + " edge");
                if (after[ax] < 0) {
                    c.output_padding[size_t(ax)] -= after[ax];
                    after[ax] = 0;
                }
            }
            c.padding = { Padding2d::Mode::Explicit, before[0], after[0], before[1], after[1] };
        } else {
            c.padding = windowPadding(a, in, c.kernel_size, c.stride, c.dilation);
            if (c.padding.mode == Padding2d::Mode::Valid)
                c.padding = {};
        }
        c.bias = b != nullptr;
        auto e = weights(g, w, Shape::nchw(w.dims[0], w.dims[1], w.dims[2], w.dims[3]), b, c.out_channels, a);
        g.addLayer(name, c, { n.input(0) }, n.output(0), a, e);
    }

    void batchNorm(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
    {
        const Shape in = g.activation(in0(n, a), a).shape;
        if (n.input_size() < 5)
            a.fail("BatchNormalization needs scale, B, mean and var");
        if (a.getInt("training_mode", 0) != 0)
            a.fail("training_mode 1: ConvScope runs inference, with the running statistics");
        if (g.opset < 9 && a.getInt("spatial", 1) != 1)
            a.fail("spatial 0 (per-activation statistics); ConvScope takes per-channel batch norm");
        onlyFirstOutput(g, n, a);
        const double eps = a.getFloat("epsilon", 1e-5f);
        const std::vector<int64_t> d = in.dims();
        if (d.size() < 2)
            a.fail("BatchNormalization of the 1-D " + in.str());
        const Shape cs = Shape::nchw(d[1], 1, 1, 1);
        auto e = std::make_shared<Layer::Embedded>();
        e->weight = toTensor(g.constant(n.input(1), a, "scale"), cs, a, "scale");
        e->bias = toTensor(g.constant(n.input(2), a, "B"), cs, a, "B");
        e->runningMean = toTensor(g.constant(n.input(3), a, "mean"), cs, a, "mean");
        e->runningVar = toTensor(g.constant(n.input(4), a, "var"), cs, a, "var");
        if (d.size() < 4) {
            // PyTorch's BatchNorm1d ([N, C] or [N, C, L]): the same per-channel arithmetic on [N, C, L, 1], reshaped
            // there and back.
            const std::string image = n.output(0) + "#nchw", normed = n.output(0) + "#normed";
            g.addLayer(name + "_nchw", Reshape { { -1, d[1], d.size() == 3 ? d[2] : 1, 1 } }, { n.input(0) }, image, a);
            g.addLayer(name, BatchNorm2d { eps, true }, { image }, normed, a, e);
            if (d.size() == 2)
                return g.addLayer(name + "_back", Flatten {}, { normed }, n.output(0), a);
            return g.addLayer(name + "_back", Reshape { { -1, d[1], d[2] } }, { normed }, n.output(0), a);
        }
        // The same operator normalises images and volumes; ConvScope has a kind for each, as PyTorch does.
        const LayerSpec bn
            = in.isVolume() ? LayerSpec { BatchNorm3d { eps, true } } : LayerSpec { BatchNorm2d { eps, true } };
        g.addLayer(name, bn, { n.input(0) }, n.output(0), a, e);
    }

    // Padding more than half the (dilated) kernel on some side, which PyTorch refuses and ONNX allows.
    static bool padsBeyondHalf(const Padding2d& p, const Pair& k, const Pair& d)
    {
        const int64_t h = (d[0] * (k[0] - 1) + 1) / 2, w = (d[1] * (k[1] - 1) + 1) / 2;
        return p.top > h || p.bottom > h || p.left > w || p.right > w;
    }
    // Every window holds an input pixel: padding below the kernel on every side.
    static bool padsBelowKernel(const Padding2d& p, const Pair& k)
    {
        return p.top < k[0] && p.bottom < k[0] && p.left < k[1] && p.right < k[1];
    }

    // An average that does not count the padding (ONNX's count_include_pad 0, the default), padded beyond half its
    // kernel: zeros padded, an unpadded average of the whole window, then a mul by kernel area / valid count per
    // output position (a constant [1, 1, OH, OW] map) — the sum over the valid pixels divided by their count, to
    // float rounding. A window wholly in the padding has no average (ONNX's reference fails there): refused.
    void averageOverValid(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a, const Shape& in,
        Pair k, Pair s, const Padding2d& p)
    {
        const auto counts = [](int64_t size, int64_t before, int64_t after, int64_t kernel, int64_t stride) {
            std::vector<int64_t> c;
            for (int64_t start = -before; start + kernel <= size + after; start += stride)
                c.push_back(std::max<int64_t>(0, std::min(start + kernel, size) - std::max<int64_t>(start, 0)));
            return c;
        };
        const std::vector<int64_t> rows = counts(in.h, p.top, p.bottom, k[0], s[0]),
                                   cols = counts(in.w, p.left, p.right, k[1], s[1]);
        Binary scale;
        scale.op = Binary::Op::Mul;
        scale.constant_shape = { 1, 1, int64_t(rows.size()), int64_t(cols.size()) };
        for (const int64_t r : rows)
            for (const int64_t c : cols) {
                if (r * c == 0)
                    refuse(n, a,
                        "AveragePool whose window lies wholly in the padding (pads " + std::to_string(p.top) + ", "
                            + std::to_string(p.left) + ", " + std::to_string(p.bottom) + ", " + std::to_string(p.right)
                            + " for a " + std::to_string(k[0]) + "×" + std::to_string(k[1])
                            + " kernel): it averages no pixel");
                scale.constant.push_back(float(double(k[0] * k[1]) / double(r * c)));
            }
        Pad pad;
        pad.padding = { p.top, p.bottom, p.left, p.right };
        g.addLayer(name + "_pad", pad, { n.input(0) }, n.output(0) + "#padded", a);
        AvgPool2d m;
        m.kernel_size = k, m.stride = s;
        g.addLayer(name + "_sum", m, { n.output(0) + "#padded" }, n.output(0) + "#whole", a);
        g.addLayer(name, scale, { n.output(0) + "#whole" }, n.output(0), a);
    }

    void pool(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
    {
        const Shape in = g.activation(in0(n, a), a).shape;
        need4d(in, a);
        onlyFirstOutput(g, n, a);
        const auto ks = a.getInts("kernel_shape");
        if (!ks)
            a.fail("kernel_shape is missing");
        const Pair k = pairOf(*ks, "kernel_shape", a);
        const Pair s = pairAttr(a, "strides", { 1, 1 }); // ONNX's default stride is 1, PyTorch's the kernel
        const Pair d = pairAttr(a, "dilations", { 1, 1 });
        const bool ceil = a.getInt("ceil_mode", 0) != 0;
        Padding2d p = windowPadding(a, in, k, s, d);
        const bool isMax = n.op_type() == "MaxPool";
        if (p.mode == Padding2d::Mode::Explicit && !ceil && padsBeyondHalf(p, k, d)
            && (isMax ? d == Pair { 1, 1 } && padsBelowKernel(p, k) : a.getInt("count_include_pad", 0) != 0)) {
            // ONNX allows padding beyond half the kernel, PyTorch does not: the padding becomes a pad layer of its own
            // — replicated edges for a max pool (each window still holds the edge pixel its padding repeats), zeros
            // for an average that counts the padding — and the pool reads it unpadded.
            Pad pad;
            pad.padding = { p.top, p.bottom, p.left, p.right };
            pad.mode = isMax ? Pad::Mode::Replicate : Pad::Mode::Constant;
            const std::string padded = n.output(0) + "#padded";
            g.addLayer(name + "_pad", pad, { n.input(0) }, padded, a);
            p = {};
            if (isMax) {
                MaxPool2d m;
                m.kernel_size = k, m.stride = s, m.dilation = d, m.padding = p;
                return g.addLayer(name, m, { padded }, n.output(0), a);
            }
            AvgPool2d m;
            m.kernel_size = k, m.stride = s, m.padding = p;
            return g.addLayer(name, m, { padded }, n.output(0), a);
        }
        if (!isMax && p.mode == Padding2d::Mode::Explicit && !ceil && padsBeyondHalf(p, k, d) && d == Pair { 1, 1 })
            return averageOverValid(g, n, name, a, in, k, s, p);
        if (isMax) {
            if (a.getInt("storage_order", 0) != 0 && n.output_size() > 1)
                a.fail("storage_order 1");
            MaxPool2d m;
            m.kernel_size = k, m.stride = s, m.dilation = d, m.padding = p, m.ceil_mode = ceil;
            g.addLayer(name, m, { n.input(0) }, n.output(0), a);
        } else {
            if (d != Pair { 1, 1 })
                a.fail("dilations on AveragePool (PyTorch's AvgPool2d has none)");
            AvgPool2d m;
            m.kernel_size = k, m.stride = s, m.padding = p, m.ceil_mode = ceil;
            m.count_include_pad = a.getInt("count_include_pad", 0) != 0; // ONNX's default 0, PyTorch's True
            g.addLayer(name, m, { n.input(0) }, n.output(0), a);
        }
    }

    void gemm(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
    {
        std::string x = in0(n, a);
        if (n.op_type() == "Gemm" && a.getInt("transA", 0) != 0) { // Aᵀ: a transpose layer first
            if (g.activation(x, a).shape.ndim() != 2)
                a.fail("transA 1 on an input of rank " + std::to_string(g.activation(x, a).shape.ndim()));
            g.addLayer(name + "_transA", Transpose { { 1, 0 } }, { x }, n.output(0) + "#transA", a);
            x = n.output(0) + "#transA";
        }
        const Shape in = g.activation(x, a).shape;
        if (n.input_size() < 2)
            a.fail("Gemm without B");
        ConstTensor w = g.constant(n.input(1), a, "B");
        if (w.dims.size() != 2)
            a.fail("B " + npyDimsText(w.dims) + " is not a matrix");
        const bool transB = n.op_type() == "Gemm" && a.getInt("transB", 0) != 0;
        const int64_t inF = transB ? w.dims[1] : w.dims[0], outF = transB ? w.dims[0] : w.dims[1];
        if (!w.isFloat)
            a.fail("B must be float");
        if (!transB) { // [in, out] → [out, in], PyTorch's Linear layout
            std::vector<float> t(w.f.size());
            for (int64_t i = 0; i < inF; ++i)
                for (int64_t o = 0; o < outF; ++o)
                    t[size_t(o * inF + i)] = w.f[size_t(i * outF + o)];
            w.f = std::move(t);
        }
        const float alpha = n.op_type() == "Gemm" ? a.getFloat("alpha", 1.0f) : 1.0f;
        for (float& v : w.f)
            v *= alpha;
        const int64_t features = in.flat ? in.c : in.c * in.d * in.h * in.w;
        if (features != inF || (!in.flat && (in.h != 1 || in.w != 1)))
            a.fail("B " + npyDimsText(w.dims) + " does not fit the input " + in.str());
        Linear l;
        l.out_features = outF;
        auto e = std::make_shared<Layer::Embedded>();
        e->weight = toTensor(w, Shape::nchw(outF, inF, 1, 1), a, "B");
        if (n.op_type() == "Gemm" && n.input_size() > 2 && g.isActivation(n.input(2))) { // C computed: a binary add
            if (a.getFloat("beta", 1.0f) != 1.0f)
                refuse(n, a, "Gemm with a computed C and beta " + std::to_string(a.getFloat("beta", 1.0f)));
            l.bias = false;
            g.addLayer(name, l, { x }, n.output(0) + "#product", a, e);
            g.addLayer(name + "_bias", Binary {}, { n.output(0) + "#product", n.input(2) }, n.output(0), a);
            return;
        }
        const ConstTensor* c = n.op_type() == "Gemm" ? g.optionalConstant(n, 2, a, "C") : nullptr;
        if (c && c->isFloat && c->numel() != outF && c->numel() != 1) { // a matrix C: a binary add after the product
            l.bias = false;
            Binary add;
            add.constant_shape = c->dims;
            for (const float v : c->f)
                add.constant.push_back(a.getFloat("beta", 1.0f) * v);
            g.addLayer(name, l, { x }, n.output(0) + "#product", a, e);
            g.addLayer(name + "_bias", add, { n.output(0) + "#product" }, n.output(0), a);
            return;
        }
        if (c) {
            const float beta = a.getFloat("beta", 1.0f);
            if (!c->isFloat || (c->numel() != outF && c->numel() != 1))
                a.fail("C " + npyDimsText(c->dims) + " is not a bias of " + std::to_string(outF) + " features");
            ConstTensor bias;
            bias.dims = { outF };
            bias.f.assign(size_t(outF), 0.0f);
            for (int64_t o = 0; o < outF; ++o)
                bias.f[size_t(o)] = beta * c->f[size_t(c->numel() == 1 ? 0 : o)];
            e->bias = toTensor(bias, Shape::nchw(outF, 1, 1, 1), a, "C");
            l.bias = true;
        } else {
            l.bias = false;
        }
        g.addLayer(name, l, { x }, n.output(0), a, e);
    }

    // Add of a layer's output and a constant: the bias of a MatMul turned into a bias-less linear layer.
    bool foldLinearBias(GraphBuilder& g, const Node& n, const Attributes& a)
    {
        if (n.input_size() != 2)
            return false;
        const bool firstAct = g.isActivation(n.input(0));
        const std::string& act = n.input(firstAct ? 0 : 1);
        const std::string& cst = n.input(firstAct ? 1 : 0);
        if (!g.isActivation(act) || !g.isConstant(cst))
            return false;
        const Activation& x = g.activation(act, a);
        if (x.layer < 0 || x.layer != int(g.net.layers.size()) - 1 || g.uses[act] != 1)
            return false;
        Layer& l = g.net.layers[size_t(x.layer)];
        auto* lin = std::get_if<Linear>(&l.spec);
        if (!lin || lin->bias)
            return false;
        const ConstTensor& c = g.constants[cst];
        if (!c.isFloat || c.numel() != lin->out_features)
            return false;
        auto e = std::make_shared<Layer::Embedded>(*l.embedded);
        e->bias = toTensor(c, Shape::nchw(lin->out_features, 1, 1, 1), a, "the bias");
        lin->bias = true;
        l.embedded = std::move(e);
        g.activations[n.output(0)] = x;
        return true;
    }

    std::vector<std::string> activationInputs(const GraphBuilder& g, const Node& n, const Attributes& a)
    {
        std::vector<std::string> ins;
        for (const auto& in : n.input()) {
            if (!g.isActivation(in))
                refuse(n, a,
                    n.op_type() + " of the constant \"" + in + "\" (ConvScope's " + n.op_type()
                        + " reads layers' outputs)");
            ins.push_back(in);
        }
        return ins;
    }

    void pad(GraphBuilder& g, const Node& n, const std::string& name, const Attributes& a)
    {
        const Shape in = g.activation(in0(n, a), a).shape;
        const int64_t r = int64_t(in.dims().size());
        std::vector<int64_t> p;
        double value = 0;
        if (g.opset < 11) {
            p = a.getInts("pads").value_or(std::vector<int64_t> {});
            value = a.getFloat("value", 0.0f);
        } else {
            if (n.input_size() < 2)
                a.fail("Pad without pads");
            p = g.constant(n.input(1), a, "pads").ints(a.where() + ": pads");
            if (const ConstTensor* v = g.optionalConstant(n, 2, a, "constant_value"); v && v->numel() > 0)
                value = v->at(0);
            if (const ConstTensor* axes = g.optionalConstant(n, 3, a, "axes")) {
                // opset 18: pads for the listed axes only; spread them over all.
                const std::vector<int64_t> ax = axes->ints(a.where() + ": axes");
                if (p.size() != 2 * ax.size())
                    a.fail("pads and axes differ in length");
                std::vector<int64_t> full(size_t(2 * r), 0);
                for (size_t k = 0; k < ax.size(); ++k) {
                    const int64_t d = ax[k] < 0 ? ax[k] + r : ax[k];
                    if (d < 0 || d >= r)
                        a.fail("axis " + std::to_string(ax[k]) + " out of range");
                    full[size_t(d)] = p[k];
                    full[size_t(d + r)] = p[k + ax.size()];
                }
                p = full;
            }
        }
        if (int64_t(p.size()) != 2 * r)
            a.fail("pads " + npyDimsText(p) + " are not those of the " + std::to_string(r) + "-D input " + in.str());
        for (int64_t v : p)
            if (v < 0)
                refuse(n, a, "negative pads (cropping)");
        if (r != 4 || in.flat || p[0] || p[1] || p[4] || p[5]) {
            // Not H and W of an image (Swin pads H and W of [N, H, W, C]): constant padding as concats along each
            // padded axis; the other modes are the pad kind's, on H and W only.
            if (a.getString("mode", "constant") != "constant")
                refuse(n, a,
                    "Pad mode \"" + a.getString("mode", "constant") + "\" of " + in.str() + " by " + npyDimsText(p)
                        + " (ConvScope reflects and replicates H and W of an image)");
            return padAxes(g, n, name, a, p, value);
        }
        const std::string mode = a.getString("mode", "constant");
        Pad l;
        l.padding = { p[2], p[6], p[3], p[7] };
        l.value = value;
        if (mode == "constant")
            l.mode = Pad::Mode::Constant;
        else if (mode == "reflect")
            l.mode = Pad::Mode::Reflect;
        else if (mode == "edge")
            l.mode = Pad::Mode::Replicate;
        else
            refuse(n, a, "Pad mode \"" + mode + "\"");
        g.addLayer(name, l, { n.input(0) }, n.output(0), a);
    }

} // namespace convert

} // namespace convscope::onnx
