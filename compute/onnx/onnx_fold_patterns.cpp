// The GELU pattern (compute/onnx/onnx_fold_patterns.h).
#include "compute/onnx/onnx_fold_patterns.h"

#include "compute/onnx/onnx_attributes.h"
#include "compute/onnx/onnx_fold.h"

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
            return std::make_pair(FoldedPattern { GELU {}, x, output }, nodes);
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

PatternFolds findFoldablePatterns(const ::onnx::GraphProto& graph,
    const std::unordered_map<std::string, ConstTensor>& constants, const std::unordered_map<std::string, int>& uses,
    int64_t opset, const std::filesystem::path& modelDir)
{
    PatternFolds folds;
    const Matcher m(graph, constants, uses, opset, modelDir);
    for (int k = 0; k < graph.node_size(); ++k) {
        auto found = m.gelu(k);
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
