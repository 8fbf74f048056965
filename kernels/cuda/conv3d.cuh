// conv3d and conv_transpose3d on the GPU (the volumes issue): cuda.direct's one-thread-per-output kernels and
// cuda.implicit_gemm's tiled GEMM over the volume (conv3d.cu, conv3d_implicit_gemm.cu, conv_transpose3d.cu).
// Host-side launchers only, so cuda_backend.cpp can include this without device code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::cuda {

// One 3-D convolution, NCDHW. Input [n, c, d, h, w]; output [n, k, od, oh, ow]; weight [k, c/groups, kd, kh, kw]
// (conv3d) or [c, k/groups, kd, kh, kw] (conv_transpose3d). As in 2-D (conv2d.cuh), only the front/top/left padding
// reaches the kernels: the back/bottom/right amounts only change the output size, which shape inference fixed, and a
// tap past the input reads a zero either way. For conv_transpose3d the three amounts are what PyTorch's padding (or
// "same") crops from the front/top/left of the full transposed output.
struct Conv3dGeometry {
    int n, c, d, h, w;
    int k, od, oh, ow;
    int kd, kh, kw;
    int sd, sh, sw;
    int pd, ph, pw;
    int dd, dh, dw;
    int groups;
};

// One thread per output element, the taps straight from global memory: the reference every faster kernel is
// checked against on the device.
void conv3dDirect(
    const Conv3dGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);

// The implicit GEMM (conv3d_implicit_gemm.cu): its scratch holds a table of the reduction's taps, built once at
// prepare, and, when the launcher splits the reduction over several blocks, their partial sums.
size_t conv3dImplicitGemmScratchBytes(const Conv3dGeometry& g, int smCount);
void conv3dImplicitGemmPrepare(const Conv3dGeometry& g, void* scratch, cudaStream_t st);
// The tile and split the launcher picks ("256x32 tiles, 8x8 per thread, reduction split 4 ways").
std::string conv3dImplicitGemmVariant(const Conv3dGeometry& g, int smCount);
void conv3dImplicitGemm(const Conv3dGeometry& g, const float* x, const float* w, const float* bias, float* y,
    void* scratch, int smCount, cudaStream_t st);

// conv_transpose3d by gathering (conv_transpose3d.cu): one thread per output element, visiting only the taps whose
// input position is whole (the stride divides the offset).
void convTranspose3dGather(
    const Conv3dGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);

} // namespace convscope::cuda
