// Storage-format conv2d / conv3d (stored_conv.cuh; the kernels and why they look so in stored_conv_kernel.cuh), plus
// what both directions share: the weight preparation, the scratch size and the layer note. conv_transpose's
// launcher is in stored_conv_transpose.cu, so the two sets of kernel instances compile in parallel.
#include "kernels/cuda/stored_conv.cuh"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/stored_conv_kernel.cuh"

namespace convscope::cuda {

namespace {
    // out[(tap·C/g + c)·K + k] = the storage type's rounding of W (a conv's [K, C/g, taps], a transposed conv's
    // [C, K/g, taps]), as FP32. One thread per weight; once per layer at prepare.
    template <typename T>
    __global__ void prepareKernel(
        Conv3dGeometry g, bool transposed, const float* __restrict__ w, float* __restrict__ out, unsigned total)
    {
        const int cg = g.c / g.groups, kg = g.k / g.groups;
        const unsigned taps = unsigned(g.kd * g.kh * g.kw);
        for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
            const unsigned k = idx % unsigned(g.k), rest = idx / unsigned(g.k);
            const unsigned c = rest % unsigned(cg), tap = rest / unsigned(cg);
            const unsigned grp = k / unsigned(kg), kk = k % unsigned(kg);
            const size_t src
                = transposed ? (size_t(grp * cg + c) * kg + kk) * taps + tap : (size_t(k) * cg + c) * taps + tap;
            out[idx] = gpu::toFloat(gpu::fromFloat<T>(w[src]));
        }
    }
} // namespace

size_t storedConvScratchBytes(const Conv3dGeometry& g)
{
    return size_t(g.kd) * g.kh * g.kw * size_t(g.c / g.groups) * size_t(g.k) * sizeof(float);
}

void storedConvPrepare(
    const Conv3dGeometry& g, bool transposed, DType type, const float* w, void* scratch, cudaStream_t st)
{
    const long long total = static_cast<long long>(storedConvScratchBytes(g) / sizeof(float));
    if (total <= 0)
        return;
    gpu::withStorageType(type, [&](auto tag) {
        prepareKernel<decltype(tag)><<<stored_conv::blocksFor(total), 256, 0, st>>>(
            g, transposed, w, static_cast<float*>(scratch), unsigned(total));
    });
    CONVSCOPE_CUDA_CHECK_LAUNCH("stored conv weight preparation");
}

std::string storedConvNote(const Conv3dGeometry& g, bool transposed, DType type)
{
    const std::string what
        = transposed ? "transposed convolution gathering the taps whose input position is whole" : "direct convolution";
    if (stored_conv::isDepthwise(g))
        return what + ", depthwise: one thread per output position and " + std::to_string(16 / dtypeBytes(type))
            + " channels (16-byte loads; 1 channel where C does not allow)";
    return what + ", " + (g.groups > 1 ? std::to_string(g.groups) + " groups, " : std::string())
        + ((g.k / g.groups) % 4 == 0 ? "4 output channels" : "1 output channel")
        + " a thread, weights prepared as [taps][C/g][K]";
}

void convChannelsLast(const Conv3dGeometry& g, int act, float actParam, DType type, const void* x, const float* w,
    const float* bias, void* y, cudaStream_t st, const void* skip)
{
    stored_conv::launch<false>(g, act, actParam, type, x, w, bias, skip, y, st);
    CONVSCOPE_CUDA_CHECK_LAUNCH("stored conv");
}

} // namespace convscope::cuda
