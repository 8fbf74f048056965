// The flow every GPU backend session shares, so the cuda and cudnn modules time things the same way:
//
//   prepare   (untimed) plan the device memory from the inferred shapes — one arena holding the input, every
//             layer's output and every parameter — upload the weights, let the backend prepare each layer
//             (prepareLayer: pick algorithms, build tables, size workspaces), then run one warm-up pass so
//             module loading and first-launch costs never reach a timed pass.
//   runPass   input → pinned staging → device (H2D, timed with events), every layer in order on its
//             inputs (runLayer, each between two events and inside an NVTX range
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
// Flatten, identity and dropout (at inference) are views: the output aliases the input buffer and nothing is
// launched. A layer reads the outputs its `inputs` name (LayerShape::sources); every output keeps its own buffer.
// Option extra["poison_outputs"] = "1" fills every layer output with NaN before each pass (tests use it so an
// element a kernel forgets to write fails the comparison).
//
// Storage (compute/storage_format.h): in the Tensor Core math modes (tf32, fp16, bf16) the input, every output and
// the GEMM weights live in the mode's storage format — channels-last, and FP16/BF16 for those modes. The input is
// converted on the device inside the timed H2D step; fetchOutput and the final D2H convert back to FP32 NCHW. A layer
// whose backend says runsInStorage(i) reads and writes that format itself (inputData/outputData/weightData); any
// other layer runs its FP32 NCHW kernel unchanged on FP32 copies the base makes just before and after it (timed with
// the layer; its note says so). A flatten of a channels-last tensor is not a view: the base permutes it to NCHW
// order, in the storage type, as PyTorch's flatten of an NCHW tensor orders it.
// Option extra["fault_inject"] (or CONVSCOPE_FAULT_INJECT) makes the session fail on purpose: fault_injection.h.
#pragma once

#include "compute/backend.h"
#include "compute/storage_format.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/fault_injection.h"
#include "kernels/common/launch_gate.h"

#include <cuda_runtime_api.h>
#include <driver_types.h>

#include <memory>
#include <string>
#include <vector>

namespace convscope::gpu {

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
    // accessors below. Not called for views (flatten, identity, dropout).
    virtual void runLayer(size_t i, cudaStream_t stream) = 0;
    // Device bytes layer i needs in the arena beyond its output (index tables, folded parameters, a
    // workspace); called once per layer during planning, before anything is allocated.
    virtual size_t layerScratchBytes(size_t /*i*/) const { return 0; }
    // Called once per layer after every buffer exists and the parameters are on the device.
    virtual void prepareLayer(size_t /*i*/, cudaStream_t /*stream*/) { }
    // Extra entries for metadata() (math mode details, library versions).
    virtual std::map<std::string, std::string> extraMetadata() const { return {}; }
    // Only asked when storage() is not plain FP32, once per layer before planning: does layer i read and write the
    // storage format itself? If not, the base runs it on FP32 NCHW copies (see the header comment).
    virtual bool runsInStorage(size_t /*i*/) const { return false; }
    // Asked for a layer that runs in FP16/BF16 storage and has a GEMM weight: does its kernel read the weight in the
    // storage type (weightData)? Only then is the typed copy made.
    virtual bool readsTypedWeight(size_t /*i*/) const { return true; }

    size_t layerCount() const { return m_layers.size(); }
    const Layer& layer(size_t i) const { return m_net.layers[i]; }
    const LayerSpec& spec(size_t i) const { return m_net.layers[i].spec; }
    const LayerShape& shape(size_t i) const { return m_shapes.layers[i]; }
    // Layer i's k-th input, in the order the layer names them (the layer above when it names none): the network's
    // input or an earlier layer's output. Every output stays in the arena for the whole pass, so a skip's tensor is
    // still there when its reader runs.
    //
    // input/output are FP32: the tensors themselves in a plain FP32 session, the FP32 NCHW copies for a layer that
    // does not run in storage, and the channels-last FP32 tensors of a tf32 session's layer that does. (Asking for
    // FP32 pointers of an FP16/BF16 layer that runs in storage is an internal error.)
    const float* input(size_t i, size_t k = 0) const;
    size_t inputCount(size_t i) const { return m_shapes.layers[i].sources.size(); }
    float* output(size_t i) const;
    // The tensors in the session's storage format (storage()), for layers that run in it.
    const void* inputData(size_t i, size_t k = 0) const;
    void* outputData(size_t i) const { return m_layers[i].out; }
    // The weight in the storage type, its original order ([K, C/g, R, S], [C_in, C_out/g, R, S], [out, in], ...):
    // for conv2d, conv_transpose2d, linear and their 3-D kinds in a layer that runs in storage; else the FP32 weight.
    const void* weightData(size_t i) const
    {
        return m_layers[i].weightData ? m_layers[i].weightData : m_layers[i].weight;
    }
    const StorageFormat& storage() const { return m_storage; }
    bool layerRunsInStorage(size_t i) const { return m_layers[i].inStorage; }
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
        float* out = nullptr; // in the storage format (void* in spirit; float* for the plain FP32 session's ease)
        bool view = false;
        bool inStorage = true; // false: runs on FP32 NCHW copies (shadowIn/shadowOut)
        bool permuteFlatten = false; // a flatten of a channels-last tensor: the base permutes it
        std::vector<float*> shadowIn; // FP32 NCHW copies of the inputs, made before the layer
        float* shadowOut = nullptr; // FP32 NCHW output, converted into `out` after the layer
        const void* weightData = nullptr; // the weight in the storage type (layers that run in storage)
        const float* weight = nullptr;
        const float* bias = nullptr;
        const float* mean = nullptr;
        const float* var = nullptr;
        void* scratch = nullptr;
        size_t scratchBytes = 0;
        std::string note;
        std::string storageNote; // set by the base: the layer ran on FP32 copies (kept apart so setLayerNote keeps it)
        std::string rangeName; // NVTX
    };
    void enqueueLayers(cudaStream_t stream, std::vector<CudaEvent>* marks, bool externalMarks = false);
    void runOneLayer(size_t i, cudaStream_t stream); // with the FP32 copies around it where it needs them
    const Shape& sourceShape(size_t i, size_t k) const;
    // Layer `layer`'s output as FP32 NCHW on the device: the tensor itself, or converted into m_fetchFp32.
    const float* fp32Output(size_t layer, cudaStream_t stream);
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
    float* m_input = nullptr; // in the storage format
    float* m_inputFp32 = nullptr; // the FP32 NCHW input before conversion (non-plain storage only)
    float* m_fetchFp32 = nullptr; // FP32 NCHW staging for fetches and the final D2H (non-plain storage only)
    StorageFormat m_storage;
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
