#include "compute/network_weights.h"

#include "compute/atomic_file.h"
#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/npy.h"

#include <system_error>

namespace convscope {

namespace fs = std::filesystem;

bool hasEmbeddedWeights(const Network& net)
{
    for (const Layer& l : net.layers)
        if (l.init.kind == "embedded")
            return true;
    return false;
}

Network externalizeWeights(const Network& net, const fs::path& jsonPath)
{
    Network out = net;
    if (!hasEmbeddedWeights(net))
        return out;
    const fs::path dir = jsonPath.has_parent_path() ? jsonPath.parent_path() : fs::path(".");
    const std::string folder = jsonPath.stem().string() + ".weights";
    std::error_code ec;
    fs::create_directories(dir / folder, ec);
    if (ec)
        throw Error("cannot create " + (dir / folder).string() + ": " + ec.message());

    // Writes one tensor as an .npy of `dims` and returns its path relative to the JSON file.
    const auto write = [&](const Layer& l, const std::string& key, const std::shared_ptr<const Tensor>& t,
                           std::vector<int64_t> dims) {
        const std::string rel = folder + "/" + safeFileName(l.name) + "." + key + ".npy";
        writeNpy(dir / rel, dims, t->data());
        return rel;
    };
    for (Layer& l : out.layers) {
        if (l.init.kind != "embedded")
            continue;
        const Layer::Embedded* e = l.embedded.get();
        if (!e)
            throw InputError("layer " + l.name + ": its imported weights are missing");
        const auto vector = [](const Tensor& t) { return std::vector<int64_t> { t.shape().n }; };
        if (std::holds_alternative<BatchNorm2d>(l.spec) || std::holds_alternative<BatchNorm3d>(l.spec)) {
            const std::pair<const char*, std::shared_ptr<const Tensor>> parts[] = { { "running_mean", e->runningMean },
                { "running_var", e->runningVar }, { "weight", e->weight }, { "bias", e->bias } };
            for (const auto& [key, t] : parts) {
                if (!t)
                    continue;
                ParamValue v;
                v.kind = ParamValue::Kind::File;
                v.file = write(l, key, t, vector(*t));
                l.explicitParams[key] = v;
            }
            l.init = InitSpec {};
        } else {
            InitSpec init;
            init.kind = "file";
            if (e->weight) {
                // Linear weights are held as {out, in, 1, 1}; the file has PyTorch's [out, in].
                std::vector<int64_t> dims = e->weight->shape().dims();
                if (std::holds_alternative<Linear>(l.spec))
                    dims = { e->weight->shape().n, e->weight->shape().c };
                else if (std::holds_alternative<PReLU>(l.spec)) // the slopes are held as {P, 1, 1, 1}; PyTorch: [P]
                    dims = vector(*e->weight);
                init.weight_file = write(l, "weight", e->weight, dims);
            }
            if (e->bias)
                init.bias_file = write(l, "bias", e->bias, vector(*e->bias));
            l.init = init;
        }
        l.embedded.reset();
    }
    out.baseDir = dir;
    return out;
}

void saveNetworkWithWeights(const Network& net, const fs::path& jsonPath)
{
    saveNetwork(externalizeWeights(net, jsonPath), jsonPath);
}

} // namespace convscope
