// The matmul kind's index arithmetic (compute/layer_spec_tensor.h's Matmul), written once for the CPU ops and the CUDA
// kernels (__host__ __device__ under nvcc): C[b] = A[b] · B[b] over the broadcast batch, as a plan of plain numbers a
// kernel takes by value. Each operand's element (batch b, row, column) is at off(b) + row · rowStride + col ·
// colStride, off(b) summing b's coordinate along each output batch axis times the operand's stride there (0 where it is
// broadcast), so one kernel reads PyTorch's contiguous layout and a GPU session's channels-last storage alike (the host
// works out the strides; compute/matmul.h).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CONVSCOPE_MATMUL_HD __host__ __device__
#else
#define CONVSCOPE_MATMUL_HD
#endif

namespace convscope {

inline constexpr int kMaxMatmulBatchRank = 4; // rank 6 less the two matrix axes

struct MatmulOperandPlan {
    int64_t batchStride[kMaxMatmulBatchRank] = {}; // along each output batch axis; 0 where broadcast
    int64_t rowStride = 0, colStride = 0;

    CONVSCOPE_MATMUL_HD int64_t at(const int64_t* coord, int batchRank, int64_t row, int64_t col) const
    {
        int64_t off = row * rowStride + col * colStride;
        for (int k = 0; k < batchRank; ++k)
            off += coord[k] * batchStride[k];
        return off;
    }
};

struct MatmulPlan {
    int batchRank = 0;
    int64_t batchDims[kMaxMatmulBatchRank] = { 1, 1, 1, 1 }; // the output's batch axes, outermost first
    int64_t batch = 1; // their product
    int64_t m = 1, n = 1, k = 1;
    MatmulOperandPlan a, b, c; // A [M, K], B [K, N], C [M, N] per batch matrix

    // The coordinates of batch matrix `index` along the batch axes.
    CONVSCOPE_MATMUL_HD void coordinates(int64_t index, int64_t* coord) const
    {
        for (int k = batchRank; k-- > 0;) {
            coord[k] = index % batchDims[k];
            index /= batchDims[k];
        }
    }
};

} // namespace convscope
