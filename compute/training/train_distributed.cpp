// gatherRanks (train_run.h): after each selection, every rank sends rank 0 its steps (as JSON) and its trained
// parameters (raw floats), so that rank 0's report has a track per rank and says whether the ranks' parameters
// stayed equal (they must: every rank applies the same averaged gradients to the same starting weights).
#include "compute/training/distributed.h"
#include "compute/training/train_run.h"

#include "compute/error.h"

#include <cstring>
#include <nlohmann/json.hpp>

namespace convscope {

namespace {
    using nlohmann::json;

    std::string encode(const SelectionTraining& sel)
    {
        json steps = json::array();
        for (const StepResult& s : sel.steps) {
            json layers = json::array(), buckets = json::array();
            for (const LayerPhaseMs& l : s.layers)
                layers.push_back({ l.forward, l.backwardData, l.backwardWeights, l.update });
            for (const BucketTiming& b : s.buckets)
                buckets.push_back({ b.firstLayer, b.lastLayer, b.bytes, b.startMs, b.allReduceMs, b.hiddenMs });
            steps.push_back({ { "loss", s.loss }, { "loss_ms", s.lossMs }, { "backward_ms", s.backwardMs },
                { "wall_ms", s.wallMs }, { "loss_scale", s.lossScale }, { "skipped", s.skipped }, { "layers", layers },
                { "buckets", buckets } });
        }
        const std::string head = json { { "steps", steps }, { "metadata", sel.metadata } }.dump();
        std::string out(8, '\0');
        const uint64_t n = head.size();
        std::memcpy(out.data(), &n, 8);
        out += head;
        appendParameters(out, sel.trained);
        return out;
    }

    SelectionTraining decode(const std::string& bytes, const SelectionTraining& rank0, int rank)
    {
        uint64_t n = 0;
        if (bytes.size() < 8)
            throw Error("data parallel: rank " + std::to_string(rank) + " sent a truncated report");
        std::memcpy(&n, bytes.data(), 8);
        if (bytes.size() < 8 + n)
            throw Error("data parallel: rank " + std::to_string(rank) + " sent a truncated report");
        const json j = json::parse(bytes.substr(8, n));
        SelectionTraining sel;
        sel.selection = rank0.selection;
        sel.rank = rank;
        sel.worldSize = rank0.worldSize;
        sel.metadata = j.at("metadata").get<std::map<std::string, std::string>>();
        for (const json& s : j.at("steps")) {
            StepResult r;
            r.loss = s.at("loss").get<double>();
            r.lossMs = s.at("loss_ms").get<double>();
            r.backwardMs = s.at("backward_ms").get<double>();
            r.wallMs = s.at("wall_ms").get<double>();
            r.lossScale = s.at("loss_scale").get<double>();
            r.skipped = s.at("skipped").get<bool>();
            for (const json& l : s.at("layers"))
                r.layers.push_back({ l[0].get<double>(), l[1].get<double>(), l[2].get<double>(), l[3].get<double>() });
            for (const json& b : s.at("buckets"))
                r.buckets.push_back({ b[0].get<size_t>(), b[1].get<size_t>(), b[2].get<int64_t>(), b[3].get<double>(),
                    b[4].get<double>(), b[5].get<double>() });
            sel.steps.push_back(std::move(r));
        }
        // Its parameters against rank 0's.
        size_t at = size_t(8 + n);
        sel.maxParamRelL2 = parametersDrift(bytes, at, rank0.trained, rank);
        return sel;
    }
} // namespace

namespace {
    std::vector<std::shared_ptr<const Tensor>*> parameterSlots(Network& net)
    {
        std::vector<std::shared_ptr<const Tensor>*> slots;
        for (Layer& l : net.layers)
            for (auto* t : { &l.weight, &l.bias })
                if (*t)
                    slots.push_back(t);
        return slots;
    }
} // namespace

void appendParameters(std::string& out, Network net)
{
    for (auto* slot : parameterSlots(net))
        out.append(reinterpret_cast<const char*>((*slot)->data()), size_t((*slot)->numel()) * sizeof(float));
}

double parametersDrift(const std::string& bytes, size_t& at, const Network& reference, int rank)
{
    Network ref = reference;
    double drift = 0;
    for (auto* slot : parameterSlots(ref)) {
        Tensor t((*slot)->shape());
        const size_t b = size_t(t.numel()) * sizeof(float);
        if (bytes.size() < at + b)
            throw Error("data parallel: rank " + std::to_string(rank) + " sent fewer parameters than rank 0 has");
        std::memcpy(t.data(), bytes.data() + at, b);
        at += b;
        drift = std::max(drift, parameterDrift(t, **slot));
    }
    return drift;
}

void gatherRanks(TrainResult& result, ProcessGroup& group)
{
    if (result.selections.empty())
        throw Error("gatherRanks: no selection to send");
    const std::vector<std::string> all = group.gather(encode(result.selections.back()));
    if (group.rank() != 0)
        return;
    const SelectionTraining rank0 = result.selections.back();
    for (size_t r = 1; r < all.size(); ++r)
        result.selections.push_back(decode(all[r], rank0, int(r)));
}

} // namespace convscope
