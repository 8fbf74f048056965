// What both uses of cuDNN's graph (backend) API share: an owning descriptor and an FP32 NCHW tensor descriptor.
// graph_conv.cpp builds convolution graphs with them, graph_pointwise.cpp single pointwise operations.
#pragma once

#include "kernels/cudnn/cudnn_support.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

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
    Desc(Desc&& o) noexcept
        : m_desc(std::exchange(o.m_desc, nullptr))
    {
    }
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

// dims are always [N, C, H, W]; `channelsLast` lays them out NHWC (C innermost), as a native session stores them.
inline Desc tensor(
    int64_t uid, const std::array<int64_t, 4>& dims, cudnnDataType_t type = CUDNN_DATA_FLOAT, bool channelsLast = false)
{
    const std::array<int64_t, 4> strides = channelsLast
        ? std::array<int64_t, 4> { dims[1] * dims[2] * dims[3], 1, dims[3] * dims[1], dims[1] }
        : std::array<int64_t, 4> { dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1 };
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

// The engine configurations cuDNN's heuristics propose for a finalized operation graph in `mode`, best first; empty
// when the heuristics have none for it.
inline std::vector<std::unique_ptr<Desc>> engineConfigs(const Desc& opGraph, cudnnBackendHeurMode_t mode)
{
    std::vector<std::unique_ptr<Desc>> configs;
    Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heur.setDesc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, opGraph);
    heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (!heur.tryFinalize())
        return configs;
    int64_t count = 0;
    if (cudnnBackendGetAttribute(
            heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr)
            != CUDNN_STATUS_SUCCESS
        || count <= 0)
        return configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
        configs.push_back(std::make_unique<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
        raw.push_back(configs.back()->get());
    }
    int64_t got = 0;
    if (cudnnBackendGetAttribute(
            heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data())
        != CUDNN_STATUS_SUCCESS)
        return {};
    configs.resize(size_t(std::min(got, count)));
    return configs;
}

// An execution plan for one engine configuration, and the workspace it needs; null when it does not finalize here or
// needs more than `workspaceLimit` bytes.
inline std::unique_ptr<Desc> executionPlan(
    cudnnHandle_t h, const Desc& config, size_t workspaceLimit, size_t* workspace)
{
    auto plan = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    plan->setDesc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
    if (!plan->tryFinalize())
        return nullptr;
    int64_t bytes = 0, n = 0;
    if (cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &bytes)
            != CUDNN_STATUS_SUCCESS
        || bytes < 0 || size_t(bytes) > workspaceLimit)
        return nullptr;
    *workspace = size_t(bytes);
    return plan;
}

} // namespace convscope::cudnn::graph
