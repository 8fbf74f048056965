// A tensor shape of rank 1 to 6. n, c, d, h, w are its NCHW(D) *view*, which convolutions, pooling and batch norm
// read; dims() gives the true dims. Rank 4 is an image NCHW, rank 5 a volume NCDHW; rank 2 is a fully connected
// activation {n, features, 1, 1} with `flat` set (rank stays 4 there: ndim() says 2), shown as [n, features] the way
// PyTorch prints it. Other ranks (1, 3, 6: a general tensor, from Shape::of) keep the view padded by ones at the end
// — [a] is n = a; [a, b, e] is n = a, c = b, h = e — and a rank-6 [a, b, e, f, g, k] folds its axes 2 and 3 into the
// view's d = e·f (e is kept in `e`). The memory layout is always PyTorch's contiguous one, last axis fastest, so the
// view and the dims address the same elements. The depth comes after `flat` so that the many four-number aggregate
// initialisers of images stay valid; an image has d == 1 and rank 4.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace convscope {

struct Shape {
    int64_t n = 0, c = 0, h = 0, w = 0;
    bool flat = false;
    int64_t d = 1; // depth of a volume; 1 for images and features
    int rank = 4; // 4 (NCHW, or [N, F] when flat), 5 (NCDHW), or 1, 3, 6 (a general tensor: see of())
    int64_t e = 1; // rank 6 only: dim 2; the view's d is dims 2 and 3 together (e · dim 3)

    // Throws InputError if the count overflows.
    int64_t numel() const;
    int64_t bytes() const; // float32
    std::string str() const; // "[1, 6, 28, 28]", "[1, 8, 32, 32, 32]", "[1, 10]" or "[2, 197, 768]"
    // The dimensions as an .npy file or PyTorch lists them: {n, f}, {n, c, h, w}, {n, c, d, h, w}, or a general
    // tensor's own.
    std::vector<int64_t> dims() const;
    // The number of dims (1 to 6): 2 for a flat shape.
    int ndim() const { return flat ? 2 : rank; }
    bool isVolume() const { return rank == 5; }
    // An [N, C, H, W] image (not flat, not a volume, not a general tensor of another rank).
    bool isImage() const { return rank == 4 && !flat; }
    // "4-D [N, C, H, W]", "5-D [N, C, D, H, W]", "2-D [N, F]" or "3-D tensor": for messages that name a layer's ranks.
    std::string rankText() const;
    bool operator==(const Shape& o) const
    {
        return n == o.n && c == o.c && h == o.h && w == o.w && flat == o.flat && d == o.d && rank == o.rank && e == o.e;
    }
    bool operator!=(const Shape& o) const { return !(*this == o); }

    static Shape nchw(int64_t n, int64_t c, int64_t h, int64_t w) { return { n, c, h, w, false }; }
    static Shape ncdhw(int64_t n, int64_t c, int64_t d, int64_t h, int64_t w) { return { n, c, h, w, false, d, 5 }; }
    static Shape features(int64_t n, int64_t f) { return { n, f, 1, 1, true }; }
    // The shape of these dims, rank 1 to 6 (2 is features, 4 nchw, 5 ncdhw); throws InputError for another rank, a
    // negative size or a rank-6 count that overflows.
    static Shape of(const std::vector<int64_t>& dims);
    // The largest rank a tensor may have.
    static constexpr int kMaxRank = 6;
};

} // namespace convscope
