// Which axis the linear kind reads (issue 30: linear on the last axis of any rank), written once for shape inference,
// the parameters, every backend and the training sessions.
//
// The rule: linear reads the LAST axis, as torch.nn.Linear does — [*, in_features] → [*, out_features], the leading
// axes being rows of one GEMM (rows = numel / in_features). One exception keeps every network written before tensors
// had ranks: an image [N, C, 1, 1] or a volume [N, C, 1, 1, 1] (what global average pooling gives) is read as [N, C]
// and gives [N, out_features], the flatten that torchvision's models do before their classifier. (PyTorch would read
// such a tensor's last axis, of size 1; a network that means that says so with a reshape first, as ONNX import does.)
// A flat [N, F] is both readings at once.
#pragma once

#include "compute/shape.h"

#include <cstdint>
#include <vector>

namespace convscope {

struct LinearRows {
    int64_t rows = 0; // the GEMM's M: every position of the leading axes
    int64_t inFeatures = 0; // K: the axis the layer reads
    bool pooled = false; // [N, C, 1, 1] or [N, C, 1, 1, 1] read as [N, C] (the older rule)
};

// [N, C, 1, 1] / [N, C, 1, 1, 1]: read as [N, C] (see above).
inline bool linearReadsPooled(const Shape& in)
{
    return (in.isImage() && in.h == 1 && in.w == 1) || (in.isVolume() && in.d == 1 && in.h == 1 && in.w == 1);
}

inline LinearRows linearRows(const Shape& in)
{
    if (in.flat || linearReadsPooled(in))
        return { in.n, in.c, !in.flat };
    const std::vector<int64_t> dims = in.dims();
    const int64_t last = dims.back();
    return { last > 0 ? in.numel() / last : 0, last, false };
}

// The output's dims: [N, out_features] for a flat or pooled input, else the input's dims with the last replaced.
inline std::vector<int64_t> linearOutputDims(const Shape& in, int64_t outFeatures)
{
    if (in.flat || linearReadsPooled(in))
        return { in.n, outFeatures };
    std::vector<int64_t> dims = in.dims();
    dims.back() = outFeatures;
    return dims;
}

// Whether the layer's GEMM rows are the batch axis alone ([N, F] and the pooled shapes): the storage formats of the GPU
// sessions lay out such a tensor as [N, F] too, so their linear kernels read it in place; any other rank's last axis
// is not innermost in channels-last storage and those layers run on FP32 copies.
inline bool linearRowsAreBatch(const Shape& in) { return in.flat || linearReadsPooled(in); }

} // namespace convscope
