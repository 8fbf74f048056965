// The cuda backend's transposed convolutions in inference (transposed_layers.h): conv_transpose2d's forms first,
// conv_transpose3d's next, the backend's four entries last.
#include "kernels/cuda/transposed_layers.h"

#include "kernels/cuda/conv_transpose2d.cuh"
#include "kernels/cuda/conv_transpose3d_phase.cuh"
#include "kernels/cuda/layer_geometry.h"
#include "kernels/cuda/transposed_phase_gemm.cuh"
#include "kernels/cuda/volume_geometry.h"

#include <variant>

namespace convscope::cuda {

// ---- conv_transpose2d
namespace {
    constexpr size_t kAlign = 256;

    size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

    // conv_transpose2d's phase GEMMs in one scratch: [gathered weights | the classes' GEMM scratch | staging].
    struct Gemm2d {
        TransposedPhaseGemm plan;
        size_t scratchAt = 0, tempAt = 0, total = 0;
    };

    Gemm2d gemm2dOf(const ConvGeometry& t, int sms)
    {
        Gemm2d g;
        g.plan = makeTransposedPhaseGemm(t, sms);
        g.scratchAt = aligned(g.plan.weightFloats * sizeof(float));
        g.tempAt = g.scratchAt + aligned(g.plan.scratchBytes);
        g.total = g.tempAt + g.plan.tempFloats * sizeof(float);
        return g;
    }

    char* at(void* scratch, size_t offset) { return static_cast<char*>(scratch) + offset; }
} // namespace

bool convTranspose2dPhaseGemmPays(const ConvGeometry& t)
{
    return t.strideH * t.strideW <= 16 && t.k / t.groups >= 32 && t.c / t.groups >= 8;
}

bool convTranspose2dPhaseGemmRuns(const ConvGeometry& t, TransposedMode m)
{
    return m.gemmFamily && m.fp32 && m.gemm >= 0 && (m.gemm > 0 || convTranspose2dPhaseGemmPays(t))
        && transposedPhaseGemmApplies(t);
}

namespace {
    size_t scratch2d(const ConvGeometry& t, TransposedMode m, int sms)
    {
        return convTranspose2dPhaseGemmRuns(t, m) ? gemm2dOf(t, sms).total : 0;
    }

    std::string prepare2d(
        const ConvGeometry& t, TransposedMode m, const float* w, void* scratch, int sms, cudaStream_t st)
    {
        if (!convTranspose2dPhaseGemmRuns(t, m)) {
            std::string note = convTranspose2dNote(t, m.gemmFamily);
            if (m.gemmFamily && m.fp32 && m.gemm < 0)
                note += " (no phase GEMMs: transposed_gemm=off)";
            else if (m.gemmFamily && m.fp32 && !convTranspose2dPhaseGemmPays(t) && m.gemm == 0)
                note += " (the phase GEMMs do not pay: " + std::to_string(t.strideH * t.strideW) + " phases, "
                    + std::to_string(t.k / t.groups) + " output and " + std::to_string(t.c / t.groups)
                    + " input channels a group; they take at most 16 phases, 32 and 8 channels)";
            else if (m.gemmFamily && m.fp32)
                note += " (no phase GEMMs: a stride phase's padding would be negative, the crop beyond the kernel's "
                        "reach)";
            return note;
        }
        const Gemm2d g = gemm2dOf(t, sms); // once: the taps gathered, the GEMMs' tables and transposed weights made
        transposedPhaseGemmPrepare(g.plan, at(scratch, g.scratchAt), sms, st);
        transposedPhaseGemmWeights(g.plan, w, reinterpret_cast<float*>(scratch), at(scratch, g.scratchAt), sms, st);
        return transposedPhaseGemmNote(g.plan, sms);
    }

    void run2d(const ConvGeometry& t, TransposedMode m, const float* x, const float* w, const float* bias, float* y,
        void* scratch, int sms, cudaStream_t st)
    {
        if (convTranspose2dPhaseGemmRuns(t, m)) {
            const Gemm2d g = gemm2dOf(t, sms);
            transposedPhaseGemmRun(g.plan, x, reinterpret_cast<const float*>(scratch), bias, y,
                at(scratch, g.scratchAt), reinterpret_cast<float*>(at(scratch, g.tempAt)), sms, st);
        } else if (m.gemmFamily)
            convTranspose2dPhase(t, x, w, bias, y, st);
        else
            convTranspose2dGather(t, x, w, bias, y, st);
    }
} // namespace

// ---- conv_transpose3d

namespace {
    // The gather, the FP32 stride phases as conv3d GEMMs or the phase-tiled kernel (conv_transpose3d_phase.cuh).
    Transposed3dForm form3d(const Conv3dGeometry& t, TransposedMode m)
    {
        return convTranspose3dForm(t, m.gemmFamily, m.fp32, m.gemm);
    }

    size_t scratch3d(const Conv3dGeometry& t, TransposedMode m, int sms)
    {
        return form3d(t, m) == Transposed3dForm::PhaseGemm ? convTranspose3dPhaseScratchBytes(t, sms)
                                                           : 0; // weights, GEMM scratch, staging
    }

    std::string prepare3d(
        const Conv3dGeometry& t, TransposedMode m, const float* w, void* scratch, int sms, cudaStream_t st)
    {
        const Transposed3dForm form = form3d(t, m);
        if (form == Transposed3dForm::PhaseGemm)
            convTranspose3dPhasePrepare(t, w, scratch, sms, st);
        return convTranspose3dNote(t, form, sms, m.gemm, m.tile);
    }

    void run3d(const Conv3dGeometry& t, TransposedMode m, const float* x, const float* w, const float* bias, float* y,
        void* scratch, int sms, cudaStream_t st)
    {
        convTranspose3d(t, form3d(t, m), x, w, bias, y, scratch, sms, st, m.tile);
    }
} // namespace

// ---- the backend's entries

bool isTransposedConvolution(const LayerSpec& spec)
{
    return std::holds_alternative<ConvTranspose2d>(spec) || std::holds_alternative<ConvTranspose3d>(spec);
}

size_t transposedScratchBytes(const LayerSpec& spec, const LayerShape& shape, TransposedMode m, int sms)
{
    if (const auto* c = std::get_if<ConvTranspose2d>(&spec))
        return scratch2d(geometryOf(*c, shape), m, sms);
    if (const auto* c = std::get_if<ConvTranspose3d>(&spec))
        return scratch3d(volumeGeometryOf(*c, shape), m, sms);
    return 0;
}

std::string prepareTransposed(const LayerSpec& spec, const LayerShape& shape, TransposedMode m, const float* w,
    void* scratch, int sms, cudaStream_t st)
{
    if (const auto* c = std::get_if<ConvTranspose2d>(&spec))
        return prepare2d(geometryOf(*c, shape), m, w, scratch, sms, st);
    if (const auto* c = std::get_if<ConvTranspose3d>(&spec))
        return prepare3d(volumeGeometryOf(*c, shape), m, w, scratch, sms, st);
    return {};
}

void runTransposed(const LayerSpec& spec, const LayerShape& shape, TransposedMode m, const float* x, const float* w,
    const float* bias, float* y, void* scratch, int sms, cudaStream_t st)
{
    if (const auto* c = std::get_if<ConvTranspose2d>(&spec))
        run2d(geometryOf(*c, shape), m, x, w, bias, y, scratch, sms, st);
    else if (const auto* c = std::get_if<ConvTranspose3d>(&spec))
        run3d(volumeGeometryOf(*c, shape), m, x, w, bias, y, scratch, sms, st);
}

} // namespace convscope::cuda
