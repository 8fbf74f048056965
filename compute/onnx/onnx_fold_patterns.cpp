// The GELU pattern (compute/onnx/onnx_fold_patterns.h).
#include "compute/onnx/onnx_fold_patterns.h"

#include "compute/onnx/onnx_attributes.h"
#include "compute/onnx/onnx_fold.h"

#include "compute/error.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace convscope::onnx {

namespace {
    using Node = ::onnx::NodeProto;

    class Matcher {
    public:
        Matcher(const ::onnx::GraphProto& graph, const std::unordered_map<std::string, ConstTensor>& constants,
            const std::unordered_map<std::string, int>& uses, int64_t opset, const std::filesystem::path& modelDir)
            : m_graph(graph)
            , m_constants(constants)
            , m_uses(uses)
            , m_opset(opset)
            , m_modelDir(modelDir)
        {
            for (int k = 0; k < graph.node_size(); ++k) {
                for (const auto& out : graph.node(k).output())
                    m_producer[out] = k;
                for (const auto& in : graph.node(k).input())
                    m_readers[in].push_back(k);
            }
        }

        // The one scalar value of a constant tensor (an initializer or a Constant node's), if it is one.
        std::optional<double> scalar(const std::string& name) const
        {
            if (auto it = m_constants.find(name); it != m_constants.end())
                return it->second.numel() == 1 ? std::optional<double>(it->second.at(0)) : std::nullopt;
            const int p = producer(name);
            if (p < 0 || m_graph.node(p).op_type() != "Constant")
                return std::nullopt;
            try {
                const Attributes a(m_graph.node(p), "Constant");
                const std::vector<ConstTensor> v = foldNode(m_graph.node(p), {}, a, m_opset, m_modelDir);
                if (v.size() == 1 && v[0].numel() == 1)
                    return v[0].at(0);
            } catch (...) { // not a scalar this matcher can read: no match, the node is converted as it is
            }
            return std::nullopt;
        }
        bool isScalar(const std::string& name, double value) const
        {
            const std::optional<double> v = scalar(name);
            return v && std::abs(*v - value) <= 1e-6 * std::abs(value);
        }
        int producer(const std::string& name) const
        {
            auto it = m_producer.find(name);
            return it == m_producer.end() ? -1 : it->second;
        }
        // The one node that reads `name`, when nothing else (no other node, no graph output) does.
        int onlyReader(const std::string& name) const
        {
            auto u = m_uses.find(name);
            auto r = m_readers.find(name);
            if (u == m_uses.end() || u->second != 1 || r == m_readers.end() || r->second.size() != 1)
                return -1;
            return r->second[0];
        }
        const Node& node(int k) const { return m_graph.node(k); }
        bool is(int k, const char* op, int inputs) const
        {
            return k >= 0 && node(k).op_type() == op && node(k).input_size() == inputs && node(k).output_size() == 1;
        }
        // For a binary node with one scalar operand equal to `value` (either side): the other operand, else "".
        std::string otherThanScalar(int k, double value) const
        {
            const Node& n = node(k);
            if (isScalar(n.input(1), value))
                return n.input(0);
            if (isScalar(n.input(0), value))
                return n.input(1);
            return {};
        }

        // The pattern around Erf node e: {x, nodes, output}, or nothing.
        std::optional<std::pair<FoldedPattern, std::vector<int>>> gelu(int e) const
        {
            if (!is(e, "Erf", 1))
                return std::nullopt;
            // x / √2 or x · (1/√2)
            const int p = producer(node(e).input(0));
            if (onlyReader(node(e).input(0)) != e)
                return std::nullopt;
            std::string x;
            if (is(p, "Div", 2) && isScalar(node(p).input(1), std::sqrt(2.0)))
                x = node(p).input(0);
            else if (is(p, "Mul", 2))
                x = otherThanScalar(p, std::sqrt(0.5));
            if (x.empty())
                return std::nullopt;
            // + 1
            const int add = onlyReader(node(e).output(0));
            if (!is(add, "Add", 2) || otherThanScalar(add, 1.0) != node(e).output(0))
                return std::nullopt;
            const int m1 = onlyReader(node(add).output(0));
            if (!is(m1, "Mul", 2))
                return std::nullopt;
            const std::string other = node(m1).input(0) == node(add).output(0) ? node(m1).input(1) : node(m1).input(0);
            std::vector<int> nodes = { p, e, add, m1 };
            std::string output;
            if (other == x) { // x · (1 + erf) · ½
                const int m2 = onlyReader(node(m1).output(0));
                if (!is(m2, "Mul", 2) || otherThanScalar(m2, 0.5) != node(m1).output(0))
                    return std::nullopt;
                nodes.push_back(m2);
                output = node(m2).output(0);
            } else { // (x · ½) · (1 + erf)
                const int h = producer(other);
                if (!is(h, "Mul", 2) || onlyReader(other) != m1 || otherThanScalar(h, 0.5) != x)
                    return std::nullopt;
                nodes.push_back(h);
                output = node(m1).output(0);
            }
            return std::make_pair(FoldedPattern { GELU {}, x, output, 0, {}, {} }, nodes);
        }

        // The axes of a ReduceMean with keepdims (the attribute before opset 18, the constant input from 18 on),
        // when they are the last k axes given as −k … −1: k, else 0.
        int64_t trailingAxes(int k) const
        {
            const Node& n = node(k);
            if (n.op_type() != "ReduceMean" || n.output_size() != 1)
                return 0;
            const Attributes a(n, "ReduceMean");
            if (a.getInt("keepdims", 1) != 1)
                return 0;
            std::vector<int64_t> axes;
            if (m_opset >= 18) {
                auto c = n.input_size() > 1 ? m_constants.find(n.input(1)) : m_constants.end();
                if (c == m_constants.end() || c->second.isFloat)
                    return 0;
                axes = c->second.i;
            } else if (n.input_size() == 1) {
                axes = a.getInts("axes").value_or(std::vector<int64_t> {});
            }
            std::sort(axes.begin(), axes.end());
            for (size_t i = 0; i < axes.size(); ++i)
                if (axes[i] != int64_t(i) - int64_t(axes.size()))
                    return 0;
            return int64_t(axes.size());
        }
        // A constant operand's name (an initializer, or a Constant node's output), else "".
        std::string constantName(const std::string& name) const
        {
            const int p = producer(name);
            return m_constants.count(name) || (p >= 0 && node(p).op_type() == "Constant") ? name : std::string();
        }

        // PyTorch's LayerNorm below opset 17, from its first ReduceMean r: m = ReduceMean(x), d = x − m,
        // v = ReduceMean(d ^ 2), y = d / √(v + eps), then optionally y · weight and + bias (constants). Every
        // intermediate tensor read only inside the pattern (d by Pow and Div).
        std::optional<std::pair<FoldedPattern, std::vector<int>>> layerNorm(int r) const
        {
            const int64_t k = trailingAxes(r);
            if (k == 0)
                return std::nullopt;
            const std::string x = node(r).input(0), mean = node(r).output(0);
            const int sub = onlyReader(mean);
            if (!is(sub, "Sub", 2) || node(sub).input(0) != x || node(sub).input(1) != mean)
                return std::nullopt;
            const std::string d = node(sub).output(0);
            const auto readers = m_readers.find(d);
            const auto uses = m_uses.find(d);
            if (readers == m_readers.end() || readers->second.size() != 2 || uses == m_uses.end() || uses->second != 2)
                return std::nullopt;
            int pow = -1, div = -1;
            for (const int q : readers->second) {
                if (is(q, "Pow", 2) && node(q).input(0) == d && isScalar(node(q).input(1), 2.0))
                    pow = q;
                else if (is(q, "Div", 2) && node(q).input(0) == d)
                    div = q;
            }
            if (pow < 0 || div < 0)
                return std::nullopt;
            const int r2 = onlyReader(node(pow).output(0));
            if (r2 < 0 || trailingAxes(r2) != k || node(r2).input(0) != node(pow).output(0))
                return std::nullopt;
            const int add = onlyReader(node(r2).output(0));
            if (!is(add, "Add", 2))
                return std::nullopt;
            const std::string var = node(r2).output(0);
            const std::optional<double> eps
                = scalar(node(add).input(0) == var ? node(add).input(1) : node(add).input(0));
            if (!eps || *eps < 0)
                return std::nullopt;
            const int sqrt = onlyReader(node(add).output(0));
            if (!is(sqrt, "Sqrt", 1) || onlyReader(node(sqrt).output(0)) != div
                || node(div).input(1) != node(sqrt).output(0))
                return std::nullopt;
            std::vector<int> nodes = { r, sub, pow, r2, add, sqrt, div };
            FoldedPattern f { LayerNorm { {}, *eps, false, false }, x, node(div).output(0), k, {}, {} };
            // · weight, + bias
            const auto operand = [&](int q, const std::string& from) {
                const std::string other = node(q).input(0) == from ? node(q).input(1) : node(q).input(0);
                return constantName(other);
            };
            if (const int mul = onlyReader(f.output); is(mul, "Mul", 2) && !operand(mul, f.output).empty()) {
                f.weight = operand(mul, f.output);
                f.output = node(mul).output(0);
                nodes.push_back(mul);
                if (const int b = onlyReader(f.output); is(b, "Add", 2) && !operand(b, f.output).empty()) {
                    f.bias = operand(b, f.output);
                    f.output = node(b).output(0);
                    nodes.push_back(b);
                }
            }
            auto& l = std::get<LayerNorm>(f.spec);
            l.elementwise_affine = !f.weight.empty();
            l.bias = !f.bias.empty();
            return std::make_pair(std::move(f), nodes);
        }

    private:
        const ::onnx::GraphProto& m_graph;
        const std::unordered_map<std::string, ConstTensor>& m_constants;
        const std::unordered_map<std::string, int>& m_uses;
        int64_t m_opset;
        std::filesystem::path m_modelDir;
        std::unordered_map<std::string, int> m_producer;
        std::unordered_map<std::string, std::vector<int>> m_readers;
    };
} // namespace

ResolvedPattern resolveFoldedPattern(const FoldedPattern& f, const Shape& in,
    const std::unordered_map<std::string, ConstTensor>& constants, const std::string& where)
{
    ResolvedPattern r { f.spec, nullptr };
    auto* l = std::get_if<LayerNorm>(&r.spec);
    if (!l)
        return r;
    const std::vector<int64_t> d = in.dims();
    if (f.normAxes > int64_t(d.size()))
        throw InputError(where + ": LayerNorm's ReduceMean over the last " + std::to_string(f.normAxes) + " axes of "
            + in.str() + ", which has fewer");
    l->normalized_shape.assign(d.end() - f.normAxes, d.end());
    int64_t count = 1;
    for (const int64_t v : l->normalized_shape)
        count *= v;
    if (!l->elementwise_affine)
        return r;
    // The weight (and bias) as PyTorch exports them: normalized_shape's values (any dims of that count), or one.
    const auto values = [&](const std::string& name, const char* role) {
        const auto it = constants.find(name);
        if (it == constants.end() || !it->second.isFloat || (it->second.numel() != count && it->second.numel() != 1))
            throw InputError(where + ": LayerNorm's " + role + " \"" + name + "\" must be a float constant of "
                + std::to_string(count) + " values (normalized_shape " + npyDimsText(l->normalized_shape) + ")");
        Tensor t(Shape::nchw(count, 1, 1, 1));
        for (int64_t v = 0; v < count; ++v)
            t.data()[v] = it->second.f[it->second.numel() == 1 ? 0 : size_t(v)];
        return std::make_shared<const Tensor>(std::move(t));
    };
    auto e = std::make_shared<Layer::Embedded>();
    e->weight = values(f.weight, "weight");
    if (l->bias)
        e->bias = values(f.bias, "bias");
    r.embedded = std::move(e);
    return r;
}

PatternFolds findFoldablePatterns(const ::onnx::GraphProto& graph,
    const std::unordered_map<std::string, ConstTensor>& constants, const std::unordered_map<std::string, int>& uses,
    int64_t opset, const std::filesystem::path& modelDir)
{
    PatternFolds folds;
    const Matcher m(graph, constants, uses, opset, modelDir);
    for (int k = 0; k < graph.node_size(); ++k) {
        auto found = m.gelu(k);
        if (!found)
            found = m.layerNorm(k);
        if (!found)
            continue;
        auto& [pattern, nodes] = *found;
        if (std::any_of(nodes.begin(), nodes.end(), [&](int n) { return folds.skip.count(n) || folds.at.count(n); }))
            continue;
        const int first = *std::min_element(nodes.begin(), nodes.end());
        for (int n : nodes)
            if (n != first)
                folds.skip.insert(n);
        folds.at.emplace(first, std::move(pattern));
    }
    return folds;
}

} // namespace convscope::onnx
