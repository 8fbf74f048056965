// What the CPU can compute fast, read from CPUID (and XGETBV: an instruction set counts only when the operating
// system saves its registers): the vector and matrix extensions that decide whether BF16 and FP16 run natively on the
// CPU (oneDNN's bf16 kernels need AVX512-BF16 or AMX; its f16 kernels AVX512-FP16 or AMX-FP16). `convscope-cli info`,
// the onednn backend's info() and every run's metadata (cpu_isa) show them. All false on a CPU that is not x86-64.
#pragma once

#include <string>

namespace convscope {

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool avx512f = false;
    bool avx512Vnni = false; // AVX512-VNNI (int8 dot products)
    bool avxVnni = false; // AVX-VNNI (the VEX-encoded int8 dot products)
    bool avx512Bf16 = false; // AVX512-BF16: vdpbf16ps (BF16 pairs, FP32 sums), vcvtne2ps2bf16
    bool avx512Fp16 = false; // AVX512-FP16: arithmetic on IEEE half
    bool amxTile = false; // AMX: the tile registers and tile loads
    bool amxBf16 = false; // AMX-BF16: tdpbf16ps
    bool amxFp16 = false; // AMX-FP16: tdpfp16ps
    bool amxInt8 = false;

    // The present flags in the spelling of /proc/cpuinfo ("avx2 fma avx512f avx512_vnni avx512_bf16 ..."), "none".
    std::string str() const;
    // "AVX512-BF16", "AMX-BF16", "AVX512-BF16 and AMX-BF16", or "" when the CPU has no native BF16.
    std::string bf16Units() const;
    std::string fp16Units() const; // the same for IEEE half: "AVX512-FP16", "AMX-FP16", ...
    bool nativeBf16() const { return avx512Bf16 || amxBf16; }
    bool nativeFp16() const { return avx512Fp16 || amxFp16; }
};

// This machine's CPU, read once (CPUID is the same for every core the process may run on).
const CpuFeatures& cpuFeatures();

} // namespace convscope
