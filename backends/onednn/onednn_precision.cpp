#include "backends/onednn/onednn_precision.h"

#include "compute/cpu_features.h"

namespace convscope::onednn {

namespace {

    // The bits of oneDNN's ISA masks (dnnl_types.h): every ISA includes the bits of those below it.
    bool effectiveIsaIncludes(dnnl_cpu_isa_t want)
    {
        const auto isa = unsigned(dnnl_get_effective_cpu_isa());
        return (isa & unsigned(want)) == unsigned(want);
    }

    std::string versionString()
    {
        const dnnl_version_t* v = dnnl_version();
        return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
    }

    // Whether this oneDNN has an f16 convolution (2.6 has none on the CPU; 3.x has them on AVX512-FP16 and AMX-FP16).
    bool hasF16Convolution()
    {
        try {
            using memory = dnnl::memory;
            const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
            const auto f16 = memory::data_type::f16;
            const memory::desc src({ 1, 16, 8, 8 }, f16, memory::format_tag::any);
            const memory::desc w({ 16, 16, 3, 3 }, f16, memory::format_tag::any);
            const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                dnnl::algorithm::convolution_auto, src, w, src, { 1, 1 }, { 1, 1 }, { 1, 1 });
            dnnl::convolution_forward::primitive_desc pd(d, eng);
            return true;
        } catch (const dnnl::error&) {
            return false;
        }
    }

} // namespace

std::string isaName()
{
    switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
        return "sse41";
    case dnnl::cpu_isa::avx:
        return "avx";
    case dnnl::cpu_isa::avx2:
        return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
        return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
        return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
        return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
        return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
        return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
        return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
        return "avx512_core_amx";
    default:
        return "other";
    }
}

dnnl::memory::data_type storageType(MathMode m)
{
    switch (m) {
    case MathMode::BF16:
        return dnnl::memory::data_type::bf16;
    case MathMode::FP16:
        return dnnl::memory::data_type::f16;
    case MathMode::FP32:
    case MathMode::TF32:
        break;
    }
    return dnnl::memory::data_type::f32;
}

std::string whyNotNative(MathMode m)
{
    const CpuFeatures& f = cpuFeatures();
    if (m == MathMode::BF16) {
        if (!f.nativeBf16())
            return "onednn bf16 needs AVX512-BF16 or AMX; this CPU has " + f.str()
                + " (oneDNN would emulate BF16 there, slower than FP32)";
        if (!effectiveIsaIncludes(dnnl_cpu_isa_avx512_core_bf16))
            return "onednn bf16: this CPU has " + f.bf16Units() + " but oneDNN uses at most " + isaName()
                + " (ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA limits it)";
        return {};
    }
    if (m == MathMode::FP16) {
        if (!f.nativeFp16())
            return "onednn fp16 needs AVX512-FP16 or AMX-FP16; this CPU has " + f.str();
        if (!hasF16Convolution())
            return "onednn fp16: this CPU has " + f.fp16Units() + ", but oneDNN " + versionString()
                + " has no f16 convolution on the CPU (it converts f16 in reorders only; oneDNN 3 computes f16 on "
                  "AVX512-FP16 and AMX-FP16); use --math bf16 or fp32";
        return {};
    }
    return {};
}

std::string mathDescription(MathMode m)
{
    switch (m) {
    case MathMode::TF32:
        return "fp32 (the CPU has no TF32)";
    case MathMode::BF16:
        return "bf16 storage, bf16 products, fp32 accumulation (oneDNN, " + isaName() + ")";
    case MathMode::FP16:
        return "fp16 storage, fp16 products, fp32 accumulation (oneDNN, " + isaName() + ")";
    case MathMode::FP32:
        break;
    }
    return "fp32";
}

std::string halfSupport(MathMode m)
{
    const std::string why = whyNotNative(m);
    if (!why.empty())
        return "no: " + why;
    const CpuFeatures& f = cpuFeatures();
    return "native (" + (m == MathMode::BF16 ? f.bf16Units() : f.fp16Units()) + "; oneDNN " + isaName() + ")";
}

} // namespace convscope::onednn
