// The ONNX operators ConvScope converts into layers, as one table: operator type, the opsets whose semantics the
// converter reads, and the converter. convertNode dispatches through it and nothing else; the list of taken operators
// in every refusal (supportedOperatorList) is derived from it and from the folder's own list (onnx_fold.h), so neither
// can drift from what is converted. A new operator is one row here (and its converter).
#include "compute/onnx/onnx_converters.h"

#include "compute/error.h"
#include "compute/onnx/onnx_fold.h"
#include "compute/shape_inference.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace convscope::onnx {

namespace {

    using namespace convert;
    using Node = ::onnx::NodeProto;

    // What a converter is given: the node, its layer name and index, the builder, the node's attributes.
    struct NodeContext {
        GraphBuilder& g;
        const Node& n;
        const std::string& name;
        size_t index;
        const Attributes& a;

        // One layer of `spec` on the node's first input.
        void simple(LayerSpec spec) const
        {
            onlyFirstOutput(g, n, a);
            g.addLayer(name, std::move(spec), { in0(n, a) }, n.output(0), a);
        }
        Shape inputShape() const { return g.activation(in0(n, a), a).shape; }
    };

    using Converter = void (*)(const NodeContext&);

    struct OperatorRow {
        const char* op;
        int64_t firstOpset, lastOpset; // the opsets whose semantics `convert` reads
        Converter convert;
    };

    // The converters of onnx_convert.cpp, which take the node's parts.
    template <void (*F)(GraphBuilder&, const Node&, const std::string&, const Attributes&)>
    void with(const NodeContext& c)
    {
        F(c.g, c.n, c.name, c.a);
    }

    void globalAveragePool(const NodeContext& c)
    {
        need4d(c.inputShape(), c.a);
        c.simple(GlobalAvgPool2d {});
    }

    void globalMaxPool(const NodeContext& c)
    {
        // The max over the whole plane: a max pool whose window is the input's H×W (3-D: convertVolumeNode).
        const Shape in = c.inputShape();
        need4d(in, c.a);
        MaxPool2d m;
        m.kernel_size = { in.h, in.w };
        c.simple(m);
    }

    void dropout(const NodeContext& c)
    {
        double p = c.a.getFloat("ratio", 0.5f);
        if (const ConstTensor* r = c.g.optionalConstant(c.n, 1, c.a, "ratio"); r && r->numel() > 0)
            p = r->at(0);
        // Opset 12's training_mode: a Dropout that drops (ConvScope's dropout layer is the inference identity), unless
        // its ratio is 0.
        if (const ConstTensor* t = c.g.optionalConstant(c.n, 2, c.a, "training_mode");
            t && t->numel() > 0 && t->at(0) && p > 0)
            refuse(c.n, c.a, "Dropout with training_mode true (ConvScope runs dropout as at inference: the identity)");
        if (c.n.input_size() > 2 && !c.n.input(2).empty() && !c.g.isConstant(c.n.input(2)))
            refuse(c.n, c.a, "Dropout whose training_mode is computed (ConvScope needs it constant false)");
        c.simple(Dropout { p });
    }

    void hardSigmoid(const NodeContext& c)
    {
        const float alpha = c.a.getFloat("alpha", 0.2f), beta = c.a.getFloat("beta", 0.5f);
        if (std::fabs(alpha - 1.0f / 6) > 1e-6f || beta != 0.5f)
            refuse(c.n, c.a,
                "HardSigmoid with alpha " + std::to_string(alpha) + ", beta " + std::to_string(beta)
                    + " (ConvScope's hardsigmoid is PyTorch's: alpha 1/6, beta 0.5)");
        c.simple(Hardsigmoid {});
    }

    template <bool Log> void softmaxOp(const NodeContext& c) { convert::softmax(c.g, c.n, c.name, c.index, c.a, Log); }

    template <Reduce::Op Op> void reduceOp(const NodeContext& c) { convert::reduce(c.g, c.n, c.name, c.a, Op); }

    void reduceMean(const NodeContext& c)
    {
        // The mean over H and W of an image is global average pooling (and a flatten without keepdims): kept, as
        // its kernels are the faster; any other ReduceMean is a reduce layer.
        const Shape in = c.inputShape();
        const Node& n = c.n;
        std::vector<int64_t> axes = c.g.opset >= 18
            ? (n.input_size() > 1 && !n.input(1).empty() && c.g.isConstant(n.input(1))
                    ? c.g.constant(n.input(1), c.a, "axes").ints(c.a.where())
                    : std::vector<int64_t> {})
            : c.a.getInts("axes").value_or(std::vector<int64_t> {});
        for (int64_t& ax : axes)
            ax = ax < 0 ? ax + 4 : ax;
        std::sort(axes.begin(), axes.end());
        if (!in.isImage() || axes != std::vector<int64_t> { 2, 3 })
            return reduceOp<Reduce::Op::Mean>(c);
        if (c.a.getInt("keepdims", 1) != 0)
            return c.simple(GlobalAvgPool2d {});
        const std::string pooled = n.output(0) + "#pooled";
        c.g.addLayer(c.name, GlobalAvgPool2d {}, { in0(n, c.a) }, pooled, c.a);
        c.g.addLayer(c.g.layerName(n, c.index, "_flatten"), Flatten {}, { pooled }, n.output(0), c.a);
    }

    void add(const NodeContext& c)
    {
        if (c.n.op_type() == "Add" && foldLinearBias(c.g, c.n, c.a))
            return;
        if (c.n.input_size() == 1) // a Sum of one input: that input
            return c.simple(Identity {});
        // The add kind where every input is an activation of one shape; else NumPy's broadcast (binary). A Sum with a
        // constant input, or of more than two inputs of different shapes: a chain of binary adds.
        for (const auto& in : c.n.input())
            if (c.n.input_size() > 2 && c.g.isConstant(in))
                return binaryChain(c.g, c.n, c.name, c.a, Binary::Op::Add);
        if (c.n.op_type() == "Sum" && c.n.input_size() == 2
            && (c.g.isConstant(c.n.input(0)) || c.g.isConstant(c.n.input(1))))
            return binary(c.g, c.n, c.name, c.a, Binary::Op::Add);
        bool same = c.n.op_type() == "Sum" || c.n.input_size() != 2;
        if (!same && c.g.isActivation(c.n.input(0)) && c.g.isActivation(c.n.input(1)))
            same = c.g.activation(c.n.input(0), c.a).shape == c.g.activation(c.n.input(1), c.a).shape;
        if (!same)
            return binary(c.g, c.n, c.name, c.a, Binary::Op::Add);
        c.g.addLayer(c.name, Add {}, activationInputs(c.g, c.n, c.a), c.n.output(0), c.a);
    }

    void mul(const NodeContext& c)
    {
        // The mul kind where it fits (one shape, or a [N, C, 1, 1] gate); else NumPy's broadcast (binary).
        if (c.n.input_size() == 2 && c.g.isActivation(c.n.input(0)) && c.g.isActivation(c.n.input(1))) {
            const Shape a = c.g.activation(c.n.input(0), c.a).shape, b = c.g.activation(c.n.input(1), c.a).shape;
            // The gate is [N, C, 1, ...] against [N, C, ...] of the same rank (3 or more): the mul kind's rule
            // (shape_inference.cpp's inferMul) in dims.
            const auto gate = [](const Shape& big, const Shape& small) {
                const std::vector<int64_t> bd = big.dims(), sd = small.dims();
                if (bd.size() < 3 || sd.size() != bd.size() || sd[0] != bd[0] || sd[1] != bd[1])
                    return false;
                return std::all_of(sd.begin() + 2, sd.end(), [](int64_t d) { return d == 1; });
            };
            if (a == b || gate(a, b) || gate(b, a))
                return c.g.addLayer(c.name, Mul {}, { c.n.input(0), c.n.input(1) }, c.n.output(0), c.a);
        }
        binary(c.g, c.n, c.name, c.a, Binary::Op::Mul);
    }

    void concat(const NodeContext& c)
    {
        // Any axis (negative counts from the end); a Concat of one input is valid ONNX (DenseNet-121 exports one per
        // dense block): a concat layer of one input, a copy.
        const std::vector<std::string> ins = concatInputs(c.g, c.n, c.name, c.a, c.a.getInt("axis", 1));
        if (ins.empty())
            c.a.fail("Concat of no input (or of empty Slices only)");
        c.g.addLayer(c.name, Concat { c.a.getInt("axis", 1) }, ins, c.n.output(0), c.a);
    }

    template <Binary::Op Op> void binaryOp(const NodeContext& c) { binary(c.g, c.n, c.name, c.a, Op); }

    // Min and Max take one or more inputs: one is its input unchanged, two a binary layer, more a chain of them.
    template <Binary::Op Op> void minMax(const NodeContext& c)
    {
        if (c.n.input_size() == 1)
            return c.simple(Identity {});
        if (c.n.input_size() > 2)
            return binaryChain(c.g, c.n, c.name, c.a, Op);
        binary(c.g, c.n, c.name, c.a, Op);
    }

    // Mean of one or more inputs (constants too): their sum divided by the count.
    void mean(const NodeContext& c) { binaryChain(c.g, c.n, c.name, c.a, Binary::Op::Add, double(c.n.input_size())); }

    // ONNX Gelu (opset 20): approximate "none" or "tanh".
    void gelu(const NodeContext& c)
    {
        const std::string approximate = c.a.getString("approximate", "none");
        if (approximate != "none" && approximate != "tanh")
            refuse(c.n, c.a, "Gelu with approximate \"" + approximate + "\" (ONNX defines \"none\" and \"tanh\")");
        c.simple(GELU { approximate == "tanh" });
    }

    // The element-wise operators of one input that are a unary layer.
    template <Unary::Op Op> void unary(const NodeContext& c) { c.simple(Unary { Op }); }

    // ONNX Softplus is log(1 + e^x) without a threshold: PyTorch's 20 differs from it by under 1e-9 relative.
    void softplus(const NodeContext& c) { c.simple(Softplus {}); }

    constexpr int64_t kLast = 21; // the newest opset ConvScope reads (onnx_import.cpp)

    // Sorted by operator; an operator may have rows for disjoint opset ranges.
    const OperatorRow kOperators[] = {
        { "Abs", 6, kLast, unary<Unary::Op::Abs> },
        { "Add", 6, kLast, add },
        { "AveragePool", 6, kLast, with<pool> },
        { "BatchNormalization", 6, kLast, with<batchNorm> },
        { "Clip", 6, kLast, with<clip> },
        { "Concat", 6, kLast, concat },
        { "Conv", 6, kLast, with<conv> },
        { "ConvTranspose", 6, kLast, with<convTranspose> },
        { "Div", 6, kLast, binaryOp<Binary::Op::Div> },
        { "Dropout", 6, kLast, dropout },
        { "Einsum", 12, kLast, with<einsum> },
        { "Elu", 6, kLast, [](const NodeContext& c) { c.simple(ELU { c.a.getFloat("alpha", 1.0f) }); } },
        { "Erf", 9, kLast, unary<Unary::Op::Erf> },
        { "Exp", 6, kLast, unary<Unary::Op::Exp> },
        { "Expand", 8, kLast, with<expand> },
        { "Flatten", 6, kLast, with<flatten> },
        { "Gather", 6, kLast, with<gather> },
        { "Gelu", 20, kLast, gelu },
        { "Gemm", 6, kLast, with<gemm> },
        { "GlobalAveragePool", 6, kLast, globalAveragePool },
        { "GlobalMaxPool", 6, kLast, globalMaxPool },
        { "GroupNormalization", 18, kLast, with<groupNormalization> },
        { "HardSigmoid", 6, kLast, hardSigmoid },
        { "HardSwish", 14, kLast, [](const NodeContext& c) { c.simple(Hardswish {}); } },
        { "Identity", 6, kLast, [](const NodeContext& c) { c.simple(Identity {}); } },
        { "InstanceNormalization", 6, kLast, with<instanceNormalization> },
        { "LayerNormalization", 17, kLast, with<layerNormalization> },
        { "LeakyRelu", 6, kLast, [](const NodeContext& c) { c.simple(LeakyReLU { c.a.getFloat("alpha", 0.01f) }); } },
        { "Log", 6, kLast, unary<Unary::Op::Log> },
        { "LogSoftmax", 6, kLast, softmaxOp<true> },
        { "MatMul", 6, kLast, with<matmul> },
        { "Max", 6, 7, minMax<Binary::Op::Max> }, // one shape for every input: the same as 8's broadcast
        { "Max", 8, kLast, minMax<Binary::Op::Max> },
        { "MaxPool", 6, kLast, with<pool> },
        { "Mean", 6, kLast, mean },
        { "Min", 6, 7, minMax<Binary::Op::Min> },
        { "Min", 8, kLast, minMax<Binary::Op::Min> },
        { "Mish", 18, kLast, [](const NodeContext& c) { c.simple(Mish {}); } },
        { "Mul", 6, kLast, mul },
        { "Neg", 6, kLast, unary<Unary::Op::Neg> },
        { "PRelu", 6, kLast, with<prelu> },
        { "Pad", 6, kLast, with<pad> },
        { "Pow", 6, 6, binaryOp<Binary::Op::Pow> }, // Pow-1: binary() refuses its legacy broadcast attributes
        { "Pow", 7, kLast, binaryOp<Binary::Op::Pow> },
        { "Reciprocal", 6, kLast, unary<Unary::Op::Reciprocal> },
        { "ReduceL2", 6, kLast, reduceOp<Reduce::Op::L2> },
        { "ReduceMax", 6, kLast, reduceOp<Reduce::Op::Max> },
        { "ReduceMean", 6, kLast, reduceMean },
        { "ReduceMin", 6, kLast, reduceOp<Reduce::Op::Min> },
        { "ReduceSum", 6, kLast, reduceOp<Reduce::Op::Sum> },
        { "Relu", 6, kLast, [](const NodeContext& c) { c.simple(ReLU {}); } },
        { "Reshape", 6, kLast, with<reshape> },
        { "Resize", 10, kLast, with<resize> },
        { "Sigmoid", 6, kLast, [](const NodeContext& c) { c.simple(Sigmoid {}); } },
        { "Slice", 1, kLast, with<slice> },
        { "Softmax", 6, kLast, softmaxOp<false> },
        { "Softplus", 6, kLast, softplus },
        { "Split", 6, kLast, with<split> },
        { "Sqrt", 6, kLast, unary<Unary::Op::Sqrt> },
        { "Squeeze", 6, kLast, with<squeeze> },
        { "Sub", 6, kLast, binaryOp<Binary::Op::Sub> },
        { "Sum", 6, kLast, add },
        { "Tanh", 6, kLast, [](const NodeContext& c) { c.simple(Tanh {}); } },
        { "Tile", 6, kLast, with<tile> },
        { "Transpose", 1, kLast, with<transpose> },
        { "Unsqueeze", 6, kLast, with<squeeze> },
        { "Upsample", 7, 9, with<resize> },
    };

    std::string opsetRanges(const std::string& op)
    {
        std::string s;
        for (const OperatorRow& r : kOperators)
            if (op == r.op)
                s += (s.empty() ? "" : ", ") + std::to_string(r.firstOpset) + " to " + std::to_string(r.lastOpset);
        return s;
    }

} // namespace

std::vector<std::string> convertedOperators()
{
    std::vector<std::string> ops;
    for (const OperatorRow& r : kOperators)
        if (ops.empty() || ops.back() != r.op)
            ops.push_back(r.op);
    return ops;
}

std::string supportedOperatorList()
{
    std::string s;
    for (const std::string& op : convertedOperators())
        s += (s.empty() ? "" : ", ") + op;
    s += "; folded when their inputs are constant: ";
    std::set<std::string> folded(foldableOperators().begin(), foldableOperators().end());
    folded.insert("Shape"); // of an activation too: its shape is known (onnx_import.cpp)
    bool first = true;
    for (const std::string& op : folded) {
        s += (first ? "" : ", ") + op;
        first = false;
    }
    return s;
}

void convertNode(GraphBuilder& g, const Node& n, size_t index, const Attributes& a)
{
    const std::string name = g.layerName(n, index);
    if (convertVolumeNode(g, n, name, a))
        return;
    const std::string& op = n.op_type();
    for (const OperatorRow& r : kOperators)
        if (op == r.op && g.opset >= r.firstOpset && g.opset <= r.lastOpset)
            return r.convert(NodeContext { g, n, name, index, a });
    if (const std::string ranges = opsetRanges(op); !ranges.empty())
        refuse(n, a, op + " in opset " + std::to_string(g.opset) + " (ConvScope reads it in opsets " + ranges + ")");
    refuse(n, a, "the operator " + op + " is not one ConvScope has a layer for");
}

} // namespace convscope::onnx
