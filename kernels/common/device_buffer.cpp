#include "kernels/common/device_buffer.h"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"

#include <utility>

namespace convscope::gpu {

DeviceBuffer::DeviceBuffer(size_t bytes, const std::string& what)
{
    if (bytes == 0)
        return;
    const cudaError_t status = cudaMalloc(&m_ptr, bytes);
    if (status == cudaErrorMemoryAllocation) {
        m_ptr = nullptr;
        throwOutOfMemory(what, bytes);
    }
    check(status, ("cudaMalloc(" + what + ")").c_str(), __FILE__, __LINE__);
    m_bytes = bytes;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : m_ptr(std::exchange(o.m_ptr, nullptr))
    , m_bytes(std::exchange(o.m_bytes, 0))
{
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept
{
    if (this != &o) {
        reset();
        m_ptr = std::exchange(o.m_ptr, nullptr);
        m_bytes = std::exchange(o.m_bytes, 0);
    }
    return *this;
}

void DeviceBuffer::reset()
{
    if (m_ptr)
        (void)cudaFree(m_ptr); // nothing useful to do with a failure here (destructor path)
    m_ptr = nullptr;
    m_bytes = 0;
}

PinnedBuffer::~PinnedBuffer()
{
    if (m_ptr)
        (void)cudaFreeHost(m_ptr);
}

void PinnedBuffer::reserve(size_t bytes)
{
    if (bytes <= m_bytes)
        return;
    if (m_ptr)
        (void)cudaFreeHost(m_ptr);
    m_ptr = nullptr;
    m_bytes = 0;
    const cudaError_t status = cudaMallocHost(&m_ptr, bytes);
    if (status != cudaSuccess) {
        m_ptr = nullptr;
        (void)cudaGetLastError();
        if (status == cudaErrorMemoryAllocation)
            throw OutOfMemoryError("out of page-locked host memory: asked " + mib(bytes));
        check(status, "cudaMallocHost(staging)", __FILE__, __LINE__);
    }
    m_bytes = bytes;
}

void DeviceArena::reserve(size_t bytes, const std::string& what)
{
    m_used = 0;
    if (bytes <= m_block.bytes())
        return;
    // Free first: keeping the old block while asking for the bigger one could fail a fit that would succeed.
    m_block.reset();
    m_block = DeviceBuffer(bytes, what);
}

void* DeviceArena::take(size_t bytes)
{
    const size_t aligned = alignUp(bytes);
    if (m_used + aligned > m_block.bytes())
        throw Error("internal error: device arena overrun (" + mib(m_used + aligned) + " of " + mib(m_block.bytes())
            + " reserved)");
    void* p = static_cast<char*>(m_block.get()) + m_used;
    m_used += aligned;
    return p;
}

struct ArenaReturn {
    std::shared_ptr<ArenaPool> pool;
    void operator()(DeviceArena*) const
    {
        std::lock_guard lock(pool->m_mutex);
        pool->m_lent = false;
    }
};

std::shared_ptr<DeviceArena> ArenaPool::acquire()
{
    std::lock_guard lock(m_mutex);
    if (m_lent)
        return std::make_shared<DeviceArena>();
    m_lent = true;
    // The pool keeps the arena (and its memory) for the next session; dropping the handle only marks it free.
    return std::shared_ptr<DeviceArena>(&m_shared, ArenaReturn { shared_from_this() });
}

CudaStream::CudaStream() { CONVSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking)); }

CudaStream::~CudaStream()
{
    if (m_stream)
        (void)cudaStreamDestroy(m_stream);
}

CudaEvent::CudaEvent() { CONVSCOPE_CUDA_CHECK(cudaEventCreate(&m_event)); }

CudaEvent::~CudaEvent()
{
    if (m_event)
        (void)cudaEventDestroy(m_event);
}

CudaEvent::CudaEvent(CudaEvent&& o) noexcept
    : m_event(std::exchange(o.m_event, nullptr))
{
}

void CudaEvent::record(cudaStream_t stream) { CONVSCOPE_CUDA_CHECK(cudaEventRecord(m_event, stream)); }
void CudaEvent::recordExternal(cudaStream_t stream)
{
    CONVSCOPE_CUDA_CHECK(cudaEventRecordWithFlags(m_event, stream, cudaEventRecordExternal));
}

double elapsedMs(const CudaEvent& start, const CudaEvent& stop)
{
    float ms = 0;
    CONVSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    return ms;
}

} // namespace convscope::gpu
