// conv_transpose3d as stride-1 conv3d implicit GEMMs, one per stride phase (conv_transpose3d_phase.cuh).
//
// Why. The gather kernel (conv_transpose3d.cu) gives each output element its own thread, which tests all kd·kh·kw
// taps for the stride's divisibility, keeps one in sd·sh·sw, and reads input and weight from global memory for each
// multiply-add: 3.1–3.8× behind cuDNN on the autoencoder's decoder at batch 64. Split by stride phase
// (transposed_phase_plan.h), each phase is an ordinary convolution of x with that phase's taps — 1 to ⌈k/s⌉³ of them —
// which conv3d's implicit GEMM runs with its tiles, tap table and split reduction (conv3d_implicit_gemm.cu), every
// loaded value reused across a tile's output channels and positions. The weights are fixed in inference, so the
// phases' gathered weights and tables are made once at prepare. A phase's outputs are staged and spread into every
// s-th depth, row and column of y (a copy of the output's size in all); with stride 1 the one phase writes y itself.
// A phase no tap reaches (a kernel smaller than the stride) gets the bias alone. Where the GEMMs do not pay (many
// phases of few outputs, or few output channels a group) or the plan does not apply, the GEMM family runs the
// phase-tiled kernel (conv_transpose3d_tiled.cu) instead; convTranspose3dForm picks.
#include "kernels/cuda/conv_transpose3d_phase.cuh"

#include "kernels/cuda/transposed_phase_kernels.cuh"

#include <algorithm>
#include <vector>

namespace convscope::cuda {

namespace {
    constexpr size_t kAlign = 256;

    struct Phase {
        PhaseAxis depth, row, col;
        Conv3dGeometry conv {};
        bool hasTaps() const { return depth.taps > 0 && row.taps > 0 && col.taps > 0; }
    };

    // The phases and where their parts of the scratch lie: [weights | each phase's GEMM scratch | staging].
    struct Layout {
        std::vector<Phase> phases;
        std::vector<size_t> weightAt, scratchAt; // bytes
        size_t stagingAt = 0, total = 0;
        bool direct = false; // stride 1: one phase, written in place
    };

    size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

    Layout layoutOf(const Conv3dGeometry& t, int sms)
    {
        Layout l;
        l.direct = t.sd == 1 && t.sh == 1 && t.sw == 1;
        for (const PhaseAxis& d : phaseAxes(t.od, t.sd, t.pd, t.dd, t.kd))
            for (const PhaseAxis& h : phaseAxes(t.oh, t.sh, t.ph, t.dh, t.kh))
                for (const PhaseAxis& w : phaseAxes(t.ow, t.sw, t.pw, t.dw, t.kw)) {
                    if (d.count == 0 || h.count == 0 || w.count == 0)
                        continue;
                    Phase p { d, h, w, t };
                    Conv3dGeometry& g = p.conv; // the layer's input and channels, the phase's taps and outputs
                    g.od = d.count, g.oh = h.count, g.ow = w.count;
                    g.kd = d.taps, g.kh = h.taps, g.kw = w.taps;
                    g.sd = g.sh = g.sw = 1;
                    g.pd = d.padBefore, g.ph = h.padBefore, g.pw = w.padBefore;
                    g.dd = d.dil, g.dh = h.dil, g.dw = w.dil;
                    l.phases.push_back(p);
                }
        size_t weights = 0, staging = 0;
        for (const Phase& p : l.phases) {
            l.weightAt.push_back(weights);
            if (p.hasTaps()) {
                weights += aligned(sizeof(float) * size_t(t.k) * size_t(t.c / t.groups) * size_t(p.conv.kd)
                    * size_t(p.conv.kh) * size_t(p.conv.kw));
                if (!l.direct)
                    staging = std::max(staging,
                        sizeof(float) * size_t(t.n) * size_t(t.k) * size_t(p.conv.od) * size_t(p.conv.oh)
                            * size_t(p.conv.ow));
            }
        }
        size_t at = weights;
        for (const Phase& p : l.phases) {
            l.scratchAt.push_back(at);
            if (p.hasTaps())
                at += aligned(conv3dImplicitGemmScratchBytes(p.conv, sms));
        }
        l.stagingAt = at;
        l.total = at + staging;
        return l;
    }

} // namespace

bool convTranspose3dPhaseApplies(const Conv3dGeometry& t)
{
    const auto axisOk = [](int out, int stride, int pad, int dil, int kernel) {
        for (const PhaseAxis& a : phaseAxes(out, stride, pad, dil, kernel))
            if (a.count > 0 && a.taps > 0 && a.padBefore < 0)
                return false;
        return true;
    };
    return axisOk(t.od, t.sd, t.pd, t.dd, t.kd) && axisOk(t.oh, t.sh, t.ph, t.dh, t.kh)
        && axisOk(t.ow, t.sw, t.pw, t.dw, t.kw);
}

bool convTranspose3dPhasePays(const Conv3dGeometry& t) { return t.sd * t.sh * t.sw <= 8 && t.k / t.groups >= 8; }

size_t convTranspose3dPhaseScratchBytes(const Conv3dGeometry& t, int smCount) { return layoutOf(t, smCount).total; }

void convTranspose3dPhasePrepare(const Conv3dGeometry& t, const float* w, void* scratch, int smCount, cudaStream_t st)
{
    const Layout l = layoutOf(t, smCount);
    char* base = static_cast<char*>(scratch);
    for (size_t i = 0; i < l.phases.size(); ++i) {
        const Phase& p = l.phases[i];
        if (!p.hasTaps())
            continue;
        gatherPhaseTaps(t.groups, t.c / t.groups, t.k / t.groups, t.kd, t.kh, t.kw, p.depth, p.row, p.col, w,
            reinterpret_cast<float*>(base + l.weightAt[i]), st);
        conv3dImplicitGemmPrepare(p.conv, base + l.scratchAt[i], st);
    }
}

Transposed3dForm convTranspose3dForm(const Conv3dGeometry& t, bool gemmFamily, bool fp32, int gemm)
{
    if (!gemmFamily)
        return Transposed3dForm::Gather;
    if (fp32 && gemm >= 0 && convTranspose3dPhaseApplies(t) && (gemm > 0 || convTranspose3dPhasePays(t)))
        return Transposed3dForm::PhaseGemm;
    return convTranspose3dTiledApplies(t) ? Transposed3dForm::Tiled : Transposed3dForm::Gather;
}

std::string convTranspose3dNote(const Conv3dGeometry& t, Transposed3dForm form, int smCount, int gemm, int tileKt)
{
    if (form == Transposed3dForm::Gather)
        return convTranspose3dTiledApplies(t) ? "3-D gather, one thread per output"
                                              : "3-D gather, one thread per output (a stride above 8 or more than "
                                                "4096 taps a phase: the phase-tiled kernel does not take it)";
    if (form == Transposed3dForm::Tiled) {
        const std::string why = gemm < 0 ? "transposed_gemm=off"
            : !convTranspose3dPhaseApplies(t)
            ? "a stride phase's padding would be negative: the crop lies beyond the kernel's reach"
            : !convTranspose3dPhasePays(t)
            ? "the stride phases' GEMMs do not pay: " + std::to_string(t.sd * t.sh * t.sw) + " phases of "
                + std::to_string(t.k / t.groups) + " output channels a group; they take at most 8 phases of at least 8"
            : "the phase GEMMs run in FP32 only";
        return "phase-tiled kernel: " + convTranspose3dTiledNote(t, smCount, tileKt) + " (" + why + ")";
    }
    const Layout l = layoutOf(t, smCount);
    size_t withTaps = 0;
    const Phase* largest = nullptr;
    for (const Phase& p : l.phases)
        if (p.hasTaps()) {
            ++withTaps;
            if (!largest || p.conv.kd * p.conv.kh * p.conv.kw > largest->conv.kd * largest->conv.kh * largest->conv.kw)
                largest = &p;
        }
    std::string note = std::to_string(l.phases.size()) + " stride phases, " + std::to_string(withTaps)
        + " of them stride-1 conv3d implicit GEMMs";
    if (largest)
        note += " (the largest, " + std::to_string(largest->conv.kd) + "x" + std::to_string(largest->conv.kh) + "x"
            + std::to_string(largest->conv.kw) + " taps: " + conv3dImplicitGemmVariant(largest->conv, smCount) + ")";
    return note;
}

void convTranspose3d(const Conv3dGeometry& t, Transposed3dForm form, const float* x, const float* w, const float* bias,
    float* y, void* scratch, int smCount, cudaStream_t st, int tileKt)
{
    if (form == Transposed3dForm::Gather) {
        convTranspose3dGather(t, x, w, bias, y, st);
        return;
    }
    if (form == Transposed3dForm::Tiled) {
        convTranspose3dTiled(t, x, w, bias, y, smCount, st, tileKt);
        return;
    }
    const Layout l = layoutOf(t, smCount);
    char* base = static_cast<char*>(scratch);
    float* staged = reinterpret_cast<float*>(base + l.stagingAt);
    const PhaseOutput out { (long long)t.n * t.k, t.k, t.od, t.oh, t.ow, t.sd, t.sh, t.sw };
    for (size_t i = 0; i < l.phases.size(); ++i) {
        const Phase& p = l.phases[i];
        if (!p.hasTaps()) {
            spreadPhase(out, p.depth, p.row, p.col, nullptr, bias, y, st);
            continue;
        }
        conv3dImplicitGemm(p.conv, x, reinterpret_cast<const float*>(base + l.weightAt[i]), bias, l.direct ? y : staged,
            base + l.scratchAt[i], smCount, st);
        if (!l.direct)
            spreadPhase(out, p.depth, p.row, p.col, staged, nullptr, y, st);
    }
}

} // namespace convscope::cuda
