// Owning handles for device resources, so an exception anywhere in a session frees what was taken:
// DeviceBuffer (cudaMalloc), PinnedBuffer (page-locked host staging: asynchronous, full-speed copies),
// DeviceArena (one allocation carved into per-layer tensors, kept between runs of the same network so
// repeated runs do not pay cudaMalloc/cudaFree), CudaStream and CudaEvent.
// Destructors never throw: a failing cudaFree during unwinding is ignored (the context is already gone).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace convscope::gpu {

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    // Throws OutOfMemoryError naming `what` with the asked and free sizes.
    DeviceBuffer(size_t bytes, const std::string& what);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& o) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* get() const { return m_ptr; }
    float* floats() const { return static_cast<float*>(m_ptr); }
    size_t bytes() const { return m_bytes; }
    void reset();

private:
    void* m_ptr = nullptr;
    size_t m_bytes = 0;
};

class PinnedBuffer {
public:
    PinnedBuffer() = default;
    ~PinnedBuffer();
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    // Grows (never shrinks) to at least `bytes`.
    void reserve(size_t bytes);
    float* floats() const { return static_cast<float*>(m_ptr); }
    size_t bytes() const { return m_bytes; }

private:
    void* m_ptr = nullptr;
    size_t m_bytes = 0;
};

// A bump allocator over one device allocation. reserve() keeps the block when it is already big enough, so a
// backend that keeps its arena between sessions re-runs the same network without touching cudaMalloc.
class DeviceArena {
public:
    static constexpr size_t kAlignment = 256; // cudaMalloc's own alignment: float4 loads are always aligned
    static size_t alignUp(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

    // Forgets earlier carvings; reallocates only when `bytes` exceeds the capacity.
    void reserve(size_t bytes, const std::string& what);
    // Carves `bytes` (aligned); throws Error if the plan asked for more than was reserved (a bug).
    void* take(size_t bytes);
    size_t capacity() const { return m_block.bytes(); }
    size_t used() const { return m_used; }
    void release() { m_block.reset(), m_used = 0; }

private:
    DeviceBuffer m_block;
    size_t m_used = 0;
};

// One arena per backend, lent to one session at a time; a second concurrent session gets a private one.
// Hold the pool in a shared_ptr: a lent arena keeps its pool alive.
class ArenaPool : public std::enable_shared_from_this<ArenaPool> {
public:
    std::shared_ptr<DeviceArena> acquire();

private:
    std::mutex m_mutex;
    DeviceArena m_shared;
    bool m_lent = false;
    friend struct ArenaReturn;
};

class CudaStream {
public:
    CudaStream(); // non-blocking: never serialises with the legacy default stream other code may use
    ~CudaStream();
    CudaStream(const CudaStream&) = delete;
    CudaStream& operator=(const CudaStream&) = delete;
    cudaStream_t get() const { return m_stream; }

private:
    cudaStream_t m_stream = nullptr;
};

class CudaEvent {
public:
    CudaEvent();
    ~CudaEvent();
    CudaEvent(CudaEvent&& o) noexcept;
    CudaEvent& operator=(CudaEvent&&) = delete;
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;
    cudaEvent_t get() const { return m_event; }
    void record(cudaStream_t stream);
    // Recorded as an event node of a graph when `stream` is capturing (cudaEventRecordExternal), so timing
    // between events works inside a replayed CUDA Graph.
    void recordExternal(cudaStream_t stream);

private:
    cudaEvent_t m_event = nullptr;
};

// Milliseconds between two recorded, completed events.
double elapsedMs(const CudaEvent& start, const CudaEvent& stop);

} // namespace convscope::gpu
