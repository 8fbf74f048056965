// The cases of the cross-backend test (cross_backend_test.cpp): small networks per layer kind, fixed ones chosen by
// hand (fixed_cases.cpp) and seeded random ones (random_cases.cpp), each named "<kind>: <what it checks>".
#pragma once

#include "compute/layer_spec.h"
#include "tests/test_support.h"

#include <cstdint>
#include <string>
#include <vector>

namespace convscope::test {

// Awkward shapes chosen by hand for one layer kind (every kind has at least one).
std::vector<NetworkCase> fixedCasesFor(const LayerSpec& kind);
// The fixed cases of a 3-D kind (fixed_cases_volume.cpp); empty for another kind.
std::vector<NetworkCase> fixedVolumeCasesFor(const LayerSpec& kind);
// The cases of a normalization kind (layer_norm, group_norm, instance_norm; norm_cases.cpp), fixed and seeded random;
// empty for another kind.
std::vector<NetworkCase> fixedNormCasesFor(const LayerSpec& kind);
std::vector<NetworkCase> randomNormCasesFor(const LayerSpec& kind, uint64_t seed);
// The fixed and the random cases of softmax, log_softmax and reduce (fixed_cases_reduce.cpp); empty for another kind.
std::vector<NetworkCase> fixedReduceCasesFor(const LayerSpec& kind);
std::vector<NetworkCase> randomReduceCasesFor(const LayerSpec& kind, uint64_t seed);
// The fixed cases of matmul and gather, and linear's on ranks other than 2 (fixed_cases_tensor.cpp); empty for another
// kind.
std::vector<NetworkCase> fixedTensorCasesFor(const LayerSpec& kind);
// Whole networks with skips through fusable groups (kind "graph"): a ResNet basic block, a U-Net level.
std::vector<NetworkCase> fixedGraphCases();
// Random cases of one kind from a seed (the same seed gives the same cases): random padding (asymmetric and "same"),
// stride, dilation, groups, odd and non-square sizes, batch 1 to 3, depths for the 3-D kinds; random sizes around
// the fixed cases for the kinds without a window.
std::vector<NetworkCase> randomCasesFor(const LayerSpec& kind, uint64_t seed);
// The kind a case is for: its name up to the colon ("conv2d", "graph").
std::string caseKind(const NetworkCase& c);

} // namespace convscope::test
