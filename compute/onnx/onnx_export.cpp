// Each layer kind becomes the ONNX operator PyTorch's exporter writes for the same torch.nn module, so a model
// written here reads like one exported from PyTorch: conv2d → Conv, linear → Gemm (transB), batchnorm2d →
// BatchNormalization, relu6 → Clip(0, 6), hardtanh → Clip(min_val, max_val),
// prelu → PRelu, silu → Sigmoid·Mul, pad → Pad, resize → Resize, and so on. Tensor names are the layer
// names; initializers are "<layer>.weight" etc. The batch dimension is symbolic ("batch"), so a runtime can feed any.
#include "compute/onnx/onnx_export.h"

#include "compute/binary.h"
#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/linear_geometry.h"
#include "compute/materialize.h"
#include "compute/normalization.h"
#include "compute/onnx/onnx_attribute_write.h"
#include "compute/reduce.h"
#include "compute/resize.h"
#include "compute/shape_inference.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>

#include "convscope_config.h"

namespace convscope::onnx {

namespace {

    using ::onnx::AttributeProto;
    using ::onnx::NodeProto;
    using ::onnx::TensorProto;

    // A Reshape's shape input for a layer whose output keeps the input's batch: 0 there (ONNX's "copy the dim"), so
    // the symbolic batch stays symbolic; the output's own dims elsewhere.
    std::vector<int64_t> reshapeDims(const LayerShape& shape)
    {
        std::vector<int64_t> dims = shape.out.dims();
        if (dims[0] == shape.in.dims()[0])
            dims[0] = 0;
        return dims;
    }

    class Writer {
    public:
        Writer(const Network& net, const ShapeReport& shapes, ::onnx::GraphProto* graph)
            : m_net(net)
            , m_shapes(shapes)
            , m_graph(graph)
        {
        }

        NodeProto* node(
            const std::string& op, const std::string& name, std::vector<std::string> inputs, const std::string& output)
        {
            NodeProto* n = m_graph->add_node();
            n->set_op_type(op);
            n->set_name(name);
            for (auto& i : inputs)
                n->add_input(i);
            n->add_output(output);
            return n;
        }

        // An initializer of `dims` from float data (raw little-endian, as PyTorch writes it).
        std::string floats(const std::string& name, const std::vector<int64_t>& dims, const float* data, size_t count)
        {
            TensorProto* t = m_graph->add_initializer();
            t->set_name(name);
            t->set_data_type(TensorProto::FLOAT);
            for (int64_t d : dims)
                t->add_dims(d);
            t->set_raw_data(std::string(reinterpret_cast<const char*>(data), count * sizeof(float)));
            return name;
        }
        std::string tensor(const std::string& name, const std::vector<int64_t>& dims, const Tensor& t)
        {
            return floats(name, dims, t.data(), size_t(t.numel()));
        }
        std::string scalar(const std::string& name, float v) { return floats(name, {}, &v, 1); }
        std::string int64s(const std::string& name, const std::vector<int64_t>& v)
        {
            TensorProto* t = m_graph->add_initializer();
            t->set_name(name);
            t->set_data_type(TensorProto::INT64);
            t->add_dims(int64_t(v.size()));
            for (int64_t x : v)
                t->add_int64_data(x);
            return name;
        }

        // linear on the last axis of a rank other than [N, F] (compute/linear_geometry.h): MatMul(x, Wᵀ) and an Add of
        // the bias, which the importer folds back into one linear layer.
        void writeLastAxisLinear(const Layer& l, const Linear& k, const std::string& x, const std::string& out)
        {
            const int64_t o = l.weight->shape().n, i = l.weight->shape().c;
            std::vector<float> wt(size_t(o * i));
            for (int64_t r = 0; r < o; ++r)
                for (int64_t c = 0; c < i; ++c)
                    wt[size_t(c * o + r)] = l.weight->data()[r * i + c];
            const std::string w = floats(l.name + ".weight_t", { i, o }, wt.data(), wt.size());
            const bool bias = k.bias && l.bias;
            node("MatMul", bias ? l.name + "/matmul" : l.name, { x, w }, bias ? l.name + "/matmul" : out);
            if (bias)
                node("Add", l.name, { l.name + "/matmul", tensor(l.name + ".bias", { o }, *l.bias) }, out);
        }

        // The tensor names layer i reads.
        std::vector<std::string> inputsOf(size_t i) const
        {
            std::vector<std::string> names;
            for (int s : m_shapes.layers[i].sources)
                names.push_back(s < 0 ? std::string(kNetworkInputName) : m_net.layers[size_t(s)].name);
            return names;
        }

        void layer(size_t i);

        // layer_norm → LayerNormalization (opset 17: axis, epsilon, Scale and B of dims normalized_shape);
        // instance_norm → InstanceNormalization (scale, B of [C]); group_norm → PyTorch's own export before opset 18:
        // Reshape to [N, G, −1], InstanceNormalization with scale 1 and B 0, Reshape back, Mul by the weight and Add
        // the bias as [C, 1, …]. Weight and bias are the materialised ones (1 and 0 where the layer has none).
        void writeNormalization(const Layer& l, const LayerShape& shape, const std::string& x, const std::string& out)
        {
            const std::vector<int64_t> dims = shape.in.dims();
            const int64_t rank = int64_t(dims.size());
            if (const auto* k = std::get_if<LayerNorm>(&l.spec)) {
                const auto& ns = k->normalized_shape;
                NodeProto* n = node("LayerNormalization", l.name,
                    { x, tensor(l.name + ".weight", ns, *l.weight), tensor(l.name + ".bias", ns, *l.bias) }, out);
                integer(n, "axis", rank - int64_t(ns.size()));
                real(n, "epsilon", k->eps);
                return;
            }
            const int64_t c = dims[1];
            if (const auto* k = std::get_if<InstanceNorm>(&l.spec)) {
                NodeProto* n = node("InstanceNormalization", l.name,
                    { x, tensor(l.name + ".weight", { c }, *l.weight), tensor(l.name + ".bias", { c }, *l.bias) }, out);
                real(n, "epsilon", k->eps);
                return;
            }
            const auto& k = std::get<GroupNorm>(l.spec);
            const int64_t g = k.num_groups;
            std::vector<float> one(size_t(g), 1.0f), zero(size_t(g), 0.0f);
            std::vector<int64_t> back = dims, perChannel(size_t(std::max<int64_t>(rank - 1, 1)), 1);
            back[0] = 0;
            perChannel[0] = c;
            const std::string grouped = l.name + "/grouped", normalized = l.name + "/normalized",
                              ungrouped = l.name + "/ungrouped", scaled = l.name + "/scaled";
            node("Reshape", grouped, { x, int64s(l.name + ".grouped_shape", { 0, g, -1 }) }, grouped);
            real(node("InstanceNormalization", normalized,
                     { grouped, floats(l.name + ".group_scale", { g }, one.data(), one.size()),
                         floats(l.name + ".group_bias", { g }, zero.data(), zero.size()) },
                     normalized),
                "epsilon", k.eps);
            node("Reshape", ungrouped, { normalized, int64s(l.name + ".shape", back) }, ungrouped);
            node("Mul", scaled, { ungrouped, tensor(l.name + ".weight", perChannel, *l.weight) }, scaled);
            node("Add", l.name, { scaled, tensor(l.name + ".bias", perChannel, *l.bias) }, out);
        }

        // gelu, softplus, mish, unary in opset 17's operators (Gelu is opset 20's and Mish 18's): GELU as the Erf (or
        // Tanh) formula PyTorch exports, softplus as Softplus of β·x divided by β with PyTorch's threshold as a Where
        // (left out for β 1 and a threshold ≥ 15, where log(1 + e^x) and x agree to FP32's precision), mish as
        // x · tanh(softplus(x)).
        void writeMath(const MathOp& op, const std::string& name, const std::string& x, const std::string& out)
        {
            const auto mul = [&](const std::string& step, const std::string& a, const std::string& b) {
                node("Mul", name + step, { a, b }, name + step);
                return name + step;
            };
            switch (op.fn) {
            case MathFn::GeluErf:
            case MathFn::GeluTanh: {
                std::string inner;
                if (op.fn == MathFn::GeluErf) {
                    node("Div", name + "/div", { x, scalar(name + ".sqrt2", 1.4142135623730951f) }, name + "/div");
                    node("Erf", name + "/erf", { name + "/div" }, name + "/erf");
                    inner = name + "/erf";
                } else {
                    const std::string cube = mul("/cube", mul("/square", x, x), x);
                    const std::string term = mul("/term", cube, scalar(name + ".kappa", 0.044715f));
                    node("Add", name + "/sum", { x, term }, name + "/sum");
                    const std::string scaled
                        = mul("/scaled", name + "/sum", scalar(name + ".beta", 0.7978845608028654f));
                    node("Tanh", name + "/tanh", { scaled }, name + "/tanh");
                    inner = name + "/tanh";
                }
                node("Add", name + "/add", { inner, scalar(name + ".one", 1.0f) }, name + "/add");
                const std::string prod = mul("/mul", x, name + "/add");
                node("Mul", name, { prod, scalar(name + ".half", 0.5f) }, out);
                return;
            }
            case MathFn::Softplus: {
                if (op.a == 1.0 && op.b >= 15.0) {
                    node("Softplus", name, { x }, out);
                    return;
                }
                const std::string bx = mul("/beta_x", x, scalar(name + ".beta", float(op.a)));
                node("Softplus", name + "/softplus", { bx }, name + "/softplus");
                node("Div", name + "/div", { name + "/softplus", scalar(name + ".beta_div", float(op.a)) },
                    name + "/div");
                node("Greater", name + "/above", { bx, scalar(name + ".threshold", float(op.b)) }, name + "/above");
                node("Where", name, { name + "/above", x, name + "/div" }, out);
                return;
            }
            case MathFn::Mish:
                node("Softplus", name + "/softplus", { x }, name + "/softplus");
                node("Tanh", name + "/tanh", { name + "/softplus" }, name + "/tanh");
                node("Mul", name, { x, name + "/tanh" }, out);
                return;
            case MathFn::Exp:
                node("Exp", name, { x }, out);
                return;
            case MathFn::Log:
                node("Log", name, { x }, out);
                return;
            case MathFn::Sqrt:
                node("Sqrt", name, { x }, out);
                return;
            case MathFn::Reciprocal:
                node("Reciprocal", name, { x }, out);
                return;
            case MathFn::Neg:
                node("Neg", name, { x }, out);
                return;
            case MathFn::Abs:
                node("Abs", name, { x }, out);
                return;
            case MathFn::Erf:
                node("Erf", name, { x }, out);
                return;
            }
        }

        // resize → Resize (opset 13's): scales when the size follows from them, else sizes (with the network's batch).
        template <typename Fail>
        void writeResize(
            const Resize& k, const LayerShape& shape, const std::string& name, const std::string& x, const Fail& fail)
        {
            const ResizePlan p = resizePlan(k, shape);
            const bool volume = shape.in.isVolume();
            bool byScales = !k.scale_factor.empty();
            std::vector<float> scales = { 1, 1 };
            for (int ax = volume ? 0 : 1; ax < 3; ++ax) {
                scales.push_back(float(p.axis[ax].scale));
                byScales
                    = byScales && int64_t(std::floor(double(p.axis[ax].in) * double(scales.back()))) == p.axis[ax].out;
            }
            auto c = k.coordinate_transformation_mode;
            if (c == Resize::Coordinates::TfHalfPixelForNn)
                fail("resize with coordinate_transformation_mode \"tf_half_pixel_for_nn\" has no ONNX opset "
                    + std::to_string(kExportOpset) + " form (ONNX dropped it in opset 13)");
            if (c == Resize::Coordinates::HalfPixelSymmetric) {
                // Where every axis's size is exactly in · scale, it is half_pixel; else it needs opset 19.
                for (const ResizeAxis& a : p.axis)
                    if (double(a.out) != a.scale * double(a.in))
                        fail("resize with coordinate_transformation_mode \"half_pixel_symmetric\" and a size that is "
                             "not in · scale needs ONNX opset 19; ConvScope writes opset "
                            + std::to_string(kExportOpset));
                c = Resize::Coordinates::HalfPixel;
            }
            // align_corners reads only the sizes (written so, a reader need not guess the resized length); where
            // pytorch_half_pixel resizes an axis to 1 from a fractional in · scale, ONNX's reference and onnxruntime
            // disagree (onnx_convert_resize.cpp), so that is not written.
            if (c == Resize::Coordinates::AlignCorners)
                byScales = false;
            for (int ax = volume ? 0 : 1; ax < 3 && byScales && c == Resize::Coordinates::PytorchHalfPixel; ++ax) {
                const float length = float(p.axis[ax].in) * float(p.axis[ax].scale);
                if (p.axis[ax].out == 1 && std::floor(length) != length)
                    fail("resize pytorch_half_pixel to 1 from the fractional length " + std::to_string(length)
                        + " has no ONNX form that ONNX's reference and onnxruntime read alike");
            }
            std::vector<std::string> ins = { x, "" };
            if (byScales) {
                ins.push_back(floats(name + ".scales", { int64_t(scales.size()) }, scales.data(), scales.size()));
            } else {
                ins.push_back("");
                ins.push_back(int64s(name + ".sizes", shape.out.dims()));
            }
            NodeProto* n = node("Resize", name, ins, name);
            text(n, "mode", resizeModeName(k.mode));
            text(n, "coordinate_transformation_mode", resizeCoordinatesName(c));
            text(n, "nearest_mode", resizeNearestModeName(k.nearest_mode));
            real(n, "cubic_coeff_a", k.cubic_coeff_a);
            integer(n, "exclude_outside", k.exclude_outside ? 1 : 0);
        }

    private:
        const Network& m_net;
        const ShapeReport& m_shapes;
        ::onnx::GraphProto* m_graph;
    };

    // ONNX's pads: [x1_begin, x2_begin, x1_end, x2_end].
    std::vector<int64_t> onnxPads(const Padding2d& p) { return { p.top, p.left, p.bottom, p.right }; }

    std::vector<int64_t> onnxPads(const Padding3d& p) { return { p.front, p.top, p.left, p.back, p.bottom, p.right }; }

    std::vector<int64_t> dimsOf(const Shape& s) { return s.dims(); }

    template <size_t N> std::vector<int64_t> list(const std::array<int64_t, N>& a) { return { a.begin(), a.end() }; }

    // The 3-D kinds keep their weights in a rank-5 tensor; its dims are the ONNX dims.
    template <typename T> constexpr bool isWindowOp3d = std::is_same_v<T, Conv3d> || std::is_same_v<T, ConvTranspose3d>;

    void Writer::layer(size_t i)
    {
        const Layer& l = m_net.layers[i];
        const LayerShape& shape = m_shapes.layers[i];
        const std::string& out = l.name;
        std::vector<std::string> in = inputsOf(i);
        const auto fail = [&](const std::string& why) {
            throw InputError("layer " + std::to_string(i) + " (" + l.name + "): " + why);
        };
        std::visit(
            [&](const auto& k) {
                using T = std::decay_t<decltype(k)>;
                if constexpr (std::is_same_v<T, Conv2d> || std::is_same_v<T, ConvTranspose2d> || isWindowOp3d<T>) {
                    std::vector<std::string> ins
                        = { in[0], tensor(l.name + ".weight", dimsOf(l.weight->shape()), *l.weight) };
                    if (k.bias && l.bias)
                        ins.push_back(tensor(l.name + ".bias", { l.bias->shape().n }, *l.bias));
                    constexpr bool transposed
                        = std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, ConvTranspose3d>;
                    NodeProto* n = node(transposed ? "ConvTranspose" : "Conv", l.name, ins, out);
                    ints(n, "kernel_shape", list(k.kernel_size));
                    ints(n, "strides", list(k.stride));
                    ints(n, "dilations", list(k.dilation));
                    if constexpr (isWindowOp3d<T>)
                        ints(n, "pads", onnxPads(shape.resolvedPadding3d));
                    else
                        ints(n, "pads", onnxPads(shape.resolvedPadding));
                    integer(n, "group", k.groups);
                    if constexpr (transposed)
                        ints(n, "output_padding", list(k.output_padding));
                } else if constexpr (std::is_same_v<T, MaxPool2d> || std::is_same_v<T, MaxPool3d>) {
                    NodeProto* n = node("MaxPool", l.name, { in[0] }, out);
                    ints(n, "kernel_shape", list(k.kernel_size));
                    ints(n, "strides", list(k.effectiveStride()));
                    ints(n, "dilations", list(k.dilation));
                    if constexpr (std::is_same_v<T, MaxPool3d>)
                        ints(n, "pads", onnxPads(shape.resolvedPadding3d));
                    else
                        ints(n, "pads", onnxPads(shape.resolvedPadding));
                    integer(n, "ceil_mode", k.ceil_mode);
                } else if constexpr (std::is_same_v<T, AvgPool2d> || std::is_same_v<T, AvgPool3d>) {
                    if (k.divisor_override)
                        fail(layerTypeName(l.spec)
                            + " with divisor_override has no ONNX operator (AveragePool "
                              "divides by the window)");
                    NodeProto* n = node("AveragePool", l.name, { in[0] }, out);
                    ints(n, "kernel_shape", list(k.kernel_size));
                    ints(n, "strides", list(k.effectiveStride()));
                    if constexpr (std::is_same_v<T, AvgPool3d>)
                        ints(n, "pads", onnxPads(shape.resolvedPadding3d));
                    else
                        ints(n, "pads", onnxPads(shape.resolvedPadding));
                    integer(n, "ceil_mode", k.ceil_mode);
                    integer(n, "count_include_pad", k.count_include_pad);
                } else if constexpr (std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, GlobalAvgPool3d>) {
                    node("GlobalAveragePool", l.name, { in[0] }, out);
                } else if constexpr (std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, BatchNorm3d>) {
                    const int64_t c = shape.in.c;
                    std::vector<float> one(size_t(c), 1.0f), zero(size_t(c), 0.0f);
                    const std::string w = l.weight ? tensor(l.name + ".weight", { c }, *l.weight)
                                                   : floats(l.name + ".weight", { c }, one.data(), one.size());
                    const std::string b = l.bias ? tensor(l.name + ".bias", { c }, *l.bias)
                                                 : floats(l.name + ".bias", { c }, zero.data(), zero.size());
                    NodeProto* n = node("BatchNormalization", l.name,
                        { in[0], w, b, tensor(l.name + ".running_mean", { c }, *l.runningMean),
                            tensor(l.name + ".running_var", { c }, *l.runningVar) },
                        out);
                    real(n, "epsilon", k.eps);
                } else if constexpr (std::is_same_v<T, ReLU>) {
                    node("Relu", l.name, { in[0] }, out);
                } else if constexpr (std::is_same_v<T, LeakyReLU>) {
                    real(node("LeakyRelu", l.name, { in[0] }, out), "alpha", k.negative_slope);
                } else if constexpr (std::is_same_v<T, Sigmoid>) {
                    node("Sigmoid", l.name, { in[0] }, out);
                } else if constexpr (std::is_same_v<T, Tanh>) {
                    node("Tanh", l.name, { in[0] }, out);
                } else if constexpr (std::is_same_v<T, ELU>) {
                    real(node("Elu", l.name, { in[0] }, out), "alpha", k.alpha);
                } else if constexpr (std::is_same_v<T, ReLU6>) {
                    node("Clip", l.name, { in[0], scalar(l.name + ".min", 0.0f), scalar(l.name + ".max", 6.0f) }, out);
                } else if constexpr (std::is_same_v<T, Hardswish>) {
                    node("HardSwish", l.name, { in[0] }, out);
                } else if constexpr (std::is_same_v<T, Hardsigmoid>) {
                    NodeProto* n = node("HardSigmoid", l.name, { in[0] }, out);
                    real(n, "alpha", 1.0 / 6.0);
                    real(n, "beta", 0.5);
                } else if constexpr (std::is_same_v<T, SiLU>) {
                    node("Sigmoid", l.name + "/sigmoid", { in[0] }, l.name + "/sigmoid");
                    node("Mul", l.name, { in[0], l.name + "/sigmoid" }, out);
                } else if constexpr (std::is_same_v<T, Hardtanh>) {
                    node("Clip", l.name,
                        { in[0], scalar(l.name + ".min", float(k.min_val)), scalar(l.name + ".max", float(k.max_val)) },
                        out);
                } else if constexpr (isElementwiseMathKind<T>) {
                    writeMath(mathOpOf(k), l.name, in[0], out);
                } else if constexpr (std::is_same_v<T, PReLU>) {
                    // ONNX's PRelu broadcasts the slope against the input from the right (numpy's rule), so one per
                    // channel is [C, 1, 1] for an image, [C, 1, 1, 1] for a volume and [C] for a flat [N, C].
                    std::vector<int64_t> dims = { k.num_parameters };
                    if (k.num_parameters > 1 && !shape.in.flat)
                        dims.insert(dims.end(), shape.in.isVolume() ? 3 : 2, 1);
                    node("PRelu", l.name, { in[0], tensor(l.name + ".weight", dims, *l.weight) }, out);
                } else if constexpr (std::is_same_v<T, Flatten>) {
                    if (shape.out.ndim() == 2 && (k.start_dim < 0 ? k.start_dim + shape.in.ndim() : k.start_dim) == 1)
                        integer(node("Flatten", l.name, { in[0] }, out), "axis", 1);
                    else // ONNX's Flatten only makes [N, F]: any other flatten is a Reshape to the output's dims
                        node("Reshape", l.name, { in[0], int64s(l.name + ".shape", reshapeDims(shape)) }, out);
                } else if constexpr (std::is_same_v<T, Reshape>) {
                    node("Reshape", l.name, { in[0], int64s(l.name + ".shape", reshapeDims(shape)) }, out);
                } else if constexpr (std::is_same_v<T, Transpose>) {
                    ints(node("Transpose", l.name, { in[0] }, out), "perm", wrappedDims(k, shape.in.ndim()));
                } else if constexpr (std::is_same_v<T, Linear>) {
                    if (!linearRowsAreBatch(shape.in)) { // the last axis of another rank: MatMul by Wᵀ, Add the bias
                        writeLastAxisLinear(l, k, in[0], out);
                        return;
                    }
                    std::string x = in[0];
                    if (!shape.in.flat) { // [N, F, 1, 1]: Gemm needs [N, F]
                        x = l.name + "/flatten";
                        integer(node("Flatten", x, { in[0] }, x), "axis", 1);
                    }
                    const int64_t inF = shape.in.c * shape.in.d * shape.in.h * shape.in.w;
                    std::vector<std::string> ins
                        = { x, tensor(l.name + ".weight", { k.out_features, inF }, *l.weight) };
                    if (k.bias && l.bias)
                        ins.push_back(tensor(l.name + ".bias", { k.out_features }, *l.bias));
                    NodeProto* n = node("Gemm", l.name, ins, out);
                    integer(n, "transB", 1);
                } else if constexpr (isSoftmaxKind<T>) { // opset 13's: one axis
                    integer(node(isLogSoftmax<T> ? "LogSoftmax" : "Softmax", l.name, { in[0] }, out), "axis",
                        wrapAxis(k.dim, shape.in.ndim(), layerTypeName(k)));
                } else if constexpr (std::is_same_v<T, Reduce>) {
                    // Opset 17: ReduceSum takes its axes as an input, the others as an attribute; every axis is
                    // written out. Every axis reduced without keepdim is torch's 0-d tensor, [1] here: a Reshape.
                    static const char* const ops[]
                        = { "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL2" };
                    const std::vector<int64_t> axes = reduceAxes(k, shape.in.ndim());
                    const bool scalar = !k.keepdim && int(axes.size()) == shape.in.ndim();
                    const std::string y = scalar ? l.name + "/kept" : out;
                    std::vector<std::string> ins = { in[0] };
                    if (k.op == Reduce::Op::Sum)
                        ins.push_back(int64s(l.name + ".axes", axes));
                    NodeProto* n = node(ops[int(k.op)], l.name, ins, y);
                    if (k.op != Reduce::Op::Sum)
                        ints(n, "axes", axes);
                    integer(n, "keepdims", k.keepdim || scalar ? 1 : 0);
                    if (scalar)
                        node("Reshape", l.name + "/scalar", { y, int64s(l.name + ".shape", { 1 }) }, out);
                } else if constexpr (std::is_same_v<T, Add>) {
                    node(in.size() == 2 ? "Add" : "Sum", l.name, in, out);
                } else if constexpr (std::is_same_v<T, Mul>) {
                    node("Mul", l.name, in, out);
                } else if constexpr (std::is_same_v<T, Binary>) {
                    static const char* const ops[] = { "Add", "Sub", "Mul", "Div", "Pow", "Min", "Max" };
                    std::vector<std::string> ins = in;
                    if (!k.constant.empty()) {
                        const std::string c
                            = floats(l.name + ".constant", constantDims(k), k.constant.data(), k.constant.size());
                        ins.insert(k.constant_first ? ins.begin() : ins.end(), c);
                    }
                    node(ops[int(k.op)], l.name, ins, out);
                } else if constexpr (std::is_same_v<T, Concat>) {
                    integer(node("Concat", l.name, in, out), "axis", wrappedDim(k, shape.out.ndim()));
                } else if constexpr (std::is_same_v<T, Pad>) {
                    const auto& p = k.padding; // [top, bottom, left, right]
                    const std::string pads = int64s(l.name + ".pads", { 0, 0, p[0], p[2], 0, 0, p[1], p[3] });
                    std::vector<std::string> ins = { in[0], pads };
                    if (k.mode == Pad::Mode::Constant)
                        ins.push_back(scalar(l.name + ".value", float(k.value)));
                    NodeProto* n = node("Pad", l.name, ins, out);
                    text(n, "mode",
                        k.mode == Pad::Mode::Constant      ? "constant"
                            : k.mode == Pad::Mode::Reflect ? "reflect"
                                                           : "edge");
                } else if constexpr (std::is_same_v<T, Resize>) {
                    writeResize(k, shape, l.name, in[0], fail);
                } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                    // ONNX has no channel shuffle: PyTorch's own export, Reshape to [N, g, C/g, *], Transpose of
                    // the two group axes, Reshape back (0 keeps the symbolic batch).
                    const std::vector<int64_t> dims = shape.in.dims();
                    std::vector<int64_t> grouped = { 0, k.groups, dims[1] / k.groups }, back = { 0, dims[1] };
                    std::vector<int64_t> perm = { 0, 2, 1 };
                    for (size_t a = 2; a < dims.size(); ++a) {
                        grouped.push_back(dims[a]);
                        back.push_back(dims[a]);
                        perm.push_back(int64_t(a) + 1);
                    }
                    const std::string g = l.name + "/grouped", t = l.name + "/transposed";
                    node("Reshape", g, { in[0], int64s(l.name + ".grouped_shape", grouped) }, g);
                    ints(node("Transpose", t, { g }, t), "perm", perm);
                    node("Reshape", l.name, { t, int64s(l.name + ".shape", back) }, out);
                } else if constexpr (std::is_same_v<T, Slice>) {
                    node("Slice", l.name,
                        { in[0], int64s(l.name + ".starts", { k.start }), int64s(l.name + ".ends", { k.end }),
                            int64s(l.name + ".axes", { k.dim }) },
                        out);
                } else if constexpr (std::is_same_v<T, Identity>) {
                    node("Identity", l.name, { in[0] }, out);
                } else if constexpr (std::is_same_v<T, Dropout>) {
                    // Inference: the identity (ratio kept for a reader who trains).
                    node("Dropout", l.name, { in[0], scalar(l.name + ".ratio", float(k.p)) }, out);
                } else if constexpr (isNormKind<T>) {
                    writeNormalization(l, shape, in[0], out);
                } else if constexpr (std::is_same_v<T, Matmul>) {
                    std::vector<std::string> ins = in;
                    if (!k.constant.empty()) // the constant operand on its side, an initializer of its dims
                        ins.insert(k.constant_first ? ins.begin() : ins.end(),
                            floats(l.name + ".constant", k.constant_shape, k.constant.data(), k.constant.size()));
                    node("MatMul", l.name, ins, out);
                } else if constexpr (std::is_same_v<T, Gather>) {
                    const std::string idx = int64s(l.name + ".indices", k.indices);
                    TensorProto* t = m_graph->mutable_initializer(m_graph->initializer_size() - 1);
                    t->clear_dims(); // the indices' own shape ([] for one scalar index)
                    for (const int64_t d : k.indices_shape)
                        t->add_dims(d);
                    integer(node("Gather", l.name, { in[0], idx }, out), "axis", k.axis);
                } else {
                    static_assert(dependent_false<T>, "ONNX export: a layer kind has no operator");
                }
            },
            l.spec);
    }

    void valueInfo(::onnx::ValueInfoProto* v, const std::string& name, const Shape& s)
    {
        v->set_name(name);
        auto* tt = v->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(TensorProto::FLOAT);
        const std::vector<int64_t> dims = s.dims();
        for (size_t k = 0; k < dims.size(); ++k) {
            auto* d = tt->mutable_shape()->add_dim();
            if (k == 0)
                d->set_dim_param("batch");
            else
                d->set_dim_value(dims[k]);
        }
    }

} // namespace

::onnx::ModelProto exportModel(const Network& original)
{
    Network net = original;
    const ShapeReport shapes = inferShapes(net);
    if (!shapes.ok())
        throw InputError(
            net.name + ": the network cannot be exported while its shapes do not hold: " + shapes.firstError());
    if (net.layers.empty())
        throw InputError(net.name + ": the network has no layers to export");
    materializeParameters(net, shapes);

    ::onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("ConvScope");
    model.set_producer_version(CONVSCOPE_VERSION);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(kExportOpset);
    ::onnx::GraphProto* graph = model.mutable_graph();
    graph->set_name(net.name);
    valueInfo(graph->add_input(), kNetworkInputName, shapes.input);
    Writer w(net, shapes, graph);
    for (size_t i = 0; i < net.layers.size(); ++i)
        w.layer(i);
    valueInfo(graph->add_output(), net.layers.back().name, shapes.layers.back().out);
    return model;
}

std::string exportModelBytes(const Network& net)
{
    const ::onnx::ModelProto model = exportModel(net);
    try {
        ::onnx::checker::check_model(model);
    } catch (const std::exception& e) {
        throw Error(
            net.name + ": the exported ONNX model fails ONNX's checker (a bug in ConvScope's exporter): " + e.what());
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes))
        throw Error(net.name + ": the ONNX model could not be serialised (over protobuf's 2 GB limit?)");
    return bytes;
}

} // namespace convscope::onnx
