#include "compute/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace convscope {

Stats Stats::of(const std::vector<double>& samples)
{
    Stats s;
    s.count = int(samples.size());
    if (samples.empty())
        return s;
    std::vector<double> v = samples;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s.min = v.front();
    s.max = v.back();
    s.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(n);
    if (n > 1) {
        double ss = 0;
        for (double x : v)
            ss += (x - s.mean) * (x - s.mean);
        s.stddev = std::sqrt(ss / double(n - 1));
    }
    return s;
}

} // namespace convscope
