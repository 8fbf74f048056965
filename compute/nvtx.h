// NVTX ranges in the domain "ConvScope", named like "cuda.tiled · L3 conv2d 6→16 k5" and coloured per
// backend, so a capture in Nsight Systems lines up with the layer list. Compiles to nothing without the
// NVTX 3 headers (CONVSCOPE_HAVE_NVTX in the generated config header); the CPU backend uses it too.
#pragma once

#include <cstdint>
#include <string>

namespace convscope::nvtx {

// ARGB colours, one per backend, shared with the timing charts.
uint32_t backendColor(const std::string& backend);

class Range {
public:
    Range(const std::string& name, uint32_t argb);
    Range(const std::string& name, const std::string& backend)
        : Range(name, backendColor(backend))
    {
    }
    ~Range();
    Range(const Range&) = delete;
    Range& operator=(const Range&) = delete;

private:
    bool m_active = false;
};

bool enabled(); // true when built with NVTX

} // namespace convscope::nvtx
