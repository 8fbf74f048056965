// Storage-format dispatch of the cuda backend (stored_dispatch.h): one branch per kind, each a call into the kind's
// templated kernel with the shapes read channels-last. A channels-last tensor is [n, positions, c] with positions =
// D·H·W (1 for [N, F], which is the same in both layouts), so the element-wise and per-channel kinds need only C and
// the positions, and the kinds over dim 1 (softmax, concat) work on the innermost axis.
#include "kernels/cuda/stored_dispatch.h"

#include "kernels/cuda/copy_kernels.cuh"

#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/linear_geometry.h"
#include "compute/normalization.h"
#include "compute/resize.h"
#include "kernels/cuda/activation_kind.h"
#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/normalization_layer.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/resize.cuh"
#include "kernels/cuda/softmax.cuh"
#include "kernels/cuda/stored_conv.cuh"
#include "kernels/cuda/stored_layers.cuh"
#include "kernels/cuda/tensor_kinds.h"
#include "kernels/cuda/tensor_math.h"
#include "kernels/cuda/volume_geometry.h"

#include <type_traits>
#include <variant>

namespace convscope::cuda {

namespace {
    // The kinds with a storage-format kernel of their own, by family (the kind table's, compute/layer_kinds.h): the
    // switch names every family, so a new family is a compile error here, and a new kind of a family with kernels
    // must get its branch in runStoredLayer, whose chain ends in a static_assert.
    constexpr bool familyHasStoredKernel(KindFamily family)
    {
        switch (family) {
        case KindFamily::Pooling:
        case KindFamily::Normalization:
        case KindFamily::Activation:
        case KindFamily::FullyConnected:
        case KindFamily::Merge:
        case KindFamily::Padding: // pad, resize
        case KindFamily::Copy:
            return true;
        case KindFamily::Convolution: // prepareStoredConvolution's kernels, for the direct and tensor_core algorithms
        case KindFamily::Reshape: // flatten and reshape (views), transpose: on FP32 copies in a storage format
        case KindFamily::NoOp:
            return false;
        }
        return false;
    }

    template <typename T> constexpr bool hasStoredKernel = familyHasStoredKernel(layerKindOf<T>().family);
    template <typename T> constexpr bool isConvolutionKind = layerKindOf<T>().family == KindFamily::Convolution;

    // A 2-D convolution as a volume of depth 1 (stored_conv.cuh takes one geometry for both).
    template <typename C> Conv3dGeometry imageGeometryOf(const C& c, const LayerShape& s)
    {
        const Padding2d& pad = s.resolvedPadding;
        return { int(s.in.n), int(s.in.c), 1, int(s.in.h), int(s.in.w), int(s.out.c), 1, int(s.out.h), int(s.out.w), 1,
            int(c.kernel_size[0]), int(c.kernel_size[1]), 1, int(c.stride[0]), int(c.stride[1]), 0, int(pad.top),
            int(pad.left), 1, int(c.dilation[0]), int(c.dilation[1]), int(c.groups) };
    }

    Conv3dGeometry convolutionGeometryOf(const LayerSpec& spec, const LayerShape& s)
    {
        return std::visit(
            [&](const auto& l) -> Conv3dGeometry {
                using T = std::decay_t<decltype(l)>;
                if constexpr (std::is_same_v<T, Conv2d> || std::is_same_v<T, ConvTranspose2d>)
                    return imageGeometryOf(l, s);
                else if constexpr (std::is_same_v<T, Conv3d> || std::is_same_v<T, ConvTranspose3d>)
                    return volumeGeometryOf(l, s);
                else
                    throw Error("internal error: cuda: " + layerTypeName(l) + " is not a convolution");
            },
            spec);
    }

    bool isTransposed(const LayerSpec& spec)
    {
        return std::holds_alternative<ConvTranspose2d>(spec) || std::holds_alternative<ConvTranspose3d>(spec);
    }

    // A conv2d's fused activation (compute/fusion.h) as the epilogue's ActivationKind; −1 for none.
    int fusedActivationKind(const Conv2d& c, float* param)
    {
        *param = static_cast<float>(c.fused_activation.param);
        switch (c.fused_activation.kind) {
        case FusedActivation::Kind::ReLU:
            return int(ActivationKind::ReLU);
        case FusedActivation::Kind::LeakyReLU:
            return int(ActivationKind::LeakyReLU);
        case FusedActivation::Kind::Sigmoid:
            return int(ActivationKind::Sigmoid);
        case FusedActivation::Kind::Tanh:
            return int(ActivationKind::Tanh);
        case FusedActivation::Kind::ELU:
            return int(ActivationKind::ELU);
        case FusedActivation::Kind::None:
            break;
        }
        return -1;
    }

    PoolGeometry poolGeometryOf(const LayerShape& s, const Pair& kernel, const Pair& stride, const Pair& dilation)
    {
        const Padding2d& pad = s.resolvedPadding;
        return { int(s.in.n), int(s.in.c), int(s.in.h), int(s.in.w), int(s.out.h), int(s.out.w), int(kernel[0]),
            int(kernel[1]), int(stride[0]), int(stride[1]), int(pad.top), int(pad.bottom), int(pad.left),
            int(pad.right), int(dilation[0]), int(dilation[1]), true, 0 };
    }

    PadMode padModeOf(Pad::Mode m)
    {
        switch (m) {
        case Pad::Mode::Reflect:
            return PadMode::Reflect;
        case Pad::Mode::Replicate:
            return PadMode::Replicate;
        case Pad::Mode::Constant:
            break;
        }
        return PadMode::Constant;
    }

    long long positionsOf(const Shape& s) { return s.d * s.h * s.w; }
} // namespace

bool runsNativelyInStorage(const LayerSpec& spec)
{
    return std::visit([](const auto& l) { return hasStoredKernel<std::decay_t<decltype(l)>>; }, spec);
}

bool runsNativelyInStorage(const LayerSpec& spec, const std::string& algorithm)
{
    const bool convolution
        = std::visit([](const auto& l) { return isConvolutionKind<std::decay_t<decltype(l)>>; }, spec);
    return runsNativelyInStorage(spec) || (convolution && (algorithm == "direct" || algorithm == "tensor_core"));
}

size_t storedConvolutionScratchBytes(const LayerSpec& spec, const LayerShape& shape)
{
    return storedConvScratchBytes(convolutionGeometryOf(spec, shape));
}

std::string prepareStoredConvolution(
    const LayerSpec& spec, const LayerShape& shape, DType type, const float* weight, void* scratch, cudaStream_t st)
{
    const Conv3dGeometry g = convolutionGeometryOf(spec, shape);
    const bool transposed = isTransposed(spec);
    storedConvPrepare(g, transposed, type, weight, scratch, st);
    return std::string("native ") + dtypeName(type)
        + " channels-last kernel, FP32 math: " + storedConvNote(g, transposed, type);
}

void runStoredLayer(const LayerSpec& spec, const LayerShape& s, const StoredLayerCall& c, cudaStream_t st)
{
    const DType t = c.type;
    const void* x = c.inputs.empty() ? nullptr : c.inputs[0];
    void* y = c.output;
    std::visit(
        [&](const auto& l) {
            using T = std::decay_t<decltype(l)>;
            if constexpr (hasActivationKernel<T>) {
                float param = 0;
                const ActivationKind kind = activationKindOf(l, &param);
                activationStored(kind, param, s.in.numel(), t, x, y, st);
            } else if constexpr (isTensorMathKind<T>) {
                runTensorMathStored(l, s, t, c.inputs, c.weight, y, st);
            } else if constexpr (isGeneralTensorKind<T>) { // channels-last storage: the plans' strides say so
                runTensorKind(l, s, t, true, c.inputs, c.weight, c.scratch, y, st);
            } else if constexpr (std::is_same_v<T, Hardtanh>) {
                hardtanhStored(static_cast<float>(l.min_val), static_cast<float>(l.max_val), s.in.numel(), t, x, y, st);
            } else if constexpr (std::is_same_v<T, PReLU>) {
                preluChannelsLast(c.weight, l.num_parameters, s.in.numel(), s.in.c, t, x, y, st);
            } else if constexpr (std::is_same_v<T, Conv2d>) {
                float param = 0;
                const int act = fusedActivationKind(l, &param);
                convChannelsLast(imageGeometryOf(l, s), act, param, t, x, static_cast<const float*>(c.scratch), c.bias,
                    y, st,
                    l.fused_residual ? c.inputs.at(1) : nullptr); // a fused residual add's skip (compute/fusion.h)
            } else if constexpr (std::is_same_v<T, Conv3d>) {
                convChannelsLast(
                    volumeGeometryOf(l, s), -1, 0.0f, t, x, static_cast<const float*>(c.scratch), c.bias, y, st);
            } else if constexpr (std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, ConvTranspose3d>) {
                convTransposeChannelsLast(
                    convolutionGeometryOf(spec, s), t, x, static_cast<const float*>(c.scratch), c.bias, y, st);
            } else if constexpr (std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, BatchNorm3d>) {
                batchNormChannelsLast(s.in.numel(), int(s.in.c), t, x, static_cast<const float*>(c.scratch), y, st);
            } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                maxPool2dChannelsLast(poolGeometryOf(s, l.kernel_size, l.effectiveStride(), l.dilation), t, x, y, st);
            } else if constexpr (std::is_same_v<T, AvgPool2d>) {
                PoolGeometry g = poolGeometryOf(s, l.kernel_size, l.effectiveStride(), { 1, 1 });
                g.countIncludePad = l.count_include_pad;
                g.divisorOverride = l.divisor_override ? int(*l.divisor_override) : 0;
                avgPool2dChannelsLast(g, t, x, y, st);
            } else if constexpr (std::is_same_v<T, MaxPool3d>) {
                maxPool3dChannelsLast(pool3dGeometry(s, l.kernel_size, l.effectiveStride(), l.dilation), t, x, y, st);
            } else if constexpr (std::is_same_v<T, AvgPool3d>) {
                Pool3dGeometry g = pool3dGeometry(s, l.kernel_size, l.effectiveStride(), { 1, 1, 1 });
                g.countIncludePad = l.count_include_pad;
                g.divisorOverride = l.divisor_override ? int(*l.divisor_override) : 0;
                avgPool3dChannelsLast(g, t, x, y, st);
            } else if constexpr (std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, GlobalAvgPool3d>) {
                globalAvgPool2dChannelsLast(int(s.in.n), int(s.in.c), int(positionsOf(s.in)), t, x, y, st);
            } else if constexpr (std::is_same_v<T, Add>) {
                addStored(c.inputs, s.out.numel(), t, y, st);
            } else if constexpr (std::is_same_v<T, Mul>) {
                // A [N, C, 1, 1] gate (either input) is broadcast over the other's positions, as the FP32 path does.
                const bool gateFirst = s.ins[0] != s.out;
                const bool broadcast = s.ins[gateFirst ? 0 : 1] != s.out;
                mulStored(c.inputs[gateFirst ? 1 : 0], c.inputs[gateFirst ? 0 : 1], s.out.numel(),
                    broadcast ? s.out.c : 0, positionsOf(s.out), t, y, st);
            } else if constexpr (std::is_same_v<T, Concat>) {
                if (const int64_t dim = wrappedDim(l, s.out.ndim()); dim != 1) { // along the channels-last order
                    concatAxis(c.inputs, s.ins, s.out, dim, true, int(dtypeBytes(t)), y, st);
                } else {
                    std::vector<long long> channels;
                    for (const Shape& in : s.ins)
                        channels.push_back(in.c);
                    concatChannelsLast(c.inputs, channels, s.out.n * positionsOf(s.out), t, y, st);
                }
            } else if constexpr (std::is_same_v<T, Pad>) {
                pad2dChannelsLast(x, s.in.n, s.in.c, int(s.in.h), int(s.in.w), int(l.padding[0]), int(l.padding[2]),
                    int(s.out.h), int(s.out.w), padModeOf(l.mode), static_cast<float>(l.value), t, y, st);
            } else if constexpr (std::is_same_v<T, Resize>) {
                resizeChannelsLast(resizePlan(l, s), s.in.n, s.in.c, t, x, y, st);
            } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                // Channels-last: every position's row of channels is shuffled.
                channelShuffle(x, s.in.n * positionsOf(s.in), s.in.c, l.groups, 1, int(dtypeBytes(t)), y, st);
            } else if constexpr (std::is_same_v<T, Slice>) {
                const AxisRuns r = axisRuns(s.in, l.dim, true);
                sliceAxis(x, r.outer, r.size, r.inner, l.start, l.end, int(dtypeBytes(t)), y, st);
            } else if constexpr (isSoftmaxKind<T>) { // the axis's place in the channels-last order
                const AxisRuns r = axisRuns(s.in, wrapAxis(l.dim, s.in.ndim(), layerTypeName(l)), true);
                softmaxAxis(r.outer, r.size, r.inner, isLogSoftmax<T>, t, x, y, st);
            } else if constexpr (std::is_same_v<T, Reduce>) {
                reduceTensor(reducePlanChannelsLast(l, s), l.op, t, x, y, c.scratch, c.sms, st);
            } else if constexpr (std::is_same_v<T, Linear>) {
                const LinearRows r = linearRows(s.in); // [N, F] or [N, C, 1, 1]: rank 3 and up run on FP32 copies
                linearStored(int(r.rows), int(r.inFeatures), int(l.out_features), t, x, c.weightData, c.bias, y,
                    c.scratch, c.sms, st);
            } else if constexpr (isNormKind<T>) {
                normalizationStored(normGeometryOf(l, s.in), s.in.c, positionsOf(s.in), t, x, c.weight, c.bias, y, st);
            } else if constexpr (!hasStoredKernel<T>) {
                throw Error("internal error: cuda: " + layerTypeName(l) + " has no storage-format kernel");
            } else {
                static_assert(dependent_false<T>, "cuda: a kind with a storage-format kernel needs its branch here");
            }
        },
        spec);
}

} // namespace convscope::cuda
