// Element counts and byte sizes come from user input, so every product is checked: a size that does not
// fit in 63 bits is an InputError naming what overflowed, never a wrapped number and a tiny allocation.
#pragma once

#include "compute/error.h"

#include <cstdint>
#include <initializer_list>
#include <string>

namespace convscope {

inline int64_t checkedMul(int64_t a, int64_t b, const std::string& what)
{
    int64_t r = 0;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
        throw InputError(what + ": size overflows a 64-bit count");
    return r;
}

inline int64_t checkedAdd(int64_t a, int64_t b, const std::string& what)
{
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
        throw InputError(what + ": size overflows a 64-bit count");
    return r;
}

inline int64_t checkedProduct(std::initializer_list<int64_t> factors, const std::string& what)
{
    int64_t r = 1;
    for (int64_t f : factors)
        r = checkedMul(r, f, what);
    return r;
}

} // namespace convscope
