#include "compute/cpu_features.h"

#include <cstdint>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CONVSCOPE_X86 1
#else
#define CONVSCOPE_X86 0
#endif

namespace convscope {

namespace {

#if CONVSCOPE_X86
    // XCR0: which register states the OS saves on a context switch. Without them the instructions fault (AVX-512)
    // or the kernel must grant the tile state per process (AMX; oneDNN asks for it with arch_prctl itself).
    uint64_t xcr0()
    {
        uint32_t eax = 0, edx = 0;
        __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
        return (uint64_t(edx) << 32) | eax;
    }

    bool bit(uint32_t reg, int n) { return (reg >> n) & 1u; }

    CpuFeatures detect()
    {
        CpuFeatures f;
        uint32_t a = 0, b = 0, c = 0, d = 0;
        if (!__get_cpuid(1, &a, &b, &c, &d))
            return f;
        const bool osxsave = bit(c, 27);
        const bool fma = bit(c, 12);
        if (!osxsave)
            return f; // no XGETBV: the OS saves no vector state beyond SSE
        const uint64_t x = xcr0();
        const bool ymm = (x & 0x6) == 0x6; // SSE and AVX state
        const bool zmm = ymm && (x & 0xE0) == 0xE0; // opmask, upper ZMM0-15, ZMM16-31
        const bool tiles = (x & 0x60000) == 0x60000; // XTILECFG, XTILEDATA
        if (__get_cpuid_max(0, nullptr) < 7)
            return f;
        __cpuid_count(7, 0, a, b, c, d);
        const uint32_t maxSub = a;
        f.avx2 = ymm && bit(b, 5);
        f.fma = ymm && fma;
        f.avx512f = zmm && bit(b, 16);
        f.avx512Vnni = f.avx512f && bit(c, 11);
        f.avx512Fp16 = f.avx512f && bit(d, 23);
        f.amxBf16 = tiles && bit(d, 22);
        f.amxTile = tiles && bit(d, 24);
        f.amxInt8 = tiles && bit(d, 25);
        if (maxSub >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            f.avxVnni = ymm && bit(a, 4);
            f.avx512Bf16 = f.avx512f && bit(a, 5);
            f.amxFp16 = tiles && bit(a, 21);
        }
        return f;
    }
#else
    CpuFeatures detect() { return {}; }
#endif

    std::string joined(const std::vector<const char*>& names, const char* sep)
    {
        std::string s;
        for (const char* n : names)
            s += (s.empty() ? "" : sep) + std::string(n);
        return s;
    }

} // namespace

std::string CpuFeatures::str() const
{
    std::vector<const char*> on;
    const std::pair<bool, const char*> flags[]
        = { { avx2, "avx2" }, { fma, "fma" }, { avxVnni, "avx_vnni" }, { avx512f, "avx512f" },
              { avx512Vnni, "avx512_vnni" }, { avx512Bf16, "avx512_bf16" }, { avx512Fp16, "avx512_fp16" },
              { amxTile, "amx_tile" }, { amxBf16, "amx_bf16" }, { amxFp16, "amx_fp16" }, { amxInt8, "amx_int8" } };
    for (const auto& [has, name] : flags)
        if (has)
            on.push_back(name);
    return on.empty() ? "none" : joined(on, " ");
}

std::string CpuFeatures::bf16Units() const
{
    std::vector<const char*> u;
    if (avx512Bf16)
        u.push_back("AVX512-BF16");
    if (amxBf16)
        u.push_back("AMX-BF16");
    return joined(u, " and ");
}

std::string CpuFeatures::fp16Units() const
{
    std::vector<const char*> u;
    if (avx512Fp16)
        u.push_back("AVX512-FP16");
    if (amxFp16)
        u.push_back("AMX-FP16");
    return joined(u, " and ");
}

const CpuFeatures& cpuFeatures()
{
    static const CpuFeatures features = detect();
    return features;
}

} // namespace convscope
