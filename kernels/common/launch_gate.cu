// The launch gate (launch_gate.h says why it exists).
#include "kernels/common/launch_gate.h"

#include "kernels/common/cuda_check.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace convscope::gpu {

namespace {
    constexpr unsigned long long kTimeoutNs = 100000000ull; // 100 ms

    __device__ __forceinline__ unsigned long long globalTimerNs()
    {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        return t;
    }

    // One thread spins on the host-written flag. volatile: every iteration reads system memory again.
    __global__ void gateKernel(volatile int* open, volatile int* timedOut)
    {
        const unsigned long long start = globalTimerNs();
        while (*open == 0) {
            if (globalTimerNs() - start > kTimeoutNs) {
                *timedOut = 1;
                break;
            }
            __nanosleep(200);
        }
    }

    __global__ void handoffKernel() { }
} // namespace

namespace {
    // Set once any gate of this process timed out: what serialises launches (a profiler, a sanitizer) is attached
    // to the whole process, so later sessions skip the gate instead of each waiting out the timeout again.
    std::atomic<bool> g_timedOutInProcess { false };
}

const char* gateUnusableReason()
{
    const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
    if (blocking && std::strcmp(blocking, "1") == 0)
        return "CUDA_LAUNCH_BLOCKING=1 serialises every launch";
    if (g_timedOutInProcess.load())
        return "a gate timed out earlier in this process (a tool that serialises launches, such as ncu or "
               "compute-sanitizer, or a host that stalled for 100 ms)";
    return "";
}

void queueEngineHandoff(cudaStream_t stream)
{
    handoffKernel<<<1, 1, 0, stream>>>();
    CONVSCOPE_CUDA_CHECK(cudaGetLastError());
}

LaunchGate::LaunchGate()
{
    void* p = nullptr;
    CONVSCOPE_CUDA_CHECK(cudaHostAlloc(&p, sizeof(Flags), cudaHostAllocMapped));
    m_host = static_cast<Flags*>(p);
    m_host->open = 1;
    m_host->timedOut = 0;
    void* d = nullptr;
    const cudaError_t e = cudaHostGetDevicePointer(&d, p, 0);
    if (e != cudaSuccess) {
        (void)cudaFreeHost(p);
        m_host = nullptr;
        CONVSCOPE_CUDA_CHECK(e);
    }
    m_device = static_cast<Flags*>(d);
}

LaunchGate::~LaunchGate()
{
    if (m_host) {
        open();
        (void)cudaFreeHost(m_host);
    }
}

void LaunchGate::close(cudaStream_t stream)
{
    // Written before the launch: the driver's doorbell write orders it before the kernel can read the flag.
    std::atomic_ref<int>(m_host->open).store(0, std::memory_order_seq_cst);
    gateKernel<<<1, 1, 0, stream>>>(&m_device->open, &m_device->timedOut);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        open();
        CONVSCOPE_CUDA_CHECK(e);
    }
}

void LaunchGate::open() { std::atomic_ref<int>(m_host->open).store(1, std::memory_order_seq_cst); }

bool LaunchGate::timedOut() const
{
    const bool out = std::atomic_ref<int>(m_host->timedOut).load() != 0;
    if (out)
        g_timedOutInProcess.store(true);
    return out;
}

GateHold::GateHold(LaunchGate* gate, cudaStream_t stream)
    : m_gate(gate)
{
    if (m_gate)
        m_gate->close(stream);
}

GateHold::~GateHold() { open(); }

void GateHold::open()
{
    // Once: the owner may drop a gate that timed out right after this (GpuSessionBase::checkGate), and the
    // destructor must then not touch it.
    if (m_gate)
        m_gate->open();
    m_gate = nullptr;
}

} // namespace convscope::gpu
