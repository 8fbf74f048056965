// Which layers the cudnn training session refuses (training_layers.h: cudnnTrainingRefusal), and why: the kinds with
// no backward on cudnn yet, and the shapes cuDNN's descriptors cannot make PyTorch's (asymmetric padding, pools
// whose windows are not the floor formula's, a broadcast mul). maxpool2d trains on our kernels, any window, unless
// --option max_pool=cudnn.
#include "compute/elementwise_math.h"
#include "compute/layer_kinds.h"
#include "compute/normalization.h"
#include "kernels/cudnn/reduce_layers.h"
#include "kernels/cudnn/tensor_layers.h"
#include "kernels/cudnn/training_layers.h"

#include <limits>
#include <type_traits>
#include <variant>

namespace convscope::cudnn {

namespace {
    int64_t floorWindows(int64_t size, int64_t pad, int64_t kernel, int64_t stride)
    {
        return (size + 2 * pad - kernel) / stride + 1;
    }

    // Why cuDNN's pooling cannot be PyTorch's for this window (empty: it is exactly).
    std::string poolRefusal(const LayerShape& s, const Pair& kernel, const Pair& stride, bool ceil)
    {
        const Padding2d& p = s.resolvedPadding;
        if (p.top != p.bottom || p.left != p.right)
            return "asymmetric padding is unsupported in training on cudnn (cuDNN's pooling pads both sides equally)";
        if (floorWindows(s.in.h, p.top, kernel[0], stride[0]) != s.out.h
            || floorWindows(s.in.w, p.left, kernel[1], stride[1]) != s.out.w)
            return std::string(ceil ? "ceil_mode's extra window" : "this output size")
                + " is unsupported in training on cudnn (cuDNN's pooling has only the floor formula's windows)";
        return {};
    }
} // namespace

std::string cudnnTrainingRefusal(const Network& net, const ShapeReport& shapes, size_t i, bool maxPoolOnCudnn)
{
    const LayerSpec& spec = net.layers[i].spec;
    const LayerShape& s = shapes.layers[i];
    if (isVolumeLayer(spec) || s.in.isVolume() || s.out.isVolume())
        return std::string(layerKind(spec).type)
            + " on volumes has no backward on cudnn yet (the volume kinds are unsupported)";
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    if (s.in.numel() > kMax || s.out.numel() > kMax)
        return "tensors of more than 2^31 elements are unsupported (cuDNN's int sizes)";
    if (std::string why = tensorTrainingRefusal(spec, s); !why.empty()) // matmul, gather, linear on rank ≥ 3
        return why;
    return std::visit(
        [&](const auto& l)
            -> std::
                string {
                    using T = std::decay_t<decltype(l)>;
                    if constexpr (std::is_same_v<T, Conv2d>) {
                        if (l.fused_activation)
                            return "a fused activation is unsupported in training (train the "
                                   "unfused network)";
                        if (l.fused_residual)
                            return "a fused residual add is unsupported in training (train the "
                                   "unfused network)";
                        const Padding2d& p = s.resolvedPadding;
                        if (p.top != p.bottom || p.left != p.right)
                            return "asymmetric padding is unsupported in training on cudnn (cuDNN's "
                                   "convolution "
                                   "descriptor "
                                   "pads both sides equally)";
                    } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                        if (!maxPoolOnCudnn)
                            return {}; // our kernel takes every window: dilation, ceil_mode, asymmetric padding
                        if (l.dilation[0] != 1 || l.dilation[1] != 1)
                            return "maxpool2d with dilation is unsupported in training on cudnn (cuDNN's pooling "
                                   "has none)";
                        return poolRefusal(s, l.kernel_size, l.effectiveStride(), l.ceil_mode);
                    } else if constexpr (std::is_same_v<T, AvgPool2d>) {
                        if (l.divisor_override)
                            return "avgpool2d with divisor_override is unsupported in training on "
                                   "cudnn (cuDNN's "
                                   "pooling "
                                   "divides by the window)";
                        return poolRefusal(s, l.kernel_size, l.effectiveStride(), l.ceil_mode);
                    } else if constexpr (std::is_same_v<T, Mul>) {
                        if (s.ins.size() != 2 || s.ins[0] != s.ins[1])
                            return "mul with a broadcast gate ([N, C, 1, 1]) is unsupported in "
                                   "training on cudnn "
                                   "(only "
                                   "factors of one shape)";
                    } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                        const Padding2d& p = s.resolvedPadding;
                        if (p.top != p.bottom || p.left != p.right)
                            return "asymmetric padding is unsupported in training on cudnn (cuDNN's "
                                   "convolution "
                                   "descriptor pads both sides equally)";
                    } else if constexpr (
                        std::is_same_v<T,
                            Pad> || std::is_same_v<T, Resize> || std::is_same_v<T, ChannelShuffle> || std::is_same_v<T, Slice> || std::is_same_v<T, Reshape> || std::is_same_v<T, Transpose> || isElementwiseMathKind<T> || std::is_same_v<T, Binary> || isNormKind<T>) {
                        return std::string(layerKind(spec).type)
                            + " has no backward on cudnn yet (unsupported; train on cpu.direct or "
                              "cpu.im2col_gemm)";
                    } else if constexpr (isSoftmaxKind<T> || std::is_same_v<T, Reduce>) {
                        return reduceTrainingRefusal(spec); // empty for softmax and log_softmax
                    } else if constexpr (std::is_same_v<T, Concat>) {
                        if (wrappedDim(l, s.out.ndim()) != 1)
                            return "concat along dim " + std::to_string(l.dim)
                                + " has no backward on cudnn yet (only along the channels; train "
                                  "on cpu.direct or cpu.im2col_gemm)";
                    } else if constexpr (
                        std::
                            is_same_v<T,
                                Dropout> || std::is_same_v<T, Linear> || std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, Flatten> || std::is_same_v<T, Identity> || std::is_same_v<T, Add> || std::is_same_v<T, PReLU> || kCudnnActivation<T> || kOurActivation<T> || isVolumeKind<T>) {
                        // trains (the volume kinds were refused above)
                    } else if constexpr (std::is_same_v<T, Matmul> || std::is_same_v<T, Gather>) { // refused above
                    } else {
                        static_assert(dependent_false<T>, "cudnn training: a layer kind is not decided on");
                    }
                    return {};
                },
        spec);
}

} // namespace convscope::cudnn
