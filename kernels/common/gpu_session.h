// The flow every GPU backend session shares, so the cuda and cudnn modules time things the same way:
//
//   prepare   (untimed) plan the device memory from the inferred shapes — one arena holding the input, every
//             layer's output and every parameter — upload the weights, let the backend prepare each layer
//             (prepareLayer: pick algorithms, build tables, size workspaces), then run one warm-up pass so
//             module loading and first-launch costs never reach a timed pass.
//   runPass   input → pinned staging → device (H2D, timed with events), every layer in order on its
//             predecessor's output (runLayer, each between two events and inside an NVTX range
//             "cuda.tiled · L3 conv2d 6→16 k3"), the final output back (D2H, timed). One synchronisation at
//             the end of the pass, then the elapsed times are read: the host never stalls the GPU mid-pass.
//   fetchOutput  a layer's output copied back for display, timed apart and never counted as compute.
//
// Graph mode (extra["graph"] = "1", `--graph` on the command line): prepare also captures the layers, with an
// event node between each two, into a CUDA Graph; runPass then replays it with one cudaGraphLaunch instead of
// one launch per kernel, which is what small layers (LeNet at batch 1) spend most of their time on. Layer times
// still come from the events, now recorded by the graph itself; but an event node costs about as much as a tiny
// kernel, so every pass also replays a second, lean graph of the same layers without them, timed as a whole:
// metadata "graph_pass_us" and "graph_layer_us" (median over the passes, per launched layer).
//
// Launch gate (launch_gate.h): every timed pass is queued behind a closed gate and then let go, so the events
// measure the GPU's work, not the host's launch rate (LeNet's layers are shorter than a launch). On unless
// extra["launch_gate"] = "0"; a session whose gate ever times out goes on without it and says so in metadata.
//
// Flatten is a view: its output aliases its input buffer and nothing is launched.
// Option extra["poison_outputs"] = "1" fills every layer output with NaN before each pass (tests use it so an
// element a kernel forgets to write fails the comparison).
// Option extra["fault_inject"] (or CONVSCOPE_FAULT_INJECT) makes the session fail on purpose: fault_injection.h.
#pragma once

#include "compute/backend.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/fault_injection.h"
#include "kernels/common/launch_gate.h"

#include <cuda_runtime_api.h>
#include <driver_types.h>

#include <memory>
#include <string>
#include <vector>

namespace convscope::gpu {

// A minimal guard added with the CPU part of issue 16 (skip connections and the new layer kinds), to be replaced by
// the GPU part: the kinds the GPU dispatches predate (relu6, hardswish, hardsigmoid, silu, add, mul, concat, pad,
// identity, dropout) give "<selection>: <kind> is not run by this backend yet"; empty for the others.
std::string gpuRefusesKind(const LayerSpec& spec, const std::string& selection);

class GpuSessionBase : public BackendSession {
public:
    GpuSessionBase(std::string backend, std::string algorithm, SessionOptions options, std::shared_ptr<ArenaPool> pool);
    ~GpuSessionBase() override;

    void prepare(const Network& net, const ShapeReport& shapes) final;
    PassTiming runPass(const Tensor& input) final;
    Tensor fetchOutput(size_t layer, double* ms) override;
    std::string layerNote(size_t layer) const override;
    std::map<std::string, std::string> metadata() const override;

protected:
    // Launch layer i on `stream` (asynchronously; never synchronise here). Inputs and outputs through the
    // accessors below. Not called for views (flatten).
    virtual void runLayer(size_t i, cudaStream_t stream) = 0;
    // Device bytes layer i needs in the arena beyond its output (index tables, folded parameters, a
    // workspace); called once per layer during planning, before anything is allocated.
    virtual size_t layerScratchBytes(size_t /*i*/) const { return 0; }
    // Called once per layer after every buffer exists and the parameters are on the device.
    virtual void prepareLayer(size_t /*i*/, cudaStream_t /*stream*/) { }
    // Extra entries for metadata() (math mode details, library versions).
    virtual std::map<std::string, std::string> extraMetadata() const { return {}; }

    size_t layerCount() const { return m_layers.size(); }
    const Layer& layer(size_t i) const { return m_net.layers[i]; }
    const LayerSpec& spec(size_t i) const { return m_net.layers[i].spec; }
    const LayerShape& shape(size_t i) const { return m_shapes.layers[i]; }
    const float* input(size_t i) const { return i == 0 ? m_input : m_layers[i - 1].out; }
    float* output(size_t i) const { return m_layers[i].out; }
    const float* weight(size_t i) const { return m_layers[i].weight; }
    const float* bias(size_t i) const { return m_layers[i].bias; }
    const float* runningMean(size_t i) const { return m_layers[i].mean; }
    const float* runningVar(size_t i) const { return m_layers[i].var; }
    void* scratch(size_t i) const { return m_layers[i].scratch; }
    size_t scratchBytes(size_t i) const { return m_layers[i].scratchBytes; }
    void setLayerNote(size_t i, std::string note) { m_layers[i].note = std::move(note); }
    const SessionOptions& options() const { return m_options; }
    const std::string& algorithm() const { return m_algorithm; }
    const std::string& backendName() const { return m_backend; }
    const cudaDeviceProp& deviceProperties() const { return m_prop; }
    int device() const { return m_device; }

private:
    struct LayerState {
        float* out = nullptr;
        bool view = false;
        const float* weight = nullptr;
        const float* bias = nullptr;
        const float* mean = nullptr;
        const float* var = nullptr;
        void* scratch = nullptr;
        size_t scratchBytes = 0;
        std::string note;
        std::string rangeName; // NVTX
    };
    void enqueueLayers(cudaStream_t stream, std::vector<CudaEvent>* marks, bool externalMarks = false);
    void captureGraph(cudaStream_t stream);
    void makeCurrent() const;
    LaunchGate* gateForPass() const; // the gate, or null when off or the pass is too long to queue whole
    void checkGate(); // after a pass: a gate that timed out is dropped for the rest of the session

    std::string m_backend, m_algorithm;
    SessionOptions m_options;
    std::shared_ptr<ArenaPool> m_pool;
    std::shared_ptr<DeviceArena> m_arena;
    std::unique_ptr<CudaStream> m_stream;
    PinnedBuffer m_stagingIn, m_stagingOut;
    Network m_net;
    ShapeReport m_shapes;
    std::vector<LayerState> m_layers;
    float* m_input = nullptr;
    std::vector<CudaEvent> m_events; // h2d start, after h2d, after each layer, after d2h
    int m_device = 0;
    cudaDeviceProp m_prop {};
    bool m_prepared = false;
    bool m_poisonOutputs = false;
    bool m_graphMode = false;
    cudaGraphExec_t m_graph = nullptr; // with an event node after every layer
    cudaGraphExec_t m_leanGraph = nullptr; // the same layers without them
    std::vector<double> m_leanPassMs;
    std::unique_ptr<LaunchGate> m_gate; // null when off
    std::string m_gateState; // for metadata: why it is on or off
    Fault m_fault = Fault::None; // injected on purpose (tests), off by default
};

// The NVTX range label: "L3 conv2d 6→16 k5", "L0 relu".
std::string layerLabel(size_t index, const LayerSpec& spec, const LayerShape& shape);

} // namespace convscope::gpu
