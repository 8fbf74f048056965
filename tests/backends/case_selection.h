// The cases the cross-backend tests run (cross_backend_test.cpp, forward; cross_backend_training_test.cpp, one
// training step), the seed their random cases are drawn from, and the backends they run on, chosen once here so both
// run the same.
#pragma once

#include "tests/test_support.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace convscope::test {

// The seed of the random cases: Catch2's --rng-seed N (or "time"), else CONVSCOPE_TEST_SEED, else a fixed default, so
// CI and the GPU machine draw the same cases. The same value for the whole run.
uint64_t caseSeed();

// Every kind's fixed and random cases (random from `seed`) that --op selects, then the networks ("graph").
std::vector<NetworkCase> allCases(uint64_t seed);

// The registered backends --backend selects that are available here, in registration order; each selected one that is
// not gets "<name>: <reason>" in `notRun`.
std::vector<std::shared_ptr<Backend>> availableSelectedBackends(std::vector<std::string>& notRun);

} // namespace convscope::test
