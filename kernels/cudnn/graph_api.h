// What both uses of cuDNN's graph (backend) API share: an owning descriptor and an FP32 NCHW tensor descriptor.
// graph_conv.cpp builds convolution graphs with them, graph_pointwise.cpp single pointwise operations.
#pragma once

#include "kernels/cudnn/cudnn_support.h"

#include <array>
#include <cstdint>
#include <utility>

namespace convscope::cudnn::graph {

// An owning backend descriptor.
class Desc {
public:
    explicit Desc(cudnnBackendDescriptorType_t type)
    {
        CONVSCOPE_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &m_desc));
    }
    ~Desc()
    {
        if (m_desc)
            cudnnBackendDestroyDescriptor(m_desc);
    }
    Desc(Desc&& o) noexcept : m_desc(std::exchange(o.m_desc, nullptr)) { }
    Desc(const Desc&) = delete;
    Desc& operator=(const Desc&) = delete;
    Desc& operator=(Desc&&) = delete;

    cudnnBackendDescriptor_t get() const { return m_desc; }
    template <typename T>
    void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const T* values)
    {
        CONVSCOPE_CUDNN_CHECK(cudnnBackendSetAttribute(m_desc, name, type, count, values));
    }
    void setDesc(cudnnBackendAttributeName_t name, const Desc& d)
    {
        cudnnBackendDescriptor_t raw = d.get();
        set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
    }
    void finalize() { CONVSCOPE_CUDNN_CHECK(cudnnBackendFinalize(m_desc)); }
    bool tryFinalize() { return cudnnBackendFinalize(m_desc) == CUDNN_STATUS_SUCCESS; }

private:
    cudnnBackendDescriptor_t m_desc = nullptr;
};

inline Desc tensor(int64_t uid, const std::array<int64_t, 4>& dims)
{
    const std::array<int64_t, 4> strides { dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1 }; // NCHW
    const cudnnDataType_t type = CUDNN_DATA_FLOAT;
    const int64_t alignment = 16; // every tensor the session hands over is 256-byte aligned
    Desc d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    d.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    d.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    d.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    d.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    d.finalize();
    return d;
}

} // namespace convscope::cudnn::graph
