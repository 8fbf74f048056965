// One core's FP32 FMA peak, measured rather than looked up (docs/PERFORMANCE.md, "## CPU").
//   clock:  a chain of dependent 64-bit integer multiplies (imul r64, r64: 3 cycles latency on every Intel core
//           since Sandy Bridge); multiplies per second × 3 = cycles per second. (A chain of `add reg, 1` does not
//           work on Golden Cove / Sapphire Rapids: the renamer folds small immediates and it runs faster than 1/cycle.)
//   time:   the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), best of 5, so time spent descheduled on a shared
//           machine is not counted.
//   FMA:    12 independent accumulators (more than latency × units, so the units never wait) of
//           vfmadd231ps on 256-bit (AVX2) and 512-bit (AVX-512) registers; FLOP per cycle = 2 × lanes × FMAs
//           retired per cycle, which tells how many FMA units of each width the core has.
// Build and run (single thread, pinned):
//   g++ -O2 -mavx512f -o /tmp/cpu_fma_peak tools/cpu_fma_peak.cpp && taskset -c 0 /tmp/cpu_fma_peak
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>

static double seconds(void (*f)(int64_t), int64_t n)
{
    f(n / 10); // warm up (and let the clock ramp)
    double best = 1e30;
    for (int r = 0; r < 5; ++r) {
        timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        f(n);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        best = std::min(best, double(t1.tv_sec - t0.tv_sec) + 1e-9 * double(t1.tv_nsec - t0.tv_nsec));
    }
    return best;
}

// 8 dependent multiplies per iteration (the loop's own counter runs beside them).
static void mulChain(int64_t n)
{
    uint64_t x = 3;
    for (int64_t i = 0; i < n; ++i)
        asm volatile("imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
                     "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0"
                     : "+r"(x));
}

#define FMA12(R)                                                                                                       \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "3\n\t"                                                                     \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "4\n\t"                                                                     \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "5\n\t"                                                                     \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "6\n\t"                                                                     \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "7\n\t"                                                                     \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "8\n\t"                                                                     \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "9\n\t"                                                                     \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "10\n\t"                                                                    \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "11\n\t"                                                                    \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "12\n\t"                                                                    \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "13\n\t"                                                                    \
    "vfmadd231ps %%" R "1, %%" R "2, %%" R "14\n\t"

static void fmaYmm(int64_t n)
{
    asm volatile("vxorps %%ymm1, %%ymm1, %%ymm1\n\tvxorps %%ymm2, %%ymm2, %%ymm2" ::: "xmm1", "xmm2");
    for (int64_t i = 0; i < n; ++i)
        asm volatile(
            FMA12("ymm")::
                : "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14");
}

// One dependent chain: each FMA waits for the previous one (4 cycles latency on Skylake-SP through Sapphire
// Rapids), so FMAs per second × 4 = the clock while the core runs 512-bit code (its AVX-512 licence clock).
static void fmaChainZmm(int64_t n)
{
    asm volatile("vxorps %%zmm1, %%zmm1, %%zmm1\n\tvxorps %%zmm2, %%zmm2, %%zmm2" ::: "xmm1", "xmm2");
    for (int64_t i = 0; i < n; ++i)
        asm volatile("vfmadd231ps %%zmm1, %%zmm2, %%zmm3\n\tvfmadd231ps %%zmm1, %%zmm2, %%zmm3\n\t"
                     "vfmadd231ps %%zmm1, %%zmm2, %%zmm3\n\tvfmadd231ps %%zmm1, %%zmm2, %%zmm3\n\t"
                     "vfmadd231ps %%zmm1, %%zmm2, %%zmm3\n\tvfmadd231ps %%zmm1, %%zmm2, %%zmm3\n\t"
                     "vfmadd231ps %%zmm1, %%zmm2, %%zmm3\n\tvfmadd231ps %%zmm1, %%zmm2, %%zmm3" ::
                         : "xmm3");
}

static void fmaZmm(int64_t n)
{
    asm volatile("vxorps %%zmm1, %%zmm1, %%zmm1\n\tvxorps %%zmm2, %%zmm2, %%zmm2" ::: "xmm1", "xmm2");
    for (int64_t i = 0; i < n; ++i)
        asm volatile(
            FMA12("zmm")::
                : "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14");
}

int main()
{
    const int64_t n = 100'000'000;
    const double hz = 3.0 * 8 * n / seconds(mulChain, n);
    const double ymm = 12.0 * 8 * 2 * n / seconds(fmaYmm, n);
    const double zmm = 12.0 * 16 * 2 * n / seconds(fmaZmm, n);
    const double hz512 = 4.0 * 8 * n / 4 / seconds(fmaChainZmm, n / 4);
    std::printf("clock (imul chain)          %.2f GHz\n", hz / 1e9);
    std::printf("AVX2    FMA (8 lanes)       %.1f GFLOP/s = %.1f FLOP/cycle = %.2f FMA/cycle\n", ymm / 1e9, ymm / hz,
        ymm / hz / 16);
    std::printf("AVX-512 FMA (16 lanes)      %.1f GFLOP/s = %.1f FLOP/cycle = %.2f FMA/cycle at the scalar clock\n",
        zmm / 1e9, zmm / hz, zmm / hz / 32);
    std::printf("clock running AVX-512 code  %.2f GHz (dependent FMA chain, 4 cycles each)\n", hz512 / 1e9);
    std::printf("AVX-512 FMA at that clock   %.1f FLOP/cycle = %.2f FMA/cycle\n", zmm / hz512, zmm / hz512 / 32);
    return 0;
}
