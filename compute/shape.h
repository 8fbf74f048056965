// A tensor shape in NCHW, or NCDHW for volumes (rank 5). Fully connected activations are {n, features, 1, 1}
// with `flat` set, and are shown as [n, features] the way PyTorch prints them. The depth comes after `flat` so
// that the many four-number aggregate initialisers of images stay valid; an image has d == 1 and rank 4, and the
// memory layout of a volume is n, c, d, h, w with w fastest (PyTorch's contiguous NCDHW).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace convscope {

struct Shape {
    int64_t n = 0, c = 0, h = 0, w = 0;
    bool flat = false;
    int64_t d = 1; // depth of a volume; 1 for images and features
    int rank = 4; // 4 (NCHW, or [N, F] when flat) or 5 (NCDHW)

    // Throws InputError if the count overflows.
    int64_t numel() const;
    int64_t bytes() const; // float32
    std::string str() const; // "[1, 6, 28, 28]", "[1, 8, 32, 32, 32]" or "[1, 10]"
    // The dimensions as an .npy file or PyTorch lists them: {n, f}, {n, c, h, w} or {n, c, d, h, w}.
    std::vector<int64_t> dims() const;
    bool isVolume() const { return rank == 5; }
    // "4-D [N, C, H, W]", "5-D [N, C, D, H, W]" or "2-D [N, F]": for messages that name a layer's ranks.
    std::string rankText() const;
    bool operator==(const Shape& o) const
    {
        return n == o.n && c == o.c && h == o.h && w == o.w && flat == o.flat && d == o.d && rank == o.rank;
    }
    bool operator!=(const Shape& o) const { return !(*this == o); }

    static Shape nchw(int64_t n, int64_t c, int64_t h, int64_t w) { return { n, c, h, w, false }; }
    static Shape ncdhw(int64_t n, int64_t c, int64_t d, int64_t h, int64_t w) { return { n, c, h, w, false, d, 5 }; }
    static Shape features(int64_t n, int64_t f) { return { n, f, 1, 1, true }; }
};

} // namespace convscope
