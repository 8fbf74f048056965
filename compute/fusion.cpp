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

FusedNetwork fuseNetwork(const Network& net, const ShapeReport& shapes,
    const std::function<bool(FusedActivation::Kind)>& canFuse, bool canFuseResidual)
{
    if (!shapes.ok())
        throw Error("internal error: fusion of a network whose shapes are invalid");
    const size_t n = net.layers.size();
    FusedNetwork out;
    out.net.name = net.name;
    out.net.input = net.input;
    out.net.baseDir = net.baseDir;
    out.map.resize(n);
    // Never across a skip: layer `next` joins the group only when it reads exactly the group's last layer and
    // nothing else reads that layer, so a tensor that a skip still needs is never fused away.
    std::vector<int> readers(n, 0), reader(n, -1); // how many layers read each output; the last of them
    for (size_t k = 0; k < n; ++k)
        for (int src : shapes.layers[k].sources)
            if (src >= 0) {
                ++readers[size_t(src)];
                reader[size_t(src)] = int(k);
            }
    const auto chained = [&](size_t last, size_t next) {
        return next < n && shapes.layers[next].sources == std::vector<int> { int(last) } && readers[last] == 1;
    };
    const auto sourceName = [&](int src) { return src < 0 ? std::string(kNetworkInputName) : net.layers[src].name; };
    // The residual add that may fold into conv `i` whose group ends at `last`: the only reader of `last`, an add of
    // exactly two inputs whose other input (the skip) exists before the conv runs (produced by an earlier layer or
    // the network's input), so the fused conv, which stays at the conv's place, can read it. −1 for none.
    const auto residualAdd = [&](size_t i, size_t last) -> int {
        if (readers[last] != 1 || !std::holds_alternative<Add>(net.layers[size_t(reader[last])].spec))
            return -1;
        const std::vector<int>& src = shapes.layers[size_t(reader[last])].sources;
        if (src.size() != 2)
            return -1;
        const int skip = src[0] == int(last) ? src[1] : src[0];
        // Folded out of order (other layers between the group and the add), an add that ends the network, or whose
        // activation does, would leave the fused network ending on another layer: not folded.
        const bool reorders = reader[last] != int(last) + 1;
        if (reorders && size_t(reader[last]) + 2 >= n)
            return -1;
        return skip != int(last) && skip < int(i) ? reader[last] : -1;
    };
    std::vector<bool> absorbed(n, false); // an add (and its activation) folded into an earlier conv, out of order
    std::vector<size_t> origin; // the original layer each fused layer was made from
    bool reordered = false;
    std::map<std::string, std::string> renamed; // a folded layer's name → the fused layer that now holds its output
    for (size_t i = 0; i < n;) {
        if (absorbed[i]) {
            ++i;
            continue;
        }
        const size_t f = out.net.layers.size();
        out.net.layers.push_back(net.layers[i]);
        origin.push_back(i);
        out.map[i] = { f, true, true, {} };
        auto* conv = std::get_if<Conv2d>(&out.net.layers.back().spec);
        size_t next = i + 1;
        if (conv) {
            Layer& fused = out.net.layers.back();
            const auto fold = [&](size_t k) { renamed[net.layers[k].name] = fused.name; };
            if (chained(i, next))
                if (const auto* bn = std::get_if<BatchNorm2d>(&net.layers[next].spec)) {
                    foldBatchNorm(fused, net.layers[next], *bn);
                    conv->bias = true;
                    out.map[i].hasOutput = false;
                    out.map[i].note = "fused: batch norm " + label(net, next) + " folded into its weights and bias";
                    out.map[next] = { f, false, true, "fused: folded into " + label(net, i) };
                    ++next;
                }
            const size_t last = next - 1; // the conv or the folded batch norm
            const auto addNote = [&](const std::string& what) {
                out.map[i].note += std::string(out.map[i].note.empty() ? "fused: " : "; ") + what;
            };
            // An activation after the conv, or after the residual add folded into it (never both: the epilogue
            // applies one activation, after the add).
            const auto fuseActivation = [&](size_t before, size_t act) {
                const FusedActivation a
                    = chained(before, act) ? fusedActivationOf(net.layers[act].spec) : FusedActivation {};
                if (!a || !canFuse(a.kind))
                    return false;
                conv->fused_activation = a;
                out.map[before].hasOutput = false;
                addNote("activation " + label(net, act) + " applied in the epilogue");
                out.map[act] = { f, false, true, "fused: applied in the epilogue of " + label(net, i) };
                return true;
            };
            if (fuseActivation(last, next)) {
                ++next;
            } else if (const int a = canFuseResidual ? residualAdd(i, last) : -1; a >= 0) {
                const std::vector<int>& src = shapes.layers[size_t(a)].sources;
                const int skip = src[0] == int(last) ? src[1] : src[0];
                const std::string skipLabel = skip < 0 ? std::string("the network's input") : label(net, size_t(skip));
                conv->fused_residual = true;
                fused.inputs = { sourceName(shapes.layers[i].sources.at(0)), sourceName(skip) };
                out.map[last].hasOutput = false;
                addNote("add " + label(net, size_t(a)) + " (skip from " + skipLabel + ") folded into the epilogue");
                out.map[size_t(a)]
                    = { f, false, true, "fused: add (skip from " + skipLabel + ") folded into " + label(net, i) };
                absorbed[size_t(a)] = true;
                fold(size_t(a));
                if (fuseActivation(size_t(a), size_t(a) + 1)) {
                    absorbed[size_t(a) + 1] = true;
                    fold(size_t(a) + 1);
                }
                reordered = reordered || size_t(a) != next;
            }
            if (!out.map[i].hasOutput)
                out.map[i].note += "; its own output is not computed";
            for (size_t k = i + 1; k < next; ++k)
                fold(k);
        }
        i = next;
    }
    for (size_t f = 0; f < out.net.layers.size(); ++f) {
        Layer& layer = out.net.layers[f];
        // A layer that reads "the layer above" reads it by name once an add was folded out of order (the layer
        // above it in the fused network may no longer be the one above it in the original).
        if (reordered && layer.inputs.empty() && origin[f] > 0)
            layer.inputs = { net.layers[origin[f] - 1].name };
        for (std::string& name : layer.inputs)
            if (auto it = renamed.find(name); it != renamed.end())
                name = it->second;
    }
    out.shapes = inferShapes(out.net);
    if (!out.shapes.ok())
        throw Error("internal error: the fused network's shapes are invalid: " + out.shapes.firstError());
    return out;
}

} // namespace convscope
