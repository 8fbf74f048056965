// Division by a divisor fixed at launch, as a multiply-high and a shift: n / d for 0 ≤ n < 2^31 and 1 ≤ d < 2^31.
// The GPU has no integer divider: a 32-bit division by a run-time value is about twenty instructions and a 64-bit
// one several times that, which made an element-wise kernel that splits a flat index into (row, column) several times
// per element instruction-bound rather than memory-bound (the 2-D resize). The method is CUTLASS's FastDivmod
// (Granlund and Montgomery's round-up magic number): p = 31 + ⌈log2 d⌉, m = ⌈2^p / d⌉, then n / d = (n · m) >> p,
// exact for every n below 2^31. Host and device; tests/compute/fast_divmod_test.cpp checks it against `/` on the host.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CONVSCOPE_FAST_DIVMOD_HD __host__ __device__ __forceinline__
#else
#define CONVSCOPE_FAST_DIVMOD_HD inline
#endif

namespace convscope {

struct FastDivmod {
    uint32_t divisor = 1, multiplier = 0, shift = 0;

    FastDivmod() = default;
    // d ≥ 1 and below 2^31.
    explicit FastDivmod(uint32_t d)
        : divisor(d)
    {
        if (d == 1)
            return;
        uint32_t log2 = 0; // ⌈log2 d⌉
        while ((uint64_t(1) << log2) < d)
            ++log2;
        const uint32_t p = 31 + log2;
        multiplier = uint32_t(((uint64_t(1) << p) + d - 1) / d);
        shift = p - 32;
    }

    // n / divisor, for n < 2^31.
    CONVSCOPE_FAST_DIVMOD_HD uint32_t quotient(uint32_t n) const
    {
        if (divisor == 1)
            return n;
#if defined(__CUDA_ARCH__)
        return __umulhi(n, multiplier) >> shift;
#else
        return uint32_t((uint64_t(n) * multiplier) >> 32) >> shift;
#endif
    }
    // n / divisor into q and n mod divisor into r.
    CONVSCOPE_FAST_DIVMOD_HD void divmod(uint32_t n, uint32_t& q, uint32_t& r) const
    {
        q = quotient(n);
        r = n - q * divisor;
    }
};

} // namespace convscope
