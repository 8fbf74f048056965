// The gather kind's index arithmetic (compute/layer_spec_tensor.h's Gather), written once for the CPU op and the CUDA
// kernel (__host__ __device__ under nvcc). Output element at logical coordinates c (its dims outDims) is
// out[Σ c[k]·outStride[k]] = in[Σ c[k]·inMul[k] + indices[Σ c[k]·idxMul[k]] · axisStride]: inMul carries the axes
// before and after the gathered one, idxMul the axes that come from the indices (the indices are wrapped to
// non-negative on the host). The strides are for PyTorch's contiguous layout or a GPU session's channels-last storage.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CONVSCOPE_GATHER_HD __host__ __device__
#else
#define CONVSCOPE_GATHER_HD
#endif

namespace convscope {

inline constexpr int kMaxGatherRank = 6;

struct GatherPlan {
    int rank = 1;
    int64_t outDims[kMaxGatherRank] = { 1, 1, 1, 1, 1, 1 };
    int64_t outStride[kMaxGatherRank] = {}, inMul[kMaxGatherRank] = {}, idxMul[kMaxGatherRank] = {};
    int64_t axisStride = 0;
    int64_t count = 1;

    // Element `index` of the output in logical order: where it is stored, and where its value is read.
    template <typename Index>
    CONVSCOPE_GATHER_HD void locate(int64_t index, const Index* indices, int64_t& outOffset, int64_t& inOffset) const
    {
        int64_t o = 0, in = 0, idx = 0;
        for (int k = rank; k-- > 0;) {
            const int64_t c = index % outDims[k];
            index /= outDims[k];
            o += c * outStride[k];
            in += c * inMul[k];
            idx += c * idxMul[k];
        }
        outOffset = o;
        inOffset = in + int64_t(indices[idx]) * axisStride;
    }
};

} // namespace convscope
