// linear: y = x·Wᵀ + b, x [rows, in], W [out, in] (PyTorch's layout), y [rows, out]. Both operands are
// contiguous along the reduction dimension `in` (an "NT" product).
//
// Two kernels, chosen by the batch:
//   rows ≤ 8 (a classifier at batch 1, LeNet): a matrix–vector product in disguise, bound by reading W once.
//   One warp per output feature: the lanes stride along `in` with coalesced (float4 when aligned) loads of W's
//   row and of every x row, keep up to 8 partial sums in registers, and reduce them with shuffles. Nothing is
//   staged or synchronised, so a 120×400 layer is one short launch.
//   larger batches: our own tiled SGEMM. A block computes a 64×64 tile of y with 256 threads, each a 4×4
//   register tile; per step it stages a 64×16 slice of x and of W in shared memory, stored transposed
//   ([k][row]) so the inner loop reads 4 consecutive rows and 4 consecutive columns as float4s. Each staged
//   value is reused by 64 outputs, which turns the product from memory-bound into arithmetic-bound.
#include "kernels/cuda/linear.cuh"

namespace convscope::cuda {

namespace {
    constexpr int kGemvMaxRows = 8;

    // MaxRows (1, 2, 4 or 8) bounds the rows at compile time, so a batch-1 layer keeps one accumulator and one
    // five-step shuffle instead of eight (f6 of LeNet: 3.2 µs in ncu with eight). The strided loop is unrolled
    // four times so a lane's loads of W (in L2 after the first pass) are all in flight together instead of one
    // latency per iteration (f5, 400 inputs: 4 iterations, 5.5 µs in ncu before).
    template <int MaxRows>
    __global__ void linearGemvKernel(int rows, int in, int out, const float* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y)
    {
        const int o = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
        const int lane = threadIdx.x % 32;
        if (o >= out)
            return;
        float acc[MaxRows] = {};
        const float* wr = w + static_cast<long long>(o) * in;
        if (in % 4 == 0) {
            const float4* w4 = reinterpret_cast<const float4*>(wr);
#pragma unroll 4
            for (int i = lane; i < in / 4; i += 32) {
                const float4 a = __ldg(w4 + i);
#pragma unroll
                for (int r = 0; r < MaxRows; ++r) {
                    if (r < rows) {
                        const float4 b = __ldg(reinterpret_cast<const float4*>(x + static_cast<long long>(r) * in) + i);
                        acc[r] = fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, acc[r]))));
                    }
                }
            }
        } else {
#pragma unroll 4
            for (int i = lane; i < in; i += 32) {
                const float a = __ldg(wr + i);
#pragma unroll
                for (int r = 0; r < MaxRows; ++r)
                    if (r < rows)
                        acc[r] = fmaf(a, __ldg(x + static_cast<long long>(r) * in + i), acc[r]);
            }
        }
#pragma unroll
        for (int r = 0; r < MaxRows; ++r) {
            float v = acc[r];
#pragma unroll
            for (int s = 16; s > 0; s >>= 1)
                v += __shfl_xor_sync(0xFFFFFFFFu, v, s);
            if (lane == 0 && r < rows)
                y[static_cast<long long>(r) * out + o] = v + (bias ? bias[o] : 0.0f);
        }
    }

    template <int MaxRows>
    void launchGemv(int rows, int in, int out, const float* x, const float* w, const float* bias, float* y,
        cudaStream_t st)
    {
        constexpr int warpsPerBlock = 4;
        linearGemvKernel<MaxRows><<<(out + warpsPerBlock - 1) / warpsPerBlock, warpsPerBlock * 32, 0, st>>>(
            rows, in, out, x, w, bias, y);
    }

    constexpr int kTm = 64, kTn = 64, kTk = 16;

    __global__ void __launch_bounds__(256) linearSgemmKernel(int rows, int in, int out, const float* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y)
    {
        __shared__ __align__(16) float xs[kTk][kTm];
        __shared__ __align__(16) float ws[kTk][kTn];
        const int tid = threadIdx.x;
        const int rowBase = blockIdx.y * kTm, colBase = blockIdx.x * kTn;
        const int tr = tid / 16, tc = tid % 16; // 16×16 threads, 4×4 outputs each
        float acc[4][4] = {};
        for (int k0 = 0; k0 < in; k0 += kTk) {
            // 64 rows × 16 k = 1024 values per operand, 4 per thread; consecutive threads read along k.
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int idx = tid + i * 256;
                const int r = idx / kTk, k = idx % kTk;
                const int gr = rowBase + r, gc = colBase + r, gk = k0 + k;
                xs[k][r] = (gr < rows && gk < in) ? __ldg(x + static_cast<long long>(gr) * in + gk) : 0.0f;
                ws[k][r] = (gc < out && gk < in) ? __ldg(w + static_cast<long long>(gc) * in + gk) : 0.0f;
            }
            __syncthreads();
#pragma unroll
            for (int k = 0; k < kTk; ++k) {
                const float4 a = *reinterpret_cast<const float4*>(&xs[k][tr * 4]);
                const float4 b = *reinterpret_cast<const float4*>(&ws[k][tc * 4]);
                const float av[4] = { a.x, a.y, a.z, a.w }, bv[4] = { b.x, b.y, b.z, b.w };
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
            }
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = rowBase + tr * 4 + i;
            if (r >= rows)
                continue;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int c = colBase + tc * 4 + j;
                if (c < out)
                    y[static_cast<long long>(r) * out + c] = acc[i][j] + (bias ? __ldg(bias + c) : 0.0f);
            }
        }
    }
} // namespace

const char* linearVariant(int rows) { return rows <= kGemvMaxRows ? "warp per output (GEMV)" : "tiled SGEMM 64x64"; }

void linear(int rows, int in, int out, const float* x, const float* w, const float* bias, float* y, cudaStream_t st)
{
    if (rows > kGemvMaxRows) {
        const dim3 grid((out + kTn - 1) / kTn, (rows + kTm - 1) / kTm);
        linearSgemmKernel<<<grid, 256, 0, st>>>(rows, in, out, x, w, bias, y);
    } else if (rows == 1) {
        launchGemv<1>(rows, in, out, x, w, bias, y, st);
    } else if (rows == 2) {
        launchGemv<2>(rows, in, out, x, w, bias, y, st);
    } else if (rows <= 4) {
        launchGemv<4>(rows, in, out, x, w, bias, y, st);
    } else {
        launchGemv<kGemvMaxRows>(rows, in, out, x, w, bias, y, st);
    }
}

} // namespace convscope::cuda
