// matmul's batched tiled GEMM and gather's copy (kernels/cuda/matmul.cuh).
//
// matmul: one block per 32 × 32 tile of C and batch matrix (grid z, strided when the batch passes 65535). Each step
// stages A[rows, k0..k0+31] and B[k0..k0+31, cols] in shared memory (padded by one column against bank conflicts),
// converting the storage type to float on the load; each thread keeps 4 FP32 sums (rows ty, ty+8, ty+16, ty+24 of its
// column) and rounds once to the storage type on the store. The operands' strides come from the plan, so a transposed
// or channels-last operand is read in place: loads along the fastest axis coalesce, others are gathered (correct,
// slower). No Tensor Cores: this is the readable reference of the GPU paths; cudnn.* runs cuBLAS.
#include "kernels/cuda/matmul.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/common/storage_types.cuh"
#include "kernels/cuda/elementwise.cuh"

#include <algorithm>

namespace convscope::cuda {

namespace {
    constexpr int kTile = 32, kRowsPerThread = 4, kThreadRows = kTile / kRowsPerThread;

    template <typename T> __global__ void matmulKernel(MatmulPlan p, const T* a, const T* b, T* c)
    {
        __shared__ float as[kTile][kTile + 1], bs[kTile][kTile + 1];
        const int tx = threadIdx.x, ty = threadIdx.y;
        const int64_t row0 = int64_t(blockIdx.y) * kTile, col0 = int64_t(blockIdx.x) * kTile;
        for (int64_t batch = blockIdx.z; batch < p.batch; batch += gridDim.z) {
            int64_t coord[kMaxMatmulBatchRank] = {};
            p.coordinates(batch, coord);
            const int64_t aBase = p.a.at(coord, p.batchRank, 0, 0), bBase = p.b.at(coord, p.batchRank, 0, 0),
                          cBase = p.c.at(coord, p.batchRank, 0, 0);
            float acc[kRowsPerThread] = {};
            for (int64_t k0 = 0; k0 < p.k; k0 += kTile) {
                for (int j = 0; j < kRowsPerThread; ++j) {
                    const int r = ty + j * kThreadRows;
                    const int64_t ar = row0 + r, ak = k0 + tx;
                    as[r][tx] = ar < p.m && ak < p.k ? gpu::toFloat(a[aBase + ar * p.a.rowStride + ak * p.a.colStride])
                                                     : 0.0f;
                    const int64_t bk = k0 + r, bc = col0 + tx;
                    bs[r][tx] = bk < p.k && bc < p.n ? gpu::toFloat(b[bBase + bk * p.b.rowStride + bc * p.b.colStride])
                                                     : 0.0f;
                }
                __syncthreads();
#pragma unroll 8
                for (int kk = 0; kk < kTile; ++kk) {
                    const float bv = bs[kk][tx];
                    for (int j = 0; j < kRowsPerThread; ++j)
                        acc[j] = fmaf(as[ty + j * kThreadRows][kk], bv, acc[j]);
                }
                __syncthreads();
            }
            const int64_t col = col0 + tx;
            for (int j = 0; j < kRowsPerThread; ++j) {
                const int64_t row = row0 + ty + j * kThreadRows;
                if (row < p.m && col < p.n)
                    c[cBase + row * p.c.rowStride + col * p.c.colStride] = gpu::fromFloat<T>(acc[j]);
            }
        }
    }

    template <typename T> __global__ void gatherKernel(GatherPlan p, const T* in, const long long* indices, T* out)
    {
        const int64_t stride = int64_t(gridDim.x) * blockDim.x;
        for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count; i += stride) {
            int64_t o = 0, s = 0;
            p.locate(i, indices, o, s);
            out[o] = in[s];
        }
    }
} // namespace

void matmulBatched(const MatmulPlan& p, DType type, const void* a, const void* b, void* c, cudaStream_t st)
{
    if (p.batch <= 0 || p.m <= 0 || p.n <= 0)
        return;
    const dim3 threads(kTile, kThreadRows);
    const dim3 blocks(unsigned((p.n + kTile - 1) / kTile), unsigned((p.m + kTile - 1) / kTile),
        unsigned(std::min<int64_t>(p.batch, 65535)));
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        matmulKernel<T>
            <<<blocks, threads, 0, st>>>(p, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c));
    });
    CONVSCOPE_CUDA_CHECK(cudaGetLastError());
}

std::string matmulNote(const MatmulPlan& p)
{
    return "our batched tiled GEMM (" + std::to_string(p.batch) + " × [" + std::to_string(p.m) + ", "
        + std::to_string(p.k) + "] · [" + std::to_string(p.k) + ", " + std::to_string(p.n)
        + "], 32 × 32 tiles in shared memory, FP32 sums)";
}

void gatherCopy(const GatherPlan& p, DType type, const void* in, const long long* indices, void* out, cudaStream_t st)
{
    if (p.count <= 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        gatherKernel<T><<<elementwiseBlocks(p.count, 256), 256, 0, st>>>(
            p, static_cast<const T*>(in), indices, static_cast<T*>(out));
    });
    CONVSCOPE_CUDA_CHECK(cudaGetLastError());
}

} // namespace convscope::cuda
