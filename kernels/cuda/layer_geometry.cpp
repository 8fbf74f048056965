#include "kernels/cuda/layer_geometry.h"

#include "compute/error.h"
#include "compute/fusion.h"
#include "compute/layer_kinds.h"

#include <type_traits>
#include <variant>

namespace convscope::cuda {

namespace {
    ConvGeometry convGeometry(
        const LayerShape& s, int64_t groups, const Pair& kernel, const Pair& stride, const Pair& dilation)
    {
        const Padding2d& pad = s.resolvedPadding;
        return { int(s.in.n), int(s.in.c), int(s.in.h), int(s.in.w), int(s.out.c), int(s.out.h), int(s.out.w),
            int(kernel[0]), int(kernel[1]), int(stride[0]), int(stride[1]), int(pad.top), int(pad.left),
            int(dilation[0]), int(dilation[1]), int(groups) };
    }
} // namespace

ActivationKind activationKind(const LayerSpec& spec, float* param)
{
    return std::visit(
        [&](const auto& l) -> ActivationKind {
            using T = std::decay_t<decltype(l)>;
            // hardtanh and prelu have kernels of their own (parametric_activation.cuh) and are never fused.
            if constexpr (hasActivationKernel<T>)
                return activationKindOf(l, param);
            else
                throw Error("cuda: " + layerTypeName(l) + " is not an activation");
        },
        spec);
}

ConvGeometry geometryOf(const Conv2d& c, const LayerShape& s)
{
    ConvGeometry g = convGeometry(s, c.groups, c.kernel_size, c.stride, c.dilation);
    if (c.fused_activation) // applied in the epilogue (compute/fusion.h)
        g.act = int(activationKind(activationSpecOf(c.fused_activation), &g.actParam));
    return g;
}

ConvGeometry geometryOf(const ConvTranspose2d& c, const LayerShape& s)
{
    return convGeometry(s, c.groups, c.kernel_size, c.stride, c.dilation);
}

PoolGeometry poolGeometry(const LayerShape& s, const Pair& kernel, const Pair& stride, const Pair& dilation)
{
    const Padding2d& pad = s.resolvedPadding;
    return { int(s.in.n), int(s.in.c), int(s.in.h), int(s.in.w), int(s.out.h), int(s.out.w), int(kernel[0]),
        int(kernel[1]), int(stride[0]), int(stride[1]), int(pad.top), int(pad.bottom), int(pad.left), int(pad.right),
        int(dilation[0]), int(dilation[1]), true, 0 };
}

PadMode padMode(Pad::Mode m)
{
    switch (m) {
    case Pad::Mode::Constant:
        return PadMode::Constant;
    case Pad::Mode::Reflect:
        return PadMode::Reflect;
    case Pad::Mode::Replicate:
        return PadMode::Replicate;
    }
    return PadMode::Constant;
}

} // namespace convscope::cuda
