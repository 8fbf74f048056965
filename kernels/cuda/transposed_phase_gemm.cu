// A transposed convolution as one stride-1 implicit GEMM per stride phase (transposed_phase_gemm.cuh).
//
// Per class: its taps are gathered (and flipped, the channel roles exchanged) into the class's weight
// [k, c/groups, taps_r, taps_s] — a few thousand to a few million floats: once per pass in training, since the update
// changes the weights, once at prepare in inference — and the forward's implicit GEMM (conv2d_implicit_gemm.cu: the
// launcher's tiles, the pipelined cp.async tiles and split-K where they apply) computes the class's outputs with the
// bias. With stride 1 that is the whole output; with a larger stride the class's outputs are staged in `temp` and
// spread into every s-th row and column of y by transposed_phase_kernels.cuh's spread (an extra write and read of the
// output, a few microseconds next to the GEMMs). A class no tap reaches gets the bias alone. Under cuda.winograd's
// training a stride-1 layer's one class, when it is a 3×3 ungrouped convolution (the backward-data of ResNet's and
// VGG's 3×3 layers), runs Winograd F(m×m, 3×3) on the gathered weights instead: 2.25× (m = 2) to 4× (m = 4) fewer
// multiplies, as cuDNN's FP32 backward-data does. Against the stride-phase kernel (conv_transpose2d.cu: 128 pixels ×
// KB channels a block, no reuse of the input across output-channel tiles) the GEMM tiles reuse each loaded value
// 64–128 times.
#include "kernels/cuda/transposed_phase_gemm.cuh"
#include "kernels/cuda/transposed_phase_kernels.cuh"

#include <algorithm>

namespace convscope::cuda {

namespace {
    constexpr size_t kAlign = 256; // bytes, each class's scratch and each class's gathered weights
    constexpr size_t kWeightAlign = kAlign / sizeof(float); // floats
} // namespace

PhaseShape phaseShapeOf(const ConvGeometry& g)
{
    return { g.n, g.c, g.h, g.w, g.k, g.p, g.q, g.r, g.s, g.strideH, g.strideW, g.padTop, g.padLeft, g.dilH, g.dilW,
        g.groups };
}

bool transposedPhaseGemmApplies(const ConvGeometry& t) { return transposedPhasePlanApplies(phaseShapeOf(t)); }

TransposedPhaseGemm makeTransposedPhaseGemm(const ConvGeometry& t, int sms, int winogradTile)
{
    TransposedPhaseGemm p;
    p.t = t;
    p.plan = transposedPhasePlan(phaseShapeOf(t));
    const bool direct = transposedPhasePlanIsDirect(phaseShapeOf(t));
    for (const PhaseClass& pc : p.plan) {
        ConvGeometry g = t; // the class's convolution: the layer's input and channels, the class's taps and outputs
        g.p = pc.conv.p, g.q = pc.conv.q, g.r = pc.conv.r, g.s = pc.conv.s;
        g.strideH = g.strideW = 1;
        g.padTop = pc.conv.padTop, g.padLeft = pc.conv.padLeft, g.dilH = pc.conv.dilH, g.dilW = pc.conv.dilW;
        g.act = -1;
        g.residual = nullptr;
        g.igemmTile = 0, g.igemmSplits = 0, g.tinyLanes = 0, g.igemmPipe = 1;
        p.convs.push_back(g);
        p.weightOffset.push_back(p.weightFloats);
        p.scratchOffset.push_back(p.scratchBytes);
        if (!pc.hasTaps())
            continue;
        // Each class's weights start 256-byte aligned: the implicit GEMM loads them as float4 where C/g·R·S is a
        // multiple of 4, and the classes before it may hold any number of floats (33 output channels of one input
        // channel, 5×5 stride 2: 297 + 198 + 198 before the 2×2 class's; misaligned, cudaErrorMisalignedAddress).
        const size_t floats = size_t(t.k) * size_t(t.c / t.groups) * size_t(pc.row.taps) * size_t(pc.col.taps);
        p.weightFloats += (floats + kWeightAlign - 1) / kWeightAlign * kWeightAlign;
        if (direct && winogradTile && conv2dWinogradRefusal(g, winogradTile).empty())
            p.winograd = winogradTile;
        const size_t bytes
            = p.winograd ? conv2dWinogradScratchBytes(g, p.winograd) : conv2dImplicitGemmScratchBytes(g, sms);
        p.scratchBytes += (bytes + kAlign - 1) / kAlign * kAlign;
        if (!direct)
            p.tempFloats
                = std::max(p.tempFloats, size_t(t.n) * size_t(t.k) * size_t(pc.row.count) * size_t(pc.col.count));
    }
    return p;
}

void transposedPhaseGemmPrepare(const TransposedPhaseGemm& p, void* scratch, int sms, cudaStream_t st)
{
    for (size_t i = 0; i < p.plan.size(); ++i) {
        void* sc = static_cast<char*>(scratch) + p.scratchOffset[i];
        if (p.plan[i].hasTaps() && p.winograd)
            conv2dWinogradPrepare(p.convs[i], p.winograd, sc, st);
        else if (p.plan[i].hasTaps() && !conv2dImplicitGemmPreparesWeights(p.convs[i], sms))
            conv2dImplicitGemmPrepare(p.convs[i], nullptr, sc, sms, st);
    }
}

std::string transposedPhaseGemmNote(const TransposedPhaseGemm& p, int sms)
{
    size_t withTaps = 0;
    std::string first;
    for (size_t i = 0; i < p.plan.size(); ++i)
        if (p.plan[i].hasTaps() && withTaps++ == 0)
            first = conv2dImplicitGemmVariant(p.convs[i], sms);
    if (transposedPhasePlanIsDirect(phaseShapeOf(p.t)))
        return p.winograd ? "one stride-1 convolution with the flipped weights, "
                + conv2dWinogradNote(p.convs.front(), p.winograd, sms)
                          : "one stride-1 convolution with the flipped weights on the implicit GEMM, " + first;
    return std::to_string(p.plan.size()) + " stride phases, " + std::to_string(withTaps)
        + " of them stride-1 convolutions on the implicit GEMM (the first: " + first + ")";
}

void transposedPhaseGemmWeights(
    const TransposedPhaseGemm& p, const float* w, float* weights, void* scratch, int sms, cudaStream_t st)
{
    const ConvGeometry& t = p.t;
    for (size_t i = 0; i < p.plan.size(); ++i) {
        const PhaseClass& pc = p.plan[i];
        if (!pc.hasTaps())
            continue;
        float* wc = weights + p.weightOffset[i];
        gatherPhaseTaps(t.groups, t.c / t.groups, t.k / t.groups, 1, t.r, t.s, flatAxis(), pc.row, pc.col, w, wc, st);
        if (!p.winograd && conv2dImplicitGemmPreparesWeights(p.convs[i], sms))
            conv2dImplicitGemmPrepare(p.convs[i], wc, static_cast<char*>(scratch) + p.scratchOffset[i], sms, st);
    }
}

void transposedPhaseGemmRun(const TransposedPhaseGemm& p, const float* x, const float* weights, const float* bias,
    float* y, void* scratch, float* temp, int sms, cudaStream_t st)
{
    const ConvGeometry& t = p.t;
    const bool direct = transposedPhasePlanIsDirect(phaseShapeOf(t));
    const PhaseOutput out { (long long)t.n * t.k, t.k, 1, t.p, t.q, 1, t.strideH, t.strideW };
    for (size_t i = 0; i < p.plan.size(); ++i) {
        const PhaseClass& pc = p.plan[i];
        if (!pc.hasTaps()) {
            spreadPhase(out, flatAxis(), pc.row, pc.col, nullptr, bias, y, st);
            continue;
        }
        if (p.winograd) { // stride 1: the one class is the whole output
            conv2dWinograd(p.convs[i], p.winograd, x, weights + p.weightOffset[i], bias, y,
                static_cast<char*>(scratch) + p.scratchOffset[i], sms, st);
            continue;
        }
        conv2dImplicitGemm(p.convs[i], x, weights + p.weightOffset[i], bias, direct ? y : temp,
            static_cast<char*>(scratch) + p.scratchOffset[i], sms, st);
        if (!direct)
            spreadPhase(out, flatAxis(), pc.row, pc.col, temp, nullptr, y, st);
    }
}

void transposedPhaseGemm(const TransposedPhaseGemm& p, const float* x, const float* w, const float* bias, float* y,
    float* weights, void* scratch, float* temp, int sms, cudaStream_t st)
{
    transposedPhaseGemmWeights(p, w, weights, scratch, sms, st);
    transposedPhaseGemmRun(p, x, weights, bias, y, scratch, temp, sms, st);
}

} // namespace convscope::cuda
