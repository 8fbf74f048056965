// One step's (or one pass's) layer times summed by phase, as the CLI, the benchmarks, the reports and the window
// print a training step: forward, backward (data + weights) and update; a phase a layer lacks (−1) counts 0.
#pragma once

#include "compute/training/training.h"

#include <algorithm>
#include <vector>

namespace convscope {

struct PhaseSums {
    double forward = 0, backward = 0, update = 0;
    double total() const { return forward + backward + update; }
};

inline PhaseSums sumPhases(const std::vector<LayerPhaseMs>& layers)
{
    PhaseSums s;
    for (const LayerPhaseMs& l : layers) {
        s.forward += std::max(0.0, l.forward);
        s.backward += std::max(0.0, l.backwardData) + std::max(0.0, l.backwardWeights);
        s.update += std::max(0.0, l.update);
    }
    return s;
}

} // namespace convscope
