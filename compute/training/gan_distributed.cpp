// gatherGanRanks (gan_run.h): after the DCGAN loop under data parallel, every rank sends rank 0 its timed steps (as
// JSON) and both trained networks' parameters (raw floats). Rank 0 makes each step's losses and D's mean
// probabilities the ranks' mean (each rank's are over its slice of the batch, and the slices are equal, so the mean
// is the whole batch's), keeps every rank's steps for the report's per-rank rows, and measures how far each rank's
// parameters are from its own: they must be equal, since every update applies the same averaged gradients.
#include "compute/training/distributed.h"
#include "compute/training/gan_run.h"
#include "compute/training/train_run.h"

#include "compute/error.h"

#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>

namespace convscope {

namespace {
    using nlohmann::json;

    // The phases a rank sends, in the order they travel (one list for both ends).
    constexpr double GanPhaseMs::*kSentPhases[] = { &GanPhaseMs::dRealForward, &GanPhaseMs::dRealBackward,
        &GanPhaseMs::gForward, &GanPhaseMs::dFakeForward, &GanPhaseMs::dFakeBackward, &GanPhaseMs::dUpdate,
        &GanPhaseMs::gdForward, &GanPhaseMs::gdBackward, &GanPhaseMs::gBackward, &GanPhaseMs::gUpdate,
        &GanPhaseMs::loss, &GanPhaseMs::allReduce, &GanPhaseMs::allReduceHidden };

    json ganStepJson(const GanStep& s)
    {
        json phases = json::array();
        for (double GanPhaseMs::*field : kSentPhases)
            phases.push_back(s.phases.*field);
        return { { "loss_d", s.lossD }, { "loss_g", s.lossG }, { "d_real", s.dReal }, { "d_fake", s.dFake },
            { "loss_scale", s.lossScale }, { "d_skipped", s.dSkipped }, { "g_skipped", s.gSkipped },
            { "wall_ms", s.wallMs }, { "data_ms", s.dataMs }, { "phases", phases } };
    }

    GanStep ganStepFrom(const json& j)
    {
        GanStep s;
        s.lossD = j.at("loss_d").get<double>();
        s.lossG = j.at("loss_g").get<double>();
        s.dReal = j.at("d_real").get<double>();
        s.dFake = j.at("d_fake").get<double>();
        s.lossScale = j.at("loss_scale").get<double>();
        s.dSkipped = j.at("d_skipped").get<bool>();
        s.gSkipped = j.at("g_skipped").get<bool>();
        s.wallMs = j.at("wall_ms").get<double>();
        s.dataMs = j.at("data_ms").get<double>();
        const std::vector<double> v = j.at("phases").get<std::vector<double>>();
        if (v.size() != std::size(kSentPhases))
            throw Error("data parallel: a rank sent a GAN step with " + std::to_string(v.size()) + " phases, not "
                + std::to_string(std::size(kSentPhases)));
        for (size_t i = 0; i < v.size(); ++i)
            s.phases.*kSentPhases[i] = v[i];
        return s;
    }
} // namespace

void gatherGanRanks(GanResult& result, ProcessGroup& group)
{
    json steps = json::array();
    for (const GanStep& s : result.steps)
        steps.push_back(ganStepJson(s));
    const std::string head = steps.dump();
    std::string mine(8, '\0');
    const uint64_t n = head.size();
    std::memcpy(mine.data(), &n, 8);
    mine += head;
    appendParameters(mine, result.generator);
    appendParameters(mine, result.discriminator);
    const std::vector<std::string> all = group.gather(mine);
    if (group.rank() != 0)
        return;
    result.rankSteps.assign(1, result.steps);
    for (size_t r = 1; r < all.size(); ++r) {
        const std::string& bytes = all[r];
        uint64_t len = 0;
        if (bytes.size() >= 8)
            std::memcpy(&len, bytes.data(), 8);
        if (bytes.size() < 8 || bytes.size() - 8 < len)
            throw Error("data parallel: rank " + std::to_string(r) + " sent a truncated GAN report");
        std::vector<GanStep> theirs;
        for (const json& j : json::parse(bytes.substr(8, size_t(len))))
            theirs.push_back(ganStepFrom(j));
        if (theirs.size() != result.steps.size())
            throw Error("data parallel: rank " + std::to_string(r) + " ran " + std::to_string(theirs.size())
                + " steps, rank 0 " + std::to_string(result.steps.size()));
        size_t at = size_t(8 + len);
        result.maxParamRelL2 = std::max(result.maxParamRelL2, parametersDrift(bytes, at, result.generator, int(r)));
        result.maxParamRelL2 = std::max(result.maxParamRelL2, parametersDrift(bytes, at, result.discriminator, int(r)));
        result.rankSteps.push_back(std::move(theirs));
    }
    // The whole batch's losses: the mean of the ranks' (equal slices).
    const double ranks = double(result.rankSteps.size());
    for (size_t i = 0; i < result.steps.size(); ++i) {
        GanStep& s = result.steps[i];
        s.lossD = s.lossG = s.dReal = s.dFake = 0;
        for (const std::vector<GanStep>& rank : result.rankSteps) {
            s.lossD += rank[i].lossD / ranks;
            s.lossG += rank[i].lossG / ranks;
            s.dReal += rank[i].dReal / ranks;
            s.dFake += rank[i].dFake / ranks;
        }
    }
}

} // namespace convscope
