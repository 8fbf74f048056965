// add, mul, concat and pad on the GPU (merge.cuh). All four move bytes and do almost no arithmetic, so each is
// written to run at the memory's bandwidth:
//   add     up to kMaxSummands inputs per launch in one pass (each element read once from every input and
//           written once), float4 when the count allows it; more inputs continue from the partial sum in y.
//   mul     float4 over the output; the broadcast gate is read per element from a table that stays in L1/L2.
//   concat  one grid-stride copy per input into its channel slice: the slice of one image is contiguous
//           (channels · H · W floats), so an input is n contiguous runs, copied with float4 when aligned.
//   pad     one thread per output element, the source found per axis as the CPU's pad.cpp does.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/merge.cuh"

#include "kernels/common/cuda_check.h"

#include <algorithm>
#include <stdexcept>

namespace convscope::cuda {

namespace {

    constexpr int kThreads = 256;
    constexpr int kMaxSummands = 8;

    struct Summands {
        const float* x[kMaxSummands];
        int count;
    };

    bool aligned16(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15u) == 0; }

    __global__ void addKernel(Summands in, long long count, float* __restrict__ y)
    {
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
            float s = in.x[0][i];
            for (int k = 1; k < in.count; ++k)
                s += in.x[k][i];
            y[i] = s;
        }
    }

    __global__ void addKernel4(Summands in, long long count4, float4* __restrict__ y)
    {
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count4; i += stride) {
            float4 s = reinterpret_cast<const float4*>(in.x[0])[i];
            for (int k = 1; k < in.count; ++k) {
                const float4 v = reinterpret_cast<const float4*>(in.x[k])[i];
                s.x += v.x;
                s.y += v.y;
                s.z += v.z;
                s.w += v.w;
            }
            y[i] = s;
        }
    }

    __global__ void mulKernel(
        const float* __restrict__ a, const float* __restrict__ b, long long count, long long plane, float* __restrict__ y)
    {
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
            y[i] = a[i] * (plane ? b[i / plane] : b[i]);
    }

    __global__ void mulKernel4(const float4* __restrict__ a, const float* __restrict__ b, long long count4,
        long long plane, float4* __restrict__ y)
    {
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count4; i += stride) {
            float4 v = a[i];
            if (plane) { // plane % 4 == 0 here: the four elements share one gate value
                const float g = b[(4 * i) / plane];
                v.x *= g;
                v.y *= g;
                v.z *= g;
                v.w *= g;
            } else {
                const float4 g = reinterpret_cast<const float4*>(b)[i];
                v.x *= g.x;
                v.y *= g.y;
                v.z *= g.z;
                v.w *= g.w;
            }
            y[i] = v;
        }
    }

    // n runs of `run` floats: run r of x (contiguous) goes to y + r·pitch.
    __global__ void copyRunsKernel(
        const float* __restrict__ x, long long n, long long run, long long pitch, float* __restrict__ y)
    {
        const long long total = n * run;
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
            const long long r = i / run;
            y[r * pitch + (i - r * run)] = x[i];
        }
    }

    __global__ void copyRunsKernel4(
        const float4* __restrict__ x, long long n, long long run4, long long pitch4, float4* __restrict__ y)
    {
        const long long total = n * run4;
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
            const long long r = i / run4;
            y[r * pitch4 + (i - r * run4)] = x[i];
        }
    }

    __device__ __forceinline__ int sourceIndex(int o, int before, int size, PadMode mode)
    {
        const int i = o - before;
        if (i >= 0 && i < size)
            return i;
        if (mode == PadMode::Constant)
            return -1;
        if (mode == PadMode::Replicate)
            return i < 0 ? 0 : size - 1;
        return i < 0 ? -i : 2 * (size - 1) - i; // reflect: padding < size, one mirror suffices
    }

    __global__ void padKernel(const float* __restrict__ x, long long planes, int h, int w, int top, int left, int oh,
        int ow, PadMode mode, float value, float* __restrict__ y)
    {
        const long long total = planes * oh * ow;
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
            const int ox = static_cast<int>(i % ow);
            const long long t = i / ow;
            const int oy = static_cast<int>(t % oh);
            const long long p = t / oh;
            const int sy = sourceIndex(oy, top, h, mode), sx = sourceIndex(ox, left, w, mode);
            y[i] = sy < 0 || sx < 0 ? value : x[(p * h + sy) * w + sx];
        }
    }

} // namespace

void addTensors(const std::vector<const float*>& xs, long long count, float* y, cudaStream_t st)
{
    if (xs.empty() || count <= 0)
        return;
    bool vec = count % 4 == 0 && aligned16(y);
    for (const float* x : xs)
        vec = vec && aligned16(x);
    // The first launch sums up to kMaxSummands inputs; each later one adds the next kMaxSummands − 1 to y.
    size_t next = 0;
    while (next < xs.size()) {
        Summands s {};
        s.count = 0;
        if (next > 0)
            s.x[s.count++] = y;
        while (s.count < kMaxSummands && next < xs.size())
            s.x[s.count++] = xs[next++];
        if (vec) {
            const long long count4 = count / 4;
            addKernel4<<<elementwiseBlocks(count4, kThreads), kThreads, 0, st>>>(s, count4, reinterpret_cast<float4*>(y));
        } else {
            addKernel<<<elementwiseBlocks(count, kThreads), kThreads, 0, st>>>(s, count, y);
        }
        CONVSCOPE_CUDA_CHECK_LAUNCH("add");
    }
}

void mulTensors(const float* a, const float* b, long long count, long long plane, float* y, cudaStream_t st)
{
    if (count <= 0)
        return;
    const bool vec = count % 4 == 0 && aligned16(a) && aligned16(y) && (plane ? plane % 4 == 0 : aligned16(b));
    if (vec) {
        const long long count4 = count / 4;
        mulKernel4<<<elementwiseBlocks(count4, kThreads), kThreads, 0, st>>>(
            reinterpret_cast<const float4*>(a), b, count4, plane, reinterpret_cast<float4*>(y));
    } else {
        mulKernel<<<elementwiseBlocks(count, kThreads), kThreads, 0, st>>>(a, b, count, plane, y);
    }
    CONVSCOPE_CUDA_CHECK_LAUNCH("mul");
}

void concatChannels(const std::vector<const float*>& xs, const std::vector<long long>& channels, long long n,
    long long hw, float* y, cudaStream_t st)
{
    if (xs.size() != channels.size())
        throw std::logic_error("concatChannels: one channel count per input");
    long long total = 0;
    for (long long c : channels)
        total += c;
    long long offset = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
        const long long run = channels[k] * hw, pitch = total * hw;
        float* dst = y + offset * hw;
        if (run > 0 && n > 0) {
            if (run % 4 == 0 && pitch % 4 == 0 && aligned16(xs[k]) && aligned16(dst))
                copyRunsKernel4<<<elementwiseBlocks(n * run / 4, kThreads), kThreads, 0, st>>>(
                    reinterpret_cast<const float4*>(xs[k]), n, run / 4, pitch / 4, reinterpret_cast<float4*>(dst));
            else
                copyRunsKernel<<<elementwiseBlocks(n * run, kThreads), kThreads, 0, st>>>(xs[k], n, run, pitch, dst);
            CONVSCOPE_CUDA_CHECK_LAUNCH("concat");
        }
        offset += channels[k];
    }
}

void pad2d(const float* x, long long planes, int h, int w, int top, int left, int oh, int ow, PadMode mode,
    float value, float* y, cudaStream_t st)
{
    const long long total = planes * oh * ow;
    if (total <= 0)
        return;
    padKernel<<<elementwiseBlocks(total, kThreads), kThreads, 0, st>>>(x, planes, h, w, top, left, oh, ow, mode, value, y);
    CONVSCOPE_CUDA_CHECK_LAUNCH("pad");
}

} // namespace convscope::cuda
