// conv2d on the GPU: four algorithms of one convolution (cuda.direct, cuda.tiled, cuda.implicit_gemm,
// cuda.winograd).
// Host-side launchers only, so cuda_backend.cpp can include this without device code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::cuda {

// The geometry of one convolution, NCHW. Input [n, c, h, w]; output [n, k, p, q]; weight [k, c/groups, r, s]
// (conv2d) or [c, k/groups, r, s] (conv_transpose2d). Bottom/right padding only changes the output size (p,
// q), which shape inference fixed, so the kernels need only the top/left amounts: a tap that falls below or
// right of the input reads a zero exactly like one above or left of it. That is how every kernel here
// supports asymmetric padding for free.
struct ConvGeometry {
    int n, c, h, w;
    int k, p, q;
    int r, s;
    int strideH, strideW;
    int padTop, padLeft;
    int dilH, dilW;
    int groups;
    // conv2d only: an activation fused into the epilogue (compute/fusion.h), an ActivationKind value; −1 for none.
    int act = -1;
    float actParam = 0.0f;
    // conv2d only: a residual add fused into the epilogue (compute/fusion.h, Conv2d::fused_residual): the skip tensor,
    // of the output's shape and stored like the output (FP32 NCHW for the FP32 kernels; the storage format, channels-
    // last, for the Tensor Core kernel), added after the bias and before the activation. Null for none.
    const void* residual = nullptr;
    // Implicit GEMM tile override (--option igemm_tile=128x128|64x128|64x64|32x64|128x128cp|64x128cp): 0 lets the
    // launcher choose by the layer's size; 1-6 force those tiles, for measuring what a tile shape buys.
    int igemmTile = 0;
    // Implicit GEMM split-K override (--option igemm_splits=1…64): 0 lets the launcher split the reduction of a
    // grid too small to fill the device; 1 never splits; N splits the pipelined tiles' reduction into N parts.
    int igemmSplits = 0;
    // Tiny-layer kernel lane override (--option tiny_lanes=1|2|4|8|16|32): 0 lets the launcher choose.
    int tinyLanes = 0;
    // 1: the implicit GEMM's scratch was sized and prepared by conv2dImplicitGemmScratchBytes / Prepare, so the
    // pipelined tiles (which read transposed weights from it) may run. 0 (cuda.winograd's batched GEMMs, which
    // build only the table): never.
    int igemmPipe = 0;
    // 1: the implicit GEMM's pipelined tiles multiply on TF32 Tensor Cores (tf32_mma.cuh; cuda.tensor_core's training
    // step under --math tf32), and take every layer they can (pointwise ones too); 0: FP32 FFMA. Layers the pipelined
    // tiles cannot take run FP32 either way. 2 / 3: as 1, but the operands are exact in FP16 / BF16 (cuda.tensor_core's
    // training step under --math fp16 / bf16, whose products read rounded tensors), so the pipelined tiles multiply in
    // that type on m16n8k16 (half_mma.cuh; the same exact products) and everything else takes the TF32 path.
    int tf32 = 0;
};

// "128x128" → 1 … "32x64" → 4; throws InputError naming the choices for anything else.
int parseImplicitGemmTile(const std::string& text);
// "1" … "64" (igemm_splits); throws InputError for anything else.
int parseImplicitGemmSplits(const std::string& text);

// Tiny problems (LeNet at batch 1: ≤ 16384 outputs, a reduction C/g·R·S of ≥ 16 taps, ≤ 4M multiply-adds):
// a warp (8 lanes below 64 taps) per output with the reduction split across its lanes, or, for 3×3 and 5×5
// kernels, 1–16 lanes per output with the taps unrolled at compile time (conv2d.cu says why). Every cuda
// algorithm runs these kernels when they apply; the layer note says so.
bool conv2dSmallApplies(const ConvGeometry& g);
// Which form runs ("tiny layer: 5x5 taps unrolled, 4 lanes per output splitting the input channels …").
std::string conv2dSmallNote(const ConvGeometry& g);
void conv2dSmall(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);

// Few input channels (C ≤ 4, C·R·S ≤ 64, one group, Q % 4 == 0): a stem's kernel (conv2d_small_channels.cu),
// taken by cuda.implicit_gemm and cuda.winograd.
bool conv2dSmallChannelsApplies(const ConvGeometry& g);
std::string conv2dSmallChannelsNote(const ConvGeometry& g);
void conv2dSmallChannels(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);

// Depthwise layers (groups = C, any channel multiplier, ≤ 256 taps: conv2d_depthwise.cu), taken by the GEMM-family
// algorithms, whose GEMM tiles a one-channel reduction leaves nearly empty.
bool conv2dDepthwiseApplies(const ConvGeometry& g);
std::string conv2dDepthwiseNote(const ConvGeometry& g);
void conv2dDepthwise(
    const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);

void conv2dDirect(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);

// Shared memory the tiled kernel needs with `channelsPerStage` input channels staged at once.
size_t conv2dTiledSharedBytes(const ConvGeometry& g, int channelsPerStage);
// 0 when the halo tile does not fit even one channel at a time (then supports() refuses).
int conv2dTiledChannelsPerStage(const ConvGeometry& g);
constexpr size_t kTiledSharedLimit = 48 * 1024;
void conv2dTiled(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y, cudaStream_t st);

// Implicit GEMM needs a small per-layer table (one int2 per (c, r, s) of a group), built once in prepare.
size_t conv2dImplicitGemmTableBytes(const ConvGeometry& g);
void conv2dImplicitGemmBuildTable(const ConvGeometry& g, void* table, cudaStream_t st);
// A conv2d layer's scratch for the variant the launcher picks (g.igemmPipe = 1): the table, or for the pipelined
// tiles the weights transposed to [group][r·s][c][k] and padded, followed, when the reduction is split (split-K),
// by the parts' FP32 partial sums; Prepare builds the table or the weights from the weights on the device.
// conv2dImplicitGemm then takes that scratch (cuda.winograd's GEMMs: just the table).
size_t conv2dImplicitGemmScratchBytes(const ConvGeometry& g, int smCount);
void conv2dImplicitGemmPrepare(const ConvGeometry& g, const float* w, void* scratch, int smCount, cudaStream_t st);
// Whether that scratch depends on the weights (the pipelined tiles' transposed copy): then Prepare must run again
// whenever the weights change (the training sessions, after every update), and cannot run without them.
bool conv2dImplicitGemmPreparesWeights(const ConvGeometry& g, int smCount);
// Which tile shape the launcher picks for this layer on a device with `smCount` multiprocessors
// ("128x128 tiles, 8x8 per thread").
std::string conv2dImplicitGemmVariant(const ConvGeometry& g, int smCount);
void conv2dImplicitGemm(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y,
    void* scratch, int smCount, cudaStream_t st);

// Winograd F(m×m, 3×3), m = 2 or 4 (conv2d_winograd.cu): 3×3, stride 1, dilation 1, one group. The refusal is
// empty when it applies. Its scratch holds the transformed weights, input tiles and products plus the GEMM's
// table, which prepare builds.
std::string conv2dWinogradRefusal(const ConvGeometry& g, int m);
size_t conv2dWinogradScratchBytes(const ConvGeometry& g, int m);
void conv2dWinogradPrepare(const ConvGeometry& g, int m, void* scratch, cudaStream_t st);
std::string conv2dWinogradNote(const ConvGeometry& g, int m, int smCount);
void conv2dWinograd(const ConvGeometry& g, int m, const float* x, const float* w, const float* bias, float* y,
    void* scratch, int smCount, cudaStream_t st);

} // namespace convscope::cuda
