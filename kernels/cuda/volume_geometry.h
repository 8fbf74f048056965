// The cuda backend's view of the 3-D kinds: their LayerSpec and inferred shape as the plain geometry structs the
// kernels take (conv3d.cuh, pooling3d.cuh), and which conv3d kernel each algorithm runs. Kept apart from
// cuda_backend.cpp, which dispatches every kind, so that file stays about dispatch.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "kernels/cuda/conv3d.cuh"
#include "kernels/cuda/pooling3d.cuh"

#include <string>

namespace convscope::cuda {

inline Conv3dGeometry conv3dGeometry(
    const LayerShape& s, const Triple& kernel, const Triple& stride, const Triple& dilation, int64_t groups)
{
    const Padding3d& p = s.resolvedPadding3d;
    return { int(s.in.n), int(s.in.c), int(s.in.d), int(s.in.h), int(s.in.w), int(s.out.c), int(s.out.d), int(s.out.h),
        int(s.out.w), int(kernel[0]), int(kernel[1]), int(kernel[2]), int(stride[0]), int(stride[1]), int(stride[2]),
        int(p.front), int(p.top), int(p.left), int(dilation[0]), int(dilation[1]), int(dilation[2]), int(groups) };
}

inline Conv3dGeometry volumeGeometryOf(const Conv3d& c, const LayerShape& s)
{
    return conv3dGeometry(s, c.kernel_size, c.stride, c.dilation, c.groups);
}

// conv_transpose3d: the padding amounts are what is cropped from the front/top/left of the full output.
inline Conv3dGeometry volumeGeometryOf(const ConvTranspose3d& c, const LayerShape& s)
{
    return conv3dGeometry(s, c.kernel_size, c.stride, c.dilation, c.groups);
}

inline Pool3dGeometry pool3dGeometry(
    const LayerShape& s, const Triple& kernel, const Triple& stride, const Triple& dilation)
{
    const Padding3d& p = s.resolvedPadding3d;
    return { int(s.in.n), int(s.in.c), int(s.in.d), int(s.in.h), int(s.in.w), int(s.out.d), int(s.out.h), int(s.out.w),
        int(kernel[0]), int(kernel[1]), int(kernel[2]), int(stride[0]), int(stride[1]), int(stride[2]), int(p.front),
        int(p.back), int(p.top), int(p.bottom), int(p.left), int(p.right), int(dilation[0]), int(dilation[1]),
        int(dilation[2]), true, 0 };
}

// conv3d under each cuda algorithm: implicit_gemm runs the implicit GEMM, and so does winograd (its transforms are
// 2-D 3×3 ones); direct runs the direct kernel, and so does tiled (there is no 3-D halo-tile kernel); fft is
// refused by supports() (the FFT convolution is 2-D).
enum class Conv3dPath { Direct, ImplicitGemm };

inline Conv3dPath conv3dPath(const std::string& algorithm)
{
    return algorithm == "implicit_gemm" || algorithm == "winograd" || algorithm == "tensor_core"
        ? Conv3dPath::ImplicitGemm
        : Conv3dPath::Direct;
}

inline std::string conv3dNote(const std::string& algorithm, const Conv3dGeometry& g, int smCount)
{
    if (conv3dPath(algorithm) == Conv3dPath::ImplicitGemm)
        return (algorithm == "winograd" ? "not Winograd (its transforms are 2-D 3x3): " : "") + std::string("3-D ")
            + conv3dImplicitGemmVariant(g, smCount);
    return (algorithm == "tiled" ? "no 3-D tiled kernel: " : "") + std::string("3-D direct, one thread per output");
}

} // namespace convscope::cuda
