// The launch gate: holds a stream until the host has queued a whole pass, so that what the events between
// layers measure is the GPU's work and not the host's launch rate.
//
// Why. A pass is queued one launch at a time: an NVTX range, the kernel launch (2–3 µs of host time), a check,
// an event record. LeNet's layers run for 1–3 µs on the GPU, less than it takes the host to queue the next
// one, so without the gate the GPU idles between them and the event deltas mostly measure the host
// (LeNet's c1 read 6.6–7.8 µs that way). With the gate, a spinning kernel waits at the head of the stream
// while the host queues the pass behind it; the host then opens the gate and the GPU runs the queued work
// back to back. This is NVBench's "blocking kernel" (nvbench/blocking_kernel.cuh), the standard way GPU
// benchmarks take launch overhead out of a kernel's time.
//
// Safety. The gate must never hang the GPU: the spinning kernel gives up after a timeout (100 ms, a hundred
// times what queuing a pass of 128 layers takes) and says so. That happens if something queued behind it makes
// the host wait for the GPU — a synchronous call inside a layer, more launches than the driver's queue holds, or
// a tool that serialises launches (ncu, CUDA_LAUNCH_BLOCKING=1) — and the session then stops using the gate
// (timedOut()). gateUsable() turns it off from the start where launches are known to block. GateHold opens the
// gate in its destructor, so an exception while queuing opens it too.
//
// The engine handoff. The input arrives by the copy engine; the first kernel after it waits for the copy
// engine's completion to reach the compute engine, a few µs on the H200 that the first layer would otherwise
// be charged (LeNet's c1 read 10 µs queued against 4.8 µs in ncu). queueEngineHandoff puts an empty kernel after
// the copy, so the handoff lands in the H2D time and the first layer starts like every other one.
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::gpu {

class LaunchGate {
public:
    LaunchGate(); // allocates the mapped, page-locked flag; throws on failure like the other handles
    ~LaunchGate();
    LaunchGate(const LaunchGate&) = delete;
    LaunchGate& operator=(const LaunchGate&) = delete;

    // Queues the spinning kernel on `stream` (closed gate): nothing queued after it starts until open().
    void close(cudaStream_t stream);
    // Opens the gate; the spinning kernel sees it within a microsecond or so.
    void open();
    // True once a spinning kernel gave up waiting (read after the stream has passed it). A timeout also turns the
    // gate off for the rest of the process (gateUnusableReason).
    bool timedOut() const;

private:
    struct Flags {
        int open;
        int timedOut;
    };
    Flags* m_host = nullptr; // page-locked, mapped into the device's address space
    Flags* m_device = nullptr;
};

// Empty when the gate can be used; otherwise why not ("CUDA_LAUNCH_BLOCKING=1 serialises every launch").
const char* gateUnusableReason();

// An empty kernel on `stream`: see "the engine handoff" above.
void queueEngineHandoff(cudaStream_t stream);

// Closes `gate` (when not null) on `stream` for the scope of one pass and opens it at the end of the scope,
// exception or not. open() opens it early and lets go of it: after that the gate may be destroyed.
class GateHold {
public:
    GateHold(LaunchGate* gate, cudaStream_t stream);
    ~GateHold();
    GateHold(const GateHold&) = delete;
    GateHold& operator=(const GateHold&) = delete;
    void open();

private:
    LaunchGate* m_gate;
};

} // namespace convscope::gpu
