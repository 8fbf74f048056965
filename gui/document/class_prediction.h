// What a classifier's output means: the five most likely classes of one batch item with their probabilities, named
// when the network carries class names (Network::labels). The output is read as probabilities when it already is
// one (a softmax layer: non-negative, summing to 1), else as logits passed through a softmax here.
#pragma once

#include "compute/tensor.h"

#include <string>
#include <vector>

namespace convscope::gui {

struct ClassScore {
    int index = 0;
    std::string label; // empty when the network names no classes
    double probability = 0;
};

// Empty unless `out` is [n, classes] with 2 classes or more.
std::vector<ClassScore> topClasses(const Tensor& out, int64_t item, const std::vector<std::string>& labels, int k = 5);

} // namespace convscope::gui
