#include "compute/random.h"

namespace convscope {

namespace {

    // splitmix64 spreads a small seed (1, 2, 3 ...) over all 256 bits of xoshiro's state; seeding xoshiro
    // directly with a small number would give a long run of poor-quality outputs first.
    uint64_t splitmix64(uint64_t& x)
    {
        uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

    constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

} // namespace

Random::Random(uint64_t seed)
{
    uint64_t x = seed;
    for (uint64_t& s : m_s)
        s = splitmix64(x);
}

uint64_t Random::next()
{
    const uint64_t result = rotl(m_s[1] * 5, 7) * 9;
    const uint64_t t = m_s[1] << 17;
    m_s[2] ^= m_s[0];
    m_s[3] ^= m_s[1];
    m_s[1] ^= m_s[2];
    m_s[0] ^= m_s[3];
    m_s[2] ^= t;
    m_s[3] = rotl(m_s[3], 45);
    return result;
}

double Random::uniform()
{
    // The top 53 bits are xoshiro256**'s best and exactly fill a double's mantissa, so every value is an
    // exact multiple of 2^-53 in [0, 1) on every platform.
    return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

} // namespace convscope
