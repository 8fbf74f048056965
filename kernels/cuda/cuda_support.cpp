// What each cuda algorithm supports: the kinds the module runs, the 32-bit indexing bound, and the layers an
// algorithm cannot take (the tiled kernel's shared-memory bound, the FFT's stride-1 rule, long kernel spans).
#include "kernels/cuda/cuda_algorithms.h"

#include "compute/layer_kinds.h"
#include "compute/normalization.h"
#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/conv2d_fft.cuh"
#include "kernels/cuda/layer_geometry.h"
#include "kernels/cuda/tensor_kinds.h"
#include "kernels/cuda/tensor_math.h"

#include <limits>
#include <type_traits>
#include <variant>

namespace convscope::cuda {

namespace {
    constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max();

    // Every kind runLayer dispatches is named here too; a kind this backend does not know is refused with a reason
    // (and a kind added to LayerSpec without a decision here does not compile).
    std::string kindRefusal(const LayerSpec& spec)
    {
        return std::visit(
            [&](const auto& l) -> std::string {
                using T = std::decay_t<decltype(l)>;
                if constexpr (
                    std::is_same_v<T,
                        Conv2d> || std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, MaxPool2d> || std::is_same_v<T, AvgPool2d> || std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, ReLU> || std::is_same_v<T, LeakyReLU> || std::is_same_v<T, Sigmoid> || std::is_same_v<T, Tanh> || std::is_same_v<T, ELU> || std::is_same_v<T, ReLU6> || std::is_same_v<T, Hardswish> || std::is_same_v<T, Hardsigmoid> || std::is_same_v<T, SiLU> || std::is_same_v<T, Flatten> || std::is_same_v<T, Linear> || std::is_same_v<T, Softmax> || std::is_same_v<T, Add> || std::is_same_v<T, Mul> || std::is_same_v<T, Concat> || std::is_same_v<T, Pad> || std::is_same_v<T, Resize> || std::is_same_v<T, Identity> || std::is_same_v<T, Dropout> || std::is_same_v<T, ChannelShuffle> || std::is_same_v<T, Slice> || std::is_same_v<T, Hardtanh> || std::is_same_v<T, PReLU> || std::is_same_v<T, Reshape> || std::is_same_v<T, Transpose> || isTensorMathKind<T>)
                    return {};
                else if constexpr (isNormKind<T> || isSoftmaxKind<T> || std::is_same_v<T, Reduce>) // normalization.cu,
                                                                                                   // softmax.cuh,
                                                                                                   // reduce.cuh
                    return {};
                else if constexpr (isVolumeKind<T>) // the 3-D kinds: conv3d.cuh,
                                                    // pooling3d.cuh
                    return {};
                else if constexpr (isGeneralTensorKind<T>) // matmul.cu
                    return {};
                else
                    static_assert(dependent_false<T>, "cuda backend: supports() does not know a layer kind");
            },
            spec);
    }

} // namespace

Support cudaSupport(const std::string& algorithm, const LayerSpec& spec, const LayerShape& shape)
{
    const std::string sel = "cuda." + algorithm;
    if (!isKnownAlgorithm(algorithm))
        return { false, sel + ": unknown algorithm" };
    if (!shape.ok)
        return { false, sel + ": " + shape.error };
    if (const std::string why = kindRefusal(spec); !why.empty())
        return { false, why };
    if (shape.in.numel() > kMaxElements || shape.out.numel() > kMaxElements)
        return { false, sel + ": tensors of more than 2^31 elements are unsupported (32-bit indexing)" };
    if (const auto* c = std::get_if<Conv3d>(&spec)) {
        if (algorithm == kFft)
            return { false, sel + ": conv3d has no FFT path (the FFT convolution is 2-D); use cuda.implicit_gemm" };
        if (c->groups > 0
            && shape.out.c * (shape.in.c / c->groups) * c->kernel_size[0] * c->kernel_size[1] * c->kernel_size[2]
                > kMaxElements)
            return { false, sel + ": weights of more than 2^31 elements are unsupported (32-bit indexing)" };
    }
    if (const auto* c = std::get_if<Conv2d>(&spec)) {
        if (c->groups > 0
            && shape.out.c * (shape.in.c / c->groups) * c->kernel_size[0] * c->kernel_size[1] > kMaxElements)
            return { false, sel + ": weights of more than 2^31 elements are unsupported (32-bit indexing)" };
        const ConvGeometry g = geometryOf(*c, shape);
        if (algorithm == kTiled && conv2dTiledChannelsPerStage(g) == 0)
            return { false,
                sel + ": the input tile with its halo needs " + std::to_string(conv2dTiledSharedBytes(g, 1) / 1024)
                    + " KB of shared memory, more than the 48 KB the tiled kernel uses (large stride or "
                      "dilation); use cuda.direct or cuda.implicit_gemm" };
        if (algorithm == kFft)
            if (std::string why = fftRefusal(*c, shape, cudaFftTarget(), sel); !why.empty())
                return { false, std::move(why) };
        if ((algorithm == kImplicitGemm || algorithm == kWinograd || algorithm == kTensorCore)
            && ((g.r - 1) * g.dilH >= 32768 || (g.s - 1) * g.dilW >= 65536))
            return { false, sel + ": a kernel span of 32768 pixels or more is unsupported" };
    }
    return { true, {} };
}

} // namespace convscope::cuda
