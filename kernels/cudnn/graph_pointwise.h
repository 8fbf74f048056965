// A single pointwise operation through cuDNN's graph (backend) API, for what the legacy activation call lacks:
// leaky ReLU is CUDNN_POINTWISE_RELU_FWD with a lower clip slope there, and nowhere in cudnnActivationForward.
//
// The graph is one node, y = f(x) on an FP32 NCHW tensor; the heuristics (mode A, then the fallback list) propose
// engine configurations and the first that finalizes within the workspace limit is kept. cuDNN need not have an
// engine for a lone pointwise node on every version and GPU: build() then returns null with the reason, and the
// session runs our kernel instead and says so in the layer note.
#pragma once

#include "kernels/cudnn/cudnn_support.h"

#include <array>
#include <memory>
#include <string>

namespace convscope::cudnn {

class GraphPointwisePlan {
public:
    ~GraphPointwisePlan();
    GraphPointwisePlan(const GraphPointwisePlan&) = delete;
    GraphPointwisePlan& operator=(const GraphPointwisePlan&) = delete;

    // "graph engine 5 (mode A)"
    const std::string& name() const { return m_name; }
    size_t workspace() const { return m_workspace; }
    // y = f(x) on the handle's stream; the variant pack is rebuilt only when a pointer changes.
    void execute(cudnnHandle_t h, const void* x, void* y, void* workspace) const;

    // Leaky ReLU (max(x, 0) + slope · min(x, 0)) over an [n, c, h, w] tensor; null and *why set when cuDNN has no
    // engine for it here.
    static std::shared_ptr<GraphPointwisePlan> leakyRelu(
        cudnnHandle_t h, const std::array<int64_t, 4>& dims, double slope, size_t workspaceLimit, std::string* why);

private:
    GraphPointwisePlan() = default;
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    size_t m_workspace = 0;
    std::string m_name;
};

} // namespace convscope::cudnn
