#include "compute/network_split.h"

#include "compute/error.h"
#include "compute/shape_inference.h"

#include <algorithm>
#include <cstring>

namespace convscope {

SplitNetwork splitNetworkAt(const Network& net, const std::string& at)
{
    const auto it = std::find_if(net.layers.begin(), net.layers.end(), [&](const Layer& l) { return l.name == at; });
    if (it == net.layers.end()) {
        std::string names;
        for (const Layer& l : net.layers)
            names += (names.empty() ? "" : ", ") + l.name;
        throw InputError(net.name + ": no layer named \"" + at + "\" to cut at (the layers are " + names + ")");
    }
    const size_t cut = size_t(it - net.layers.begin());
    if (cut + 1 == net.layers.size())
        throw InputError(net.name + ": \"" + at + "\" is the last layer, so there is no decoder after it");
    const ShapeReport shapes = inferShapes(withBatch(net, 1));
    if (!shapes.ok())
        throw InputError(net.name + ": " + shapes.firstError());

    SplitNetwork s;
    s.cut = cut;
    s.latent = shapes.layers[cut].out;
    s.encoder = net;
    s.encoder.name = net.name + " — encoder (to " + at + ")";
    s.encoder.layers.resize(cut + 1);
    s.decoder = net;
    s.decoder.name = net.name + " — decoder (from " + at + ")";
    s.decoder.layers.assign(net.layers.begin() + std::ptrdiff_t(cut) + 1, net.layers.end());
    for (size_t k = cut + 1; k < net.layers.size(); ++k) {
        Layer& layer = s.decoder.layers[k - cut - 1];
        for (int src : shapes.layers[k].sources)
            if (src < int(cut))
                throw InputError(net.name + ": layer " + std::to_string(k) + " (" + layer.name + ") reads "
                    + (src < 0 ? std::string("the network's input") : "\"" + net.layers[size_t(src)].name + "\"")
                    + ", which comes before the cut at \"" + at
                    + "\"; the decoder may read only the latent and its own layers");
        for (std::string& name : layer.inputs)
            if (name == at)
                name = kNetworkInputName;
    }
    InputSpec& in = s.decoder.input;
    in.batch = 1;
    in.flat = s.latent.flat;
    in.channels = s.latent.c;
    in.depth = s.latent.isVolume() ? s.latent.d : 0;
    in.height = s.latent.h;
    in.width = s.latent.w;
    in.source = "random"; // the latents are always given
    return s;
}

Network withBatch(Network net, int64_t batch)
{
    net.input.batch = batch;
    return net;
}

std::vector<double> interpolationTimes(int steps)
{
    if (steps < 1)
        throw InputError("--steps must be at least 1, got " + std::to_string(steps));
    std::vector<double> ts;
    for (int k = 0; k < steps; ++k)
        ts.push_back(steps == 1 ? 0.0 : double(k) / double(steps - 1));
    return ts;
}

Tensor batchItem(const Tensor& t, int64_t index)
{
    Shape s = t.shape();
    if (index < 0 || index >= s.n)
        throw InputError("item " + std::to_string(index) + " of a batch of " + std::to_string(s.n));
    const int64_t per = t.numel() / s.n;
    s.n = 1;
    Tensor item(s);
    std::memcpy(item.data(), t.data() + index * per, size_t(per) * sizeof(float));
    return item;
}

Tensor stackItems(const std::vector<const Tensor*>& items)
{
    if (items.empty())
        throw InputError("nothing to stack");
    Shape s = items[0]->shape();
    int64_t total = 0;
    for (const Tensor* t : items) {
        Shape one = t->shape();
        one.n = s.n;
        if (one != s)
            throw InputError("cannot stack " + t->shape().str() + " onto " + items[0]->shape().str());
        total += t->shape().n;
    }
    s.n = total;
    Tensor out(s);
    float* dst = out.data();
    for (const Tensor* t : items) {
        std::memcpy(dst, t->data(), size_t(t->numel()) * sizeof(float));
        dst += t->numel();
    }
    return out;
}

Tensor interpolateLatents(const Tensor& z1, const Tensor& z2, const std::vector<double>& ts)
{
    if (z1.shape() != z2.shape() || z1.shape().n != 1)
        throw InputError(
            "the two latents must be one item each of one shape, got " + z1.shape().str() + " and " + z2.shape().str());
    Shape s = z1.shape();
    s.n = int64_t(ts.size());
    Tensor out(s);
    const int64_t per = z1.numel();
    for (size_t k = 0; k < ts.size(); ++k) {
        const float t = float(ts[k]);
        float* dst = out.data() + int64_t(k) * per;
        for (int64_t i = 0; i < per; ++i)
            dst[i] = (1.0f - t) * z1.data()[i] + t * z2.data()[i];
    }
    return out;
}

} // namespace convscope
