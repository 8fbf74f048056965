// A tensor shape in NCHW. Fully connected activations are {n, features, 1, 1} with `flat` set, and are
// shown as [n, features] the way PyTorch prints them.
#pragma once

#include <cstdint>
#include <string>

namespace convscope {

struct Shape {
    int64_t n = 0, c = 0, h = 0, w = 0;
    bool flat = false;

    // Throws InputError if the count overflows.
    int64_t numel() const;
    int64_t bytes() const; // float32
    std::string str() const; // "[1, 6, 28, 28]" or "[1, 10]"
    bool operator==(const Shape& o) const
    {
        return n == o.n && c == o.c && h == o.h && w == o.w && flat == o.flat;
    }
    bool operator!=(const Shape& o) const { return !(*this == o); }

    static Shape nchw(int64_t n, int64_t c, int64_t h, int64_t w) { return { n, c, h, w, false }; }
    static Shape features(int64_t n, int64_t f) { return { n, f, 1, 1, true }; }
};

} // namespace convscope
