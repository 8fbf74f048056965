// add, mul, concat and pad on the GPU (merge.cuh). All four move bytes and do almost no arithmetic, so each is
// written to run at the memory's bandwidth:
//   add     up to kMaxSummands inputs per launch in one pass (each element read once from every input and
//           written once), float4 when the count allows it; more inputs continue from the partial sum in y.
//   mul     float4 over the output; the broadcast gate is read per element from a table that stays in L1/L2.
//   concat  one grid-stride copy per input into its channel slice: the slice of one image is contiguous
//           (channels · H · W floats), so an input is n contiguous runs, copied with float4 when aligned.
//   pad     one thread per output element, the source found per axis as the CPU's pad.cpp does.
// In a session's storage format (stored_layers.cuh; channels-last, FP32, FP16 or BF16): add and mul load 16-byte
// packs and compute in FP32 (mul's [n, C] gate is found at (i / (HW·C))·C + i mod C, a pack at a time when C is a
// whole number of packs); concat and pad only move values, so they copy bytes in the widest unit (16, 8, 4 or 2
// bytes) that the channel runs allow: concat's runs are each position's C_k channels, pad's are whole positions.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/merge.cuh"
#include "kernels/cuda/storage_pack.cuh"
#include "kernels/cuda/stored_layers.cuh"

#include "kernels/common/cuda_check.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <type_traits>

namespace convscope::cuda {

namespace {

    constexpr int kThreads = 256;
    constexpr int kMaxSummands = 8;

    struct Summands {
        const float* x[kMaxSummands];
        int count;
    };

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

    __global__ void mulKernel(const float* __restrict__ a, const float* __restrict__ b, long long count,
        long long plane, float* __restrict__ y)
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

    // n runs of `run` elements: run r of x (contiguous) goes to y + r·pitch. E is a float, or a unit of bytes.
    template <typename E>
    __global__ void copyRunsKernel(
        const E* __restrict__ x, long long n, long long run, long long pitch, E* __restrict__ y)
    {
        const long long total = n * run;
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
            const long long r = i / run;
            y[r * pitch + (i - r * run)] = x[i];
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

    template <typename T> struct StoredSummands {
        const T* x[kMaxSummands];
        int count;
    };

    // y may be x[0] (a continuation): each element is read before it is written, by the same thread.
    template <typename T> __global__ void addStoredKernel(StoredSummands<T> in, unsigned count, bool vec, T* y)
    {
        constexpr int V = kPack<T>;
        const unsigned stride = gridDim.x * blockDim.x;
        const unsigned first = blockIdx.x * blockDim.x + threadIdx.x;
        if (vec) {
            for (unsigned p = first; p < count / V; p += stride) {
                float s[V], v[V];
                loadPack<T>(in.x[0] + size_t(p) * V, s);
                for (int k = 1; k < in.count; ++k) {
                    loadPack<T>(in.x[k] + size_t(p) * V, v);
#pragma unroll
                    for (int e = 0; e < V; ++e)
                        s[e] += v[e];
                }
                storePack<T>(y + size_t(p) * V, s);
            }
        } else {
            for (unsigned i = first; i < count; i += stride) {
                float s = gpu::toFloat(in.x[0][i]);
                for (int k = 1; k < in.count; ++k)
                    s += gpu::toFloat(in.x[k][i]);
                y[i] = gpu::fromFloat<T>(s);
            }
        }
    }

    // plane = positions·channels when b is a [n, channels] gate, 0 when b is as large as a.
    template <typename T>
    __global__ void mulStoredKernel(const T* __restrict__ a, const T* __restrict__ b, unsigned count, unsigned channels,
        unsigned plane, bool vec, T* __restrict__ y)
    {
        constexpr int V = kPack<T>;
        const unsigned stride = gridDim.x * blockDim.x;
        const unsigned first = blockIdx.x * blockDim.x + threadIdx.x;
        if (vec) {
            for (unsigned p = first; p < count / V; p += stride) {
                const unsigned i0 = p * V;
                float u[V], g[V];
                loadPack<T>(a + i0, u);
                loadPack<T>(b + (plane ? (i0 / plane) * channels + i0 % channels : i0), g);
#pragma unroll
                for (int e = 0; e < V; ++e)
                    u[e] *= g[e];
                storePack<T>(y + i0, u);
            }
        } else {
            for (unsigned i = first; i < count; i += stride)
                y[i] = gpu::fromFloat<T>(
                    gpu::toFloat(a[i]) * gpu::toFloat(b[plane ? (i / plane) * channels + i % channels : i]));
        }
    }

    // Channels-last pad in units E (a whole number of them per position): `fill` is the constant value's unit.
    template <typename E>
    __global__ void padLastKernel(const E* __restrict__ x, long long n, int units, int h, int w, int top, int left,
        int oh, int ow, PadMode mode, E fill, E* __restrict__ y)
    {
        const long long total = n * oh * ow * units;
        const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
        for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
            const int u = static_cast<int>(i % units);
            long long t = i / units;
            const int ox = static_cast<int>(t % ow);
            t /= ow;
            const int oy = static_cast<int>(t % oh);
            const long long img = t / oh;
            const int sy = sourceIndex(oy, top, h, mode), sx = sourceIndex(ox, left, w, mode);
            y[i] = sy < 0 || sx < 0 ? fill : x[((img * h + sy) * w + sx) * units + u];
        }
    }

    // The widest copy unit (16, 8, 4 or 2 bytes) that divides every byte count and pointer given.
    int copyUnit(std::initializer_list<long long> bytes, std::initializer_list<const void*> ptrs)
    {
        for (int unit : { 16, 8, 4 }) {
            bool ok = true;
            for (long long b : bytes)
                ok = ok && b % unit == 0;
            for (const void* p : ptrs)
                ok = ok && reinterpret_cast<unsigned long long>(p) % unit == 0;
            if (ok)
                return unit;
        }
        return 2;
    }

    template <typename E>
    void copyRuns(const void* x, long long n, long long runBytes, long long pitchBytes, void* y, cudaStream_t st)
    {
        const long long run = runBytes / static_cast<long long>(sizeof(E)),
                        pitch = pitchBytes / static_cast<long long>(sizeof(E));
        copyRunsKernel<E><<<elementwiseBlocks(n * run, kThreads), kThreads, 0, st>>>(
            static_cast<const E*>(x), n, run, pitch, static_cast<E*>(y));
    }

    template <typename E>
    void padLast(const void* x, long long n, long long unitsBytes, int h, int w, int top, int left, int oh, int ow,
        PadMode mode, const unsigned char (&fill16)[16], void* y, cudaStream_t st)
    {
        E fill;
        std::memcpy(&fill, fill16, sizeof(E));
        const int units = int(unitsBytes / static_cast<long long>(sizeof(E)));
        padLastKernel<E><<<elementwiseBlocks(n * oh * ow * units, kThreads), kThreads, 0, st>>>(
            static_cast<const E*>(x), n, units, h, w, top, left, oh, ow, mode, fill, static_cast<E*>(y));
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
            addKernel4<<<elementwiseBlocks(count4, kThreads), kThreads, 0, st>>>(
                s, count4, reinterpret_cast<float4*>(y));
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
                copyRunsKernel<float4><<<elementwiseBlocks(n * run / 4, kThreads), kThreads, 0, st>>>(
                    reinterpret_cast<const float4*>(xs[k]), n, run / 4, pitch / 4, reinterpret_cast<float4*>(dst));
            else
                copyRunsKernel<<<elementwiseBlocks(n * run, kThreads), kThreads, 0, st>>>(xs[k], n, run, pitch, dst);
            CONVSCOPE_CUDA_CHECK_LAUNCH("concat");
        }
        offset += channels[k];
    }
}

void pad2d(const float* x, long long planes, int h, int w, int top, int left, int oh, int ow, PadMode mode, float value,
    float* y, cudaStream_t st)
{
    const long long total = planes * oh * ow;
    if (total <= 0)
        return;
    padKernel<<<elementwiseBlocks(total, kThreads), kThreads, 0, st>>>(
        x, planes, h, w, top, left, oh, ow, mode, value, y);
    CONVSCOPE_CUDA_CHECK_LAUNCH("pad");
}

void addStored(const std::vector<const void*>& xs, long long count, DType type, void* y, cudaStream_t st)
{
    if (xs.empty() || count <= 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        bool vec = count % kPack<T> == 0 && aligned16(y);
        for (const void* x : xs)
            vec = vec && aligned16(x);
        const long long work = vec ? count / kPack<T> : count;
        size_t next = 0;
        while (next < xs.size()) {
            StoredSummands<T> s {};
            if (next > 0)
                s.x[s.count++] = static_cast<const T*>(y);
            while (s.count < kMaxSummands && next < xs.size())
                s.x[s.count++] = static_cast<const T*>(xs[next++]);
            addStoredKernel<T>
                <<<elementwiseBlocks(work, kThreads), kThreads, 0, st>>>(s, unsigned(count), vec, static_cast<T*>(y));
            CONVSCOPE_CUDA_CHECK_LAUNCH("add");
        }
    });
}

void mulStored(const void* a, const void* b, long long count, long long channels, long long positions, DType type,
    void* y, cudaStream_t st)
{
    if (count <= 0)
        return;
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        const bool broadcast = channels > 0;
        const bool vec = count % kPack<T> == 0 && aligned16(a) && aligned16(b) && aligned16(y)
            && (!broadcast || channels % kPack<T> == 0);
        const long long work = vec ? count / kPack<T> : count;
        mulStoredKernel<T><<<elementwiseBlocks(work, kThreads), kThreads, 0, st>>>(static_cast<const T*>(a),
            static_cast<const T*>(b), unsigned(count), unsigned(channels),
            broadcast ? unsigned(positions * channels) : 0u, vec, static_cast<T*>(y));
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("mul");
}

void concatChannelsLast(const std::vector<const void*>& xs, const std::vector<long long>& channels, long long positions,
    DType type, void* y, cudaStream_t st)
{
    if (xs.size() != channels.size())
        throw std::logic_error("concatChannelsLast: one channel count per input");
    const long long eb = static_cast<long long>(dtypeBytes(type));
    long long total = 0;
    for (long long c : channels)
        total += c;
    long long offset = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
        const long long runBytes = channels[k] * eb, pitchBytes = total * eb;
        void* dst = static_cast<unsigned char*>(y) + offset * eb;
        if (runBytes > 0 && positions > 0) {
            switch (copyUnit({ runBytes, pitchBytes }, { xs[k], dst })) {
            case 16:
                copyRuns<uint4>(xs[k], positions, runBytes, pitchBytes, dst, st);
                break;
            case 8:
                copyRuns<uint2>(xs[k], positions, runBytes, pitchBytes, dst, st);
                break;
            case 4:
                copyRuns<unsigned>(xs[k], positions, runBytes, pitchBytes, dst, st);
                break;
            default:
                copyRuns<unsigned short>(xs[k], positions, runBytes, pitchBytes, dst, st);
                break;
            }
            CONVSCOPE_CUDA_CHECK_LAUNCH("concat");
        }
        offset += channels[k];
    }
}

void pad2dChannelsLast(const void* x, long long n, long long channels, int h, int w, int top, int left, int oh, int ow,
    PadMode mode, float value, DType type, void* y, cudaStream_t st)
{
    if (n * oh * ow * channels <= 0)
        return;
    // The constant's bytes in the storage type, repeated to fill a 16-byte unit.
    unsigned char fill[16];
    const size_t eb = dtypeBytes(type);
    gpu::withStorageType(type, [&](auto t) {
        using T = decltype(t);
        T v;
        if constexpr (std::is_same_v<T, float>)
            v = value;
        else if constexpr (std::is_same_v<T, __half>)
            v = __float2half_rn(value);
        else
            v = __float2bfloat16_rn(value);
        for (size_t k = 0; k < 16; k += eb)
            std::memcpy(fill + k, &v, eb);
    });
    const long long posBytes = channels * static_cast<long long>(eb);
    switch (copyUnit({ posBytes }, { x, y })) {
    case 16:
        padLast<uint4>(x, n, posBytes, h, w, top, left, oh, ow, mode, fill, y, st);
        break;
    case 8:
        padLast<uint2>(x, n, posBytes, h, w, top, left, oh, ow, mode, fill, y, st);
        break;
    case 4:
        padLast<unsigned>(x, n, posBytes, h, w, top, left, oh, ow, mode, fill, y, st);
        break;
    default:
        padLast<unsigned short>(x, n, posBytes, h, w, top, left, oh, ow, mode, fill, y, st);
        break;
    }
    CONVSCOPE_CUDA_CHECK_LAUNCH("pad");
}

} // namespace convscope::cuda
