#include "compute/nvtx.h"

#include "convscope_config.h"

#if CONVSCOPE_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace convscope::nvtx {

uint32_t backendColor(const std::string& backend)
{
    // The same colours as the charts: CPU blue, our CUDA green (NVIDIA's), cuDNN orange, oneDNN purple.
    if (backend == "cpu")
        return 0xFF1F77B4;
    if (backend == "cuda")
        return 0xFF2CA02C;
    if (backend == "cudnn")
        return 0xFFFF7F0E;
    if (backend == "onednn")
        return 0xFF9467BD;
    return 0xFF7F7F7F;
}

#if CONVSCOPE_HAVE_NVTX
namespace {
    nvtxDomainHandle_t domain()
    {
        static nvtxDomainHandle_t handle = nvtxDomainCreateA("ConvScope");
        return handle;
    }
} // namespace

Range::Range(const std::string& name, uint32_t argb)
{
    nvtxEventAttributes_t attr {};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.colorType = NVTX_COLOR_ARGB;
    attr.color = argb;
    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = name.c_str();
    nvtxDomainRangePushEx(domain(), &attr);
    m_active = true;
}

Range::~Range()
{
    if (m_active)
        nvtxDomainRangePop(domain());
}

bool enabled() { return true; }
#else
Range::Range(const std::string&, uint32_t) { }
Range::~Range() { }
bool enabled() { return false; }
#endif

} // namespace convscope::nvtx
