// The cross-backend tests' cases and seed (case_selection.h).
#include "tests/backends/case_selection.h"

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

} // namespace convscope::test
