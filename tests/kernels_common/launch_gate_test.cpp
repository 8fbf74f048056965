// kernels/common/launch_gate.h: the gate that holds a stream while a pass is queued. On the GPU machine: an opened
// gate lets queued work run; a gate nobody opens gives up after its timeout, says so, and turns gates off for the
// rest of the process; a hold opened early lets go of its gate, so the gate can be destroyed before the hold (the
// session drops a timed-out gate while its hold is still in scope — the use-after-free this test pins down crashed
// ncu and compute-sanitizer runs). Without a device it prints SKIPPED.
#include "kernels/common/device_buffer.h"
#include "kernels/common/device_info.h"
#include "kernels/common/launch_gate.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

using namespace convscope::gpu;

namespace {

bool gpuOrSkip()
{
    const auto a = queryAvailability();
    if (!a.available)
        std::printf("SKIPPED: %s\n", a.reason.c_str());
    return a.available;
}

double secondsSince(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

TEST_CASE("launch gate: queued work waits for open, a forgotten gate times out and is dropped safely", "[gate]")
{
    if (!gpuOrSkip())
        return;
    selectDevice();
    CudaStream stream;
    REQUIRE(std::string(gateUnusableReason()).empty());

    // Opened: the stream runs what was queued behind the gate, well inside the timeout.
    {
        LaunchGate gate;
        CudaEvent done;
        const auto t0 = std::chrono::steady_clock::now();
        {
            GateHold hold(&gate, stream.get());
            done.record(stream.get());
            CHECK(cudaEventQuery(done.get()) == cudaErrorNotReady); // held
        }
        REQUIRE(cudaEventSynchronize(done.get()) == cudaSuccess);
        CHECK(secondsSince(t0) < 0.05);
        CHECK_FALSE(gate.timedOut());
    }

    // Never opened: the kernel gives up after 100 ms, reports it, and the process stops using gates.
    auto gate = std::make_unique<LaunchGate>();
    const auto t0 = std::chrono::steady_clock::now();
    {
        GateHold hold(gate.get(), stream.get());
        // Wait for the stream while still holding: only the timeout can release it.
        REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
        const double waited = secondsSince(t0);
        CHECK(waited >= 0.09);
        CHECK(waited < 2.0);
        hold.open();
        CHECK(gate->timedOut());
        gate.reset(); // what GpuSessionBase::checkGate does; the hold's destructor must not touch it now
    }
    CHECK(std::string(gateUnusableReason()).find("timed out earlier") != std::string::npos);
    CHECK(cudaGetLastError() == cudaSuccess);
}
