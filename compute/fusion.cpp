#include "compute/fusion.h"

#include "compute/error.h"

#include <cmath>
#include <map>
#include <memory>

namespace convscope {

FusedActivation fusedActivationOf(const LayerSpec& spec)
{
    using K = FusedActivation::Kind;
    if (std::holds_alternative<ReLU>(spec))
        return { K::ReLU, 0 };
    if (const auto* l = std::get_if<LeakyReLU>(&spec))
        return { K::LeakyReLU, l->negative_slope };
    if (std::holds_alternative<Sigmoid>(spec))
        return { K::Sigmoid, 0 };
    if (std::holds_alternative<Tanh>(spec))
        return { K::Tanh, 0 };
    if (const auto* e = std::get_if<ELU>(&spec))
        return { K::ELU, e->alpha };
    return {};
}

LayerSpec activationSpecOf(const FusedActivation& act)
{
    using K = FusedActivation::Kind;
    switch (act.kind) {
    case K::ReLU:
        return ReLU {};
    case K::LeakyReLU:
        return LeakyReLU { act.param };
    case K::Sigmoid:
        return Sigmoid {};
    case K::Tanh:
        return Tanh {};
    case K::ELU:
        return ELU { act.param };
    case K::None:
        break;
    }
    throw Error("internal error: no activation to stand for");
}

namespace {
    std::string label(const Network& net, size_t i)
    {
        return "layer " + std::to_string(i) + " (" + net.layers[i].name + ")";
    }

    // conv (weight [K, C/g, R, S], optional bias [K]) followed by batch norm over K channels: new weight and bias.
    void foldBatchNorm(Layer& conv, const Layer& bn, const BatchNorm2d& spec)
    {
        if (!conv.weight || !bn.runningMean || !bn.runningVar)
            throw Error("internal error: fusion needs materialised parameters");
        const Tensor& w = *conv.weight;
        const int64_t k = w.shape().n, per = w.numel() / k;
        if (bn.runningMean->numel() != k)
            throw Error("internal error: batch norm over " + std::to_string(bn.runningMean->numel())
                + " channels after a conv with " + std::to_string(k));
        auto folded = std::make_shared<Tensor>(w.shape());
        auto bias = std::make_shared<Tensor>(Shape::nchw(k, 1, 1, 1));
        for (int64_t c = 0; c < k; ++c) {
            const double gamma = spec.affine && bn.weight ? bn.weight->data()[c] : 1.0;
            const double beta = spec.affine && bn.bias ? bn.bias->data()[c] : 0.0;
            const double scale = gamma / std::sqrt(double(bn.runningVar->data()[c]) + spec.eps);
            for (int64_t j = 0; j < per; ++j)
                folded->data()[c * per + j] = float(double(w.data()[c * per + j]) * scale);
            const double b = conv.bias ? conv.bias->data()[c] : 0.0;
            bias->data()[c] = float((b - bn.runningMean->data()[c]) * scale + beta);
        }
        conv.weight = std::move(folded);
        conv.bias = std::move(bias);
    }
} // namespace

FusedNetwork fuseNetwork(
    const Network& net, const ShapeReport& shapes, const std::function<bool(FusedActivation::Kind)>& canFuse)
{
    if (!shapes.ok())
        throw Error("internal error: fusion of a network whose shapes are invalid");
    FusedNetwork out;
    out.net.name = net.name;
    out.net.input = net.input;
    out.net.baseDir = net.baseDir;
    out.map.resize(net.layers.size());
    // Never across a skip: layer `next` joins the group only when it reads exactly the group's last layer and
    // nothing else reads that layer, so a tensor that a skip still needs is never fused away.
    std::vector<int> readers(net.layers.size(), 0);
    for (const LayerShape& s : shapes.layers)
        for (int src : s.sources)
            if (src >= 0)
                ++readers[size_t(src)];
    const auto chained = [&](size_t last, size_t next) {
        return next < net.layers.size() && shapes.layers[next].sources == std::vector<int> { int(last) }
        && readers[last] == 1;
    };
    std::map<std::string, std::string> renamed; // a folded layer's name → the fused layer that now holds its output
    for (size_t i = 0; i < net.layers.size();) {
        const size_t f = out.net.layers.size();
        out.net.layers.push_back(net.layers[i]);
        out.map[i] = { f, true, true, {} };
        auto* conv = std::get_if<Conv2d>(&out.net.layers.back().spec);
        size_t next = i + 1;
        if (conv) {
            Layer& fused = out.net.layers.back();
            if (chained(i, next))
                if (const auto* bn = std::get_if<BatchNorm2d>(&net.layers[next].spec)) {
                    foldBatchNorm(fused, net.layers[next], *bn);
                    conv->bias = true;
                    out.map[i].hasOutput = false;
                    out.map[i].note = "fused: batch norm " + label(net, next) + " folded into its weights and bias";
                    out.map[next] = { f, false, true, "fused: folded into " + label(net, i) };
                    ++next;
                }
            if (chained(next - 1, next)) {
                const FusedActivation act = fusedActivationOf(net.layers[next].spec);
                if (act && canFuse(act.kind)) {
                    conv->fused_activation = act;
                    const size_t last = next - 1; // the conv or the folded batch norm
                    out.map[last].hasOutput = false;
                    out.map[i].note += std::string(out.map[i].note.empty() ? "fused: " : "; ") + "activation "
                        + label(net, next) + " applied in the epilogue";
                    out.map[next] = { f, false, true, "fused: applied in the epilogue of " + label(net, i) };
                    ++next;
                }
            }
            if (!out.map[i].hasOutput)
                out.map[i].note += "; its own output is not computed";
            for (size_t k = i + 1; k < next; ++k)
                renamed[net.layers[k].name] = fused.name;
        }
        i = next;
    }
    for (Layer& layer : out.net.layers)
        for (std::string& name : layer.inputs)
            if (auto it = renamed.find(name); it != renamed.end())
                name = it->second;
    out.shapes = inferShapes(out.net);
    if (!out.shapes.ok())
        throw Error("internal error: the fused network's shapes are invalid: " + out.shapes.firstError());
    return out;
}

} // namespace convscope
