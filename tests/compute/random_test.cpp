// The seeded generator must give the same numbers on every platform: these values come from an independent
// Python implementation of splitmix64 seeding and xoshiro256**.
#include "compute/random.h"

#include <catch2/catch.hpp>

#include <set>

using convscope::Random;

TEST_CASE("random: splitmix64-seeded xoshiro256** gives the reference sequence", "[random]")
{
    Random a(1);
    CHECK(a.next() == 0xb3f2af6d0fc710c5ULL);
    CHECK(a.next() == 0x853b559647364ceaULL);
    CHECK(a.next() == 0x92f89756082a4514ULL);
    Random z(0);
    CHECK(z.next() == 0x99ec5f36cb75f2b4ULL);
    CHECK(z.next() == 0xbf6e1f784956452aULL);
}

TEST_CASE("random: uniform() uses the top 53 bits and stays below 1", "[random]")
{
    Random r(42);
    CHECK(r.uniform() == double(0x15780b2e0c2ec716ULL >> 11) * 0x1.0p-53);
    Random s(7);
    std::set<double> seen;
    double low = 1, high = 0, sum = 0;
    for (int i = 0; i < 100000; ++i) {
        const double u = s.uniform();
        REQUIRE(u >= 0.0);
        REQUIRE(u < 1.0);
        low = std::min(low, u);
        high = std::max(high, u);
        sum += u;
        seen.insert(u);
    }
    CHECK(low < 1e-3);
    CHECK(high > 1 - 1e-3);
    CHECK(sum / 100000 == Approx(0.5).margin(0.01));
    CHECK(seen.size() == 100000);
    Random t(7);
    const double v = t.uniform(-2.0, 3.0);
    Random t2(7);
    CHECK(v == -2.0 + 5.0 * t2.uniform());
}
