#include "kernels/cudnn/graph_pointwise.h"

#include "kernels/cudnn/graph_api.h"

#include <vector>

// CUDNN_ATTR_OPERATIONGRAPH_HANDLE is deprecated in newer cuDNN 9 headers but still required (see graph_conv.cpp).
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace convscope::cudnn {

namespace {
    constexpr int64_t kUidX = 'x', kUidY = 'y';
}

struct GraphPointwisePlan::Impl {
    std::vector<graph::Desc> keep; // tensors, pointwise descriptor, operation, graph: alive as long as the plan
    std::unique_ptr<graph::Desc> config, plan;
    mutable std::unique_ptr<graph::Desc> pack;
    mutable std::array<const void*, 3> packPointers {};
};

GraphPointwisePlan::~GraphPointwisePlan() = default;

void GraphPointwisePlan::execute(cudnnHandle_t h, const void* x, void* y, void* workspace) const
{
    if (!m_impl->pack || m_impl->packPointers != std::array<const void*, 3> { x, y, workspace }) {
        m_impl->pack = std::make_unique<graph::Desc>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
        const std::array<int64_t, 2> uids { kUidX, kUidY };
        std::array<void*, 2> pointers { const_cast<void*>(x), y };
        m_impl->pack->set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 2, uids.data());
        m_impl->pack->set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 2, pointers.data());
        m_impl->pack->set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
        m_impl->pack->finalize();
        m_impl->packPointers = { x, y, workspace };
    }
    CONVSCOPE_CUDNN_CHECK(cudnnBackendExecute(h, m_impl->plan->get(), m_impl->pack->get()));
}

std::shared_ptr<GraphPointwisePlan> GraphPointwisePlan::leakyRelu(
    cudnnHandle_t h, const std::array<int64_t, 4>& dims, double slope, size_t workspaceLimit, std::string* why)
{
    std::vector<graph::Desc> keep;
    keep.push_back(graph::tensor(kUidX, dims));
    keep.push_back(graph::tensor(kUidY, dims));

    graph::Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    const cudnnPointwiseMode_t mode = CUDNN_POINTWISE_RELU_FWD;
    const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    pw.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
    pw.set(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, CUDNN_TYPE_DOUBLE, 1, &slope);
    pw.finalize();

    graph::Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.setDesc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    op.setDesc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, keep[0]);
    op.setDesc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, keep[1]);
    op.finalize();

    graph::Desc opGraph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    opGraph.setDesc(CUDNN_ATTR_OPERATIONGRAPH_OPS, op);
    opGraph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    if (!opGraph.tryFinalize()) {
        *why = "cuDNN's graph API did not accept a lone pointwise node";
        return nullptr;
    }

    int position = 0;
    for (const cudnnBackendHeurMode_t heurMode : { CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK }) {
        std::vector<std::unique_ptr<graph::Desc>> configs = graph::engineConfigs(opGraph, heurMode);
        for (size_t i = 0; i < configs.size(); ++i) {
            ++position;
            size_t bytes = 0;
            std::unique_ptr<graph::Desc> plan = graph::executionPlan(h, *configs[i], workspaceLimit, &bytes);
            if (!plan)
                continue;
            std::shared_ptr<GraphPointwisePlan> result(new GraphPointwisePlan());
            result->m_impl = std::make_unique<Impl>();
            result->m_impl->config = std::move(configs[i]);
            result->m_impl->plan = std::move(plan);
            result->m_workspace = bytes;
            result->m_name = std::string("graph API pointwise, ")
                + (heurMode == CUDNN_HEUR_MODE_A ? "mode A" : "fallback") + " #" + std::to_string(position);
            keep.push_back(std::move(pw));
            keep.push_back(std::move(op));
            keep.push_back(std::move(opGraph));
            result->m_impl->keep = std::move(keep);
            return result;
        }
    }
    *why = "cuDNN's graph API has no engine for a lone pointwise node here";
    return nullptr;
}

} // namespace convscope::cudnn
