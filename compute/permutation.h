// A transpose's permutation reduced to what the copy needs: the axes that stay neighbours merged (NCHW → NHWC is
// [N, C, H·W] → [N, H·W, C]) and the axes of size 1 dropped. The CPU's transpose and the CUDA kernels both walk it.
#pragma once

#include <cstdint>
#include <vector>

namespace convscope {

struct SimplePermutation {
    std::vector<int64_t> out; // the size of each output axis
    std::vector<int64_t> stride; // its step in the input, in elements
    // The output axis that is the input's innermost (stride 1); out.size() - 1 when rows are copied whole.
    size_t innermost() const
    {
        size_t p = 0;
        while (p + 1 < stride.size() && stride[p] != 1)
            ++p;
        return p;
    }
};

// `perm` maps output axis a to input axis perm[a] (already wrapped into 0..rank-1).
inline SimplePermutation simplifyPermutation(const std::vector<int64_t>& inDims, const std::vector<int64_t>& perm)
{
    const size_t rank = inDims.size();
    std::vector<int64_t> inStride(rank, 1);
    for (size_t a = rank; a-- > 1;)
        inStride[a - 1] = inStride[a] * inDims[a];
    SimplePermutation p;
    for (size_t a = 0; a < rank; ++a) {
        const auto axis = size_t(perm[a]);
        if (inDims[axis] == 1)
            continue;
        // Output axis a continues the previous one when, in the input, it directly follows it: merge them.
        if (!p.out.empty() && p.stride.back() == inStride[axis] * inDims[axis]) {
            p.out.back() *= inDims[axis];
            p.stride.back() = inStride[axis];
        } else {
            p.out.push_back(inDims[axis]);
            p.stride.push_back(inStride[axis]);
        }
    }
    if (p.out.empty()) {
        p.out.push_back(1);
        p.stride.push_back(1);
    }
    return p;
}

} // namespace convscope
