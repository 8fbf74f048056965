// Checking every CUDA runtime call. A failed call becomes a C++ exception carrying a message for a person:
// OutOfMemoryError ("asked 512 MiB, 301 MiB free") for allocations, Error otherwise. Errors that leave the
// CUDA context unusable (an illegal address in a kernel, a launch failure, ...) are "sticky": every later
// call fails too, so they also mark the device poisoned (device_info.h) and the backend then reports itself
// unavailable with the reason instead of failing each selection with a confusing message.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace convscope::gpu {

// Throws unless `status` is cudaSuccess. `what` names the call ("cudaMemcpyAsync(input)").
void check(cudaError_t status, const char* what, const char* file, int line);

// True for errors after which the context cannot be used again in this process.
bool isStickyError(cudaError_t status);

// "512 MiB" style sizes for messages.
std::string mib(size_t bytes);

// The OutOfMemoryError message: "<what>: out of device memory: asked N MiB, M MiB free (of T MiB)".
[[noreturn]] void throwOutOfMemory(const std::string& what, size_t askedBytes);

// After launching kernels: a launch configuration error (cudaGetLastError) becomes an exception naming the
// kernel. Execution errors surface at the next synchronisation.
void checkLaunch(const char* kernel, const char* file, int line);

} // namespace convscope::gpu

#define CONVSCOPE_CUDA_CHECK(expr) ::convscope::gpu::check((expr), #expr, __FILE__, __LINE__)
#define CONVSCOPE_CUDA_CHECK_LAUNCH(name) ::convscope::gpu::checkLaunch((name), __FILE__, __LINE__)
