// kernels/common/fast_divmod.h against the hardware's `/` and `%`, on the host (the device path differs only in
// using __umulhi for the same multiply-high): every divisor up to 4096 and the powers of two and their neighbours, each
// with the dividends where an error would show first (the multiples of d and their neighbours, the top of the range)
// and seeded random ones.
#include "kernels/common/fast_divmod.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

using convscope::FastDivmod;

namespace {

uint32_t mismatches(uint32_t d, std::mt19937& rng)
{
    const FastDivmod f(d);
    constexpr uint32_t kTop = 0x7FFFFFFFu;
    std::vector<uint32_t> ns { 0, 1, d - 1, d, d + 1, kTop, kTop - 1, kTop - d, kTop / d * d, kTop / d * d - 1 };
    for (uint32_t k = 1; k < 64; ++k)
        ns.push_back(uint32_t(std::min<uint64_t>(kTop, uint64_t(d) * k * 977 + k % 3)));
    std::uniform_int_distribution<uint32_t> any(0, kTop);
    for (int k = 0; k < 200; ++k)
        ns.push_back(any(rng));
    uint32_t bad = 0;
    for (const uint32_t n : ns) {
        if (n > kTop)
            continue;
        uint32_t q = 0, r = 0;
        f.divmod(n, q, r);
        bad += (q != n / d || r != n % d) ? 1 : 0;
    }
    return bad;
}

} // namespace

TEST_CASE("FastDivmod divides every dividend below 2^31 exactly", "[fast_divmod]")
{
    std::mt19937 rng(7);
    std::vector<uint32_t> divisors;
    for (uint32_t d = 1; d <= 4096; ++d)
        divisors.push_back(d);
    for (uint32_t s = 12; s < 31; ++s)
        for (const uint32_t d : { (1u << s) - 1, 1u << s, (1u << s) + 1, (1u << s) * 3 / 2 })
            divisors.push_back(d);
    std::uniform_int_distribution<uint32_t> big(1, 0x7FFFFFFFu);
    for (int k = 0; k < 500; ++k)
        divisors.push_back(big(rng));
    uint32_t bad = 0;
    for (const uint32_t d : divisors)
        bad += mismatches(d, rng);
    CHECK(bad == 0);
}
