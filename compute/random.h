// ConvScope's own seeded generator: splitmix64-seeded xoshiro256**, with floats made from the top bits.
// std::uniform_real_distribution differs between standard libraries; this gives the same numbers on
// every platform so a seeded network is the same network everywhere.
#pragma once

#include <cstdint>

namespace convscope {

class Random {
public:
    explicit Random(uint64_t seed);
    uint64_t next();
    double uniform(); // [0, 1)
    double uniform(double low, double high) { return low + (high - low) * uniform(); }

private:
    uint64_t m_s[4];
};

} // namespace convscope
