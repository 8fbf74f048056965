// Summary statistics of timing samples. Every sample is kept elsewhere; these are for tables.
#pragma once

#include <vector>

namespace convscope {

struct Stats {
    double median = 0, min = 0, max = 0, mean = 0, stddev = 0; // stddev: sample (n-1)
    int count = 0;
    static Stats of(const std::vector<double>& samples);
};

} // namespace convscope
