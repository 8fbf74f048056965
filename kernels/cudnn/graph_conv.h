// A forward convolution through cuDNN's graph (backend) API, as PyTorch runs it with cudnn.benchmark.
//
// Why beside the legacy API. cudnnFindConvolutionForwardAlgorithmEx tries eight algorithms, each mapped by
// cuDNN to one engine configuration. The graph API's heuristics propose more — several engines and knob
// settings per algorithm family — and frameworks time those: on the H200 that gap was up to 10% on some
// U-Net layers (docs/PERFORMANCE.md). So cudnn.auto also builds the operation graph of the layer's
// convolution, asks the heuristics (mode A, then the fallback list) for engine configurations, drops those
// that would change the arithmetic (down-converted inputs always; tensor cores in FP32 — they mean TF32),
// finalizes each into an execution plan whose workspace fits the limit, times it (median of 5, outside the
// timed region), and keeps the fastest if it beats the legacy choice timed the same way.
#pragma once

#include "kernels/cudnn/conv_plan.h"

#include <functional>
#include <memory>
#include <string>

namespace convscope::cudnn {

// Median of `runs` timed calls of `run` on `stream` (after one warm-up), between CUDA events.
double medianCallMs(cudaStream_t stream, const std::function<void()>& run, int runs = 5);

class GraphConvPlan {
public:
    ~GraphConvPlan();
    GraphConvPlan(const GraphConvPlan&) = delete;
    GraphConvPlan& operator=(const GraphConvPlan&) = delete;

    size_t workspace() const { return m_workspace; }
    double medianMs() const { return m_ms; }
    // "engine 28 (heuristics mode A, 3rd of 9 tried)"
    const std::string& name() const { return m_name; }
    // y = conv(x, w) on the handle's stream. The variant pack is rebuilt only when a pointer changes.
    void execute(cudnnHandle_t h, const void* x, const void* w, void* y, void* workspace) const;

    // The fastest engine configuration for the layout's convolution (NCHW, or native NHWC of the storage type)
    // whose workspace fits
    // `workspace.bytes()`, timed on x, w, y (contents are overwritten); null when none finalizes.
    // `tried` receives how many configurations were built and timed.
    static std::shared_ptr<GraphConvPlan> tune(cudnnHandle_t h, const ConvLayout& l, MathMode math, const void* x,
        const void* w, void* y, void* workspace, size_t workspaceBytes, int* tried);

private:
    GraphConvPlan() = default;
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    size_t m_workspace = 0;
    double m_ms = 0;
    std::string m_name;
};

} // namespace convscope::cudnn
