// The cross-backend tests' cases and seed (case_selection.h).
#include "tests/backends/case_selection.h"

#include "compute/backend_registry.h"
#include "compute/layer_kinds.h"
#include "tests/backends/backend_cases.h"

#include <catch2/catch.hpp>

#include <cstdlib>

namespace convscope::test {

namespace {

    constexpr uint64_t kDefaultCaseSeed = 34;

} // namespace

uint64_t caseSeed()
{
    static const uint64_t seed = [] {
        if (Catch::rngSeed())
            return uint64_t(Catch::rngSeed());
        if (const char* s = std::getenv("CONVSCOPE_TEST_SEED"))
            return uint64_t(std::strtoull(s, nullptr, 10));
        return kDefaultCaseSeed;
    }();
    return seed;
}

std::vector<NetworkCase> allCases(uint64_t seed)
{
    std::vector<NetworkCase> cases;
    for (const LayerKindInfo& kind : kLayerKinds) {
        if (!opSelected(kind.type))
            continue;
        for (auto&& more :
            { fixedCasesFor(makeLayerSpec(kind.type)), randomCasesFor(makeLayerSpec(kind.type), seed) }) {
            REQUIRE_FALSE(more.empty());
            cases.insert(cases.end(), more.begin(), more.end());
        }
    }
    if (opSelected("graph"))
        for (NetworkCase& c : fixedGraphCases())
            cases.push_back(std::move(c));
    return cases;
}

std::vector<std::shared_ptr<Backend>> availableSelectedBackends(std::vector<std::string>& notRun)
{
    std::vector<std::shared_ptr<Backend>> out;
    for (const auto& backend : BackendRegistry::instance().backends()) {
        if (!backendSelected(backend->name()))
            continue;
        if (const Availability a = backend->availability(); !a.available)
            notRun.push_back(backend->name() + ": " + a.reason);
        else
            out.push_back(backend);
    }
    return out;
}

} // namespace convscope::test
