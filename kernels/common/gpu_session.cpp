#include "kernels/common/gpu_session.h"

#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/linear_geometry.h"
#include "compute/nvtx.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_info.h"
#include "kernels/common/gpu_clocks.h"
#include "kernels/common/storage_convert.cuh"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <variant>

namespace convscope::gpu {

namespace {
    size_t tensorBytes(const std::shared_ptr<const Tensor>& t)
    {
        return t ? DeviceArena::alignUp(static_cast<size_t>(t->numel()) * sizeof(float)) : 0;
    }

    const float* upload(DeviceArena& arena, const std::shared_ptr<const Tensor>& t, cudaStream_t stream)
    {
        if (!t)
            return nullptr;
        const size_t bytes = static_cast<size_t>(t->numel()) * sizeof(float);
        void* p = arena.take(bytes);
        // Pageable source: the copy is staged by the driver; fine for an untimed, one-time upload.
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(p, t->data(), bytes, cudaMemcpyHostToDevice, stream));
        return static_cast<const float*>(p);
    }

    // Kinds whose weight is a GEMM operand: stored in the storage type for a layer that runs in storage.
    // Read from the kind table's family (compute/layer_kinds.h); the switch names every family, so a new one is a
    // compile error here.
    bool weightIsGemmOperand(const LayerSpec& spec)
    {
        switch (layerKind(spec).family) {
        case KindFamily::Convolution:
        case KindFamily::FullyConnected:
            return true;
        case KindFamily::Pooling:
        case KindFamily::Normalization:
        case KindFamily::Activation:
        case KindFamily::Reshape:
        case KindFamily::Merge:
        case KindFamily::Padding:
        case KindFamily::Copy:
        case KindFamily::NoOp:
            return false;
        }
        return false;
    }

    // Bytes of a tensor of `shape` in the storage type.
    size_t storedBytes(const Shape& shape, const StorageFormat& f)
    {
        return static_cast<size_t>(shape.numel()) * dtypeBytes(f.dtype);
    }

    // Positions per image: a channels-last tensor with one position is laid out as its NCHW twin.
    bool hasPositions(const Shape& shape) { return shape.n * shape.c > 0 && shape.numel() / (shape.n * shape.c) > 1; }

    bool envTrue(const std::map<std::string, std::string>& extra, const char* key)
    {
        const auto it = extra.find(key);
        return it != extra.end() && (it->second == "1" || it->second == "true" || it->second == "nan");
    }
} // namespace

std::string layerLabel(size_t index, const LayerSpec& spec, const LayerShape& shape)
{
    std::string label = "L" + std::to_string(index) + " " + layerTypeName(spec);
    if (const auto* c = std::get_if<Conv2d>(&spec))
        label += " " + std::to_string(shape.in.c) + "→" + std::to_string(shape.out.c) + " k"
            + std::to_string(c->kernel_size[0]);
    else if (const auto* t = std::get_if<ConvTranspose2d>(&spec))
        label += " " + std::to_string(shape.in.c) + "→" + std::to_string(shape.out.c) + " k"
            + std::to_string(t->kernel_size[0]);
    else if (std::holds_alternative<Linear>(spec))
        label += " " + std::to_string(linearRows(shape.in).inFeatures) + "→" + std::to_string(shape.out.dims().back());
    return label;
}

GpuSessionBase::GpuSessionBase(
    std::string backend, std::string algorithm, SessionOptions options, std::shared_ptr<ArenaPool> pool)
    : m_backend(std::move(backend))
    , m_algorithm(std::move(algorithm))
    , m_options(std::move(options))
    , m_pool(std::move(pool))
{
    requireUsable();
    m_device = selectDevice();
    CONVSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&m_prop, m_device));
    m_stream = std::make_unique<CudaStream>();
    m_storage = gpuStorageFor(m_options.math);
    m_poisonOutputs = envTrue(m_options.extra, "poison_outputs");
    m_graphMode = envTrue(m_options.extra, "graph");
    if (const auto it = m_options.extra.find("layout");
        m_graphMode && it != m_options.extra.end() && it->second == "nhwc")
        throw UnsupportedError(m_backend + "." + m_algorithm
            + ": graph mode with layout=nhwc is unsupported (the NHWC split timing reads events the graph would own)");
    m_fault = injectedFault(m_backend, m_algorithm, m_options);
    if (const auto it = m_options.extra.find("launch_gate"); it != m_options.extra.end() && it->second == "0") {
        m_gateState = "off (launch_gate=0): the host queues each layer as the GPU runs, so small layers' times include "
                      "the host's launch rate";
    } else if (const std::string why = gateUnusableReason(); !why.empty()) {
        m_gateState = "off: " + why;
    } else {
        m_gate = std::make_unique<LaunchGate>();
        m_gateState = "on: each pass is queued behind a closed gate and then released, so layer times are GPU time";
    }
}

GpuSessionBase::~GpuSessionBase()
{
    if (m_graph)
        (void)cudaGraphExecDestroy(m_graph);
    if (m_leanGraph)
        (void)cudaGraphExecDestroy(m_leanGraph);
    // Work still queued must finish before its buffers go back to the arena for the next session.
    if (m_stream && !isPoisoned())
        (void)cudaStreamSynchronize(m_stream->get());
}

void GpuSessionBase::makeCurrent() const { CONVSCOPE_CUDA_CHECK(cudaSetDevice(m_device)); }

const void* GpuSessionBase::inputData(size_t i, size_t k) const
{
    const std::vector<int>& sources = m_shapes.layers.at(i).sources;
    if (k >= sources.size())
        throw Error("layer " + std::to_string(i) + " has no input " + std::to_string(k));
    return sources[k] < 0 ? m_input : m_layers.at(size_t(sources[k])).out;
}

const float* GpuSessionBase::input(size_t i, size_t k) const
{
    const LayerState& s = m_layers.at(i);
    if (!s.inStorage)
        return s.shadowIn.at(k);
    if (m_storage.dtype != DType::F32)
        throw Error("internal error: layer " + std::to_string(i) + " runs in " + m_storage.str()
            + " storage; FP32 input pointers do not exist for it");
    return static_cast<const float*>(inputData(i, k));
}

float* GpuSessionBase::output(size_t i) const
{
    const LayerState& s = m_layers.at(i);
    if (!s.inStorage)
        return s.shadowOut;
    if (m_storage.dtype != DType::F32)
        throw Error("internal error: layer " + std::to_string(i) + " runs in " + m_storage.str()
            + " storage; an FP32 output pointer does not exist for it");
    return s.out;
}

const Shape& GpuSessionBase::sourceShape(size_t i, size_t k) const
{
    const int src = m_shapes.layers.at(i).sources.at(k);
    return src < 0 ? m_shapes.input : m_shapes.layers.at(size_t(src)).out;
}

void GpuSessionBase::prepare(const Network& net, const ShapeReport& shapes)
{
    requireUsable();
    makeCurrent();
    if (!shapes.ok())
        throw InputError("cannot prepare a network whose shapes are invalid: " + shapes.firstError());
    for (size_t i = 0; i < shapes.layers.size(); ++i)
        if (shapes.layers[i].sources.empty())
            throw Error("layer " + std::to_string(i) + " has no resolved inputs (shape inference did not run on it)");
    m_net = net; // cheap: parameters are shared, immutable tensors
    m_shapes = shapes;
    m_prepared = false;
    const size_t n = m_net.layers.size();
    m_layers.assign(n, LayerState {});

    // Plan: input, outputs (views own nothing), parameters, per-layer scratch; outside plain FP32 also the FP32
    // input before its conversion, one FP32 staging area for fetches, and one set of FP32 copies shared by the
    // layers that run on them (layers run one after another, so one region of the largest need serves them all).
    const bool plain = m_storage.plainFp32();
    size_t total = DeviceArena::alignUp(storedBytes(shapes.input, m_storage));
    size_t shadowFloats = 0, fetchFloats = 0;
    // A layer that runs in FP16/BF16 storage gets its GEMM weight in that type too (weightData).
    auto typedWeight = [&](size_t i) {
        const Layer& l = m_net.layers[i];
        return m_storage.dtype != DType::F32 && m_layers[i].inStorage && l.weight && weightIsGemmOperand(l.spec)
            && readsTypedWeight(i);
    };
    for (size_t i = 0; i < n; ++i) {
        const Layer& l = m_net.layers[i];
        LayerState& st = m_layers[i];
        const bool flatten = std::holds_alternative<Flatten>(l.spec);
        const bool reshape = flatten || std::holds_alternative<Reshape>(l.spec);
        st.view = reshape || std::holds_alternative<Identity>(l.spec) || std::holds_alternative<Dropout>(l.spec);
        const bool positions = hasPositions(sourceShape(i, 0)) || hasPositions(shapes.layers[i].out);
        if (reshape && m_storage.channelsLast && positions) {
            // Channels-last storage is not PyTorch's element order: a flatten to [N, F] permutes it back (the output
            // has no positions, so its storage is that order); any other reshape runs on FP32 NCHW copies.
            st.view = false;
            st.permuteFlatten = flatten && hasPositions(sourceShape(i, 0)) && !hasPositions(shapes.layers[i].out);
        }
        st.inStorage = plain || st.view || st.permuteFlatten || runsInStorage(i);
        if (!st.view)
            total += DeviceArena::alignUp(storedBytes(shapes.layers[i].out, m_storage));
        total += tensorBytes(l.weight) + tensorBytes(l.bias) + tensorBytes(l.runningMean) + tensorBytes(l.runningVar);
        if (typedWeight(i))
            total += DeviceArena::alignUp(static_cast<size_t>(l.weight->numel()) * dtypeBytes(m_storage.dtype));
        if (!st.inStorage) {
            size_t need = DeviceArena::alignUp(static_cast<size_t>(shapes.layers[i].out.numel()) * 4);
            for (size_t k = 0; k < inputCount(i); ++k)
                need += DeviceArena::alignUp(static_cast<size_t>(sourceShape(i, k).numel()) * 4);
            shadowFloats = std::max(shadowFloats, need / 4);
        }
        fetchFloats = std::max(fetchFloats, static_cast<size_t>(shapes.layers[i].out.numel()));
        st.scratchBytes = layerScratchBytes(i);
        total += DeviceArena::alignUp(st.scratchBytes);
    }
    if (!plain)
        total += DeviceArena::alignUp(static_cast<size_t>(shapes.input.bytes()))
            + DeviceArena::alignUp(shadowFloats * 4) + DeviceArena::alignUp(fetchFloats * 4);

    // The budget: what the caller allows, else what the device has free (plus the arena we already hold,
    // which is reused), less a margin for the runtime, kernels and other libraries.
    injectPrepareFault(m_fault, m_backend + "." + m_algorithm);
    if (!m_arena)
        m_arena = m_pool ? m_pool->acquire() : std::make_shared<DeviceArena>();
    size_t freeBytes = 0, totalBytes = 0;
    CONVSCOPE_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
    const size_t usable = freeBytes + m_arena->capacity();
    size_t budget = usable > (256u << 20) ? usable - (256u << 20) : 0;
    if (m_options.memoryBudgetBytes > 0 && static_cast<size_t>(m_options.memoryBudgetBytes) < budget)
        budget = static_cast<size_t>(m_options.memoryBudgetBytes);
    if (total > budget)
        throw OutOfMemoryError(m_backend + "." + m_algorithm + ": the network needs " + mib(total)
            + " of device memory (activations, parameters, workspace): asked " + mib(total) + ", " + mib(usable)
            + " free" + (m_options.memoryBudgetBytes > 0 ? " (budget " + mib(budget) + ")" : std::string()));
    m_arena->reserve(total, m_backend + " session arena");

    cudaStream_t stream = m_stream->get();
    m_input = static_cast<float*>(m_arena->take(storedBytes(shapes.input, m_storage)));
    float* shadowRegion = nullptr;
    if (!plain) {
        m_inputFp32 = static_cast<float*>(m_arena->take(static_cast<size_t>(shapes.input.bytes())));
        m_fetchFp32 = static_cast<float*>(m_arena->take(std::max<size_t>(fetchFloats, 1) * 4));
        shadowRegion = shadowFloats ? static_cast<float*>(m_arena->take(shadowFloats * 4)) : nullptr;
    }
    for (size_t i = 0; i < n; ++i) {
        LayerState& s = m_layers[i];
        const Layer& l = m_net.layers[i];
        // A kind with weights (conv, linear, prelu's slopes) whose tensors were never made would hand a kernel a
        // null pointer: refuse it here, naming the layer, instead of faulting the device.
        if ((layerKind(l.spec).needs & kNeedsWeights) && !l.weight)
            throw InputError(m_backend + "." + m_algorithm + ": layer " + std::to_string(i) + " (" + l.name + ", "
                + layerTypeName(l.spec) + "): its weights are not materialised");
        s.out = s.view ? static_cast<float*>(const_cast<void*>(inputData(i)))
                       : static_cast<float*>(m_arena->take(storedBytes(shapes.layers[i].out, m_storage)));
        s.weight = upload(*m_arena, l.weight, stream);
        if (typedWeight(i)) {
            void* w = m_arena->take(static_cast<size_t>(l.weight->numel()) * dtypeBytes(m_storage.dtype));
            convertValues(s.weight, w, l.weight->numel(), m_storage.dtype, stream);
            s.weightData = w;
        }
        if (!s.inStorage) {
            // The shared region: this layer's FP32 output, then its inputs.
            float* p = shadowRegion;
            s.shadowOut = p;
            p += DeviceArena::alignUp(static_cast<size_t>(shapes.layers[i].out.numel()) * 4) / 4;
            for (size_t k = 0; k < inputCount(i); ++k) {
                s.shadowIn.push_back(p);
                p += DeviceArena::alignUp(static_cast<size_t>(sourceShape(i, k).numel()) * 4) / 4;
            }
            s.storageNote = "its FP32 NCHW kernel on FP32 copies of the " + m_storage.str()
                + " tensors (both conversions timed with the layer)";
        }
        if (s.permuteFlatten)
            s.note = "permuted from channels-last to NCHW order, PyTorch's flatten order (" + m_storage.str() + ")";
        s.bias = upload(*m_arena, l.bias, stream);
        s.mean = upload(*m_arena, l.runningMean, stream);
        s.var = upload(*m_arena, l.runningVar, stream);
        s.scratch = s.scratchBytes ? m_arena->take(s.scratchBytes) : nullptr;
        s.rangeName = m_backend + "." + m_algorithm + " · " + layerLabel(i, l.spec, shapes.layers[i]);
        if (s.view)
            s.note = std::holds_alternative<Flatten>(l.spec) || std::holds_alternative<Reshape>(l.spec)
                ? "view of its input (no copy, no launch)"
                : "nothing at inference: a view of its input (no launch)";
    }
    for (size_t i = 0; i < n; ++i)
        if (!m_layers[i].view)
            prepareLayer(i, stream);

    m_stagingIn.reserve(static_cast<size_t>(shapes.input.bytes())); // FP32: the host's input
    m_stagingOut.reserve(n ? static_cast<size_t>(shapes.layers.back().out.bytes()) : 0);
    m_events.clear();
    for (size_t k = 0; k < n + 3; ++k)
        m_events.emplace_back();

    // Warm-up pass on a zero input: loads every kernel's module and pays first-launch costs here, untimed.
    CONVSCOPE_CUDA_CHECK(cudaMemsetAsync(m_input, 0, storedBytes(shapes.input, m_storage), stream));
    {
        nvtx::Range range(m_backend + "." + m_algorithm + " · prepare (warm-up pass)", m_backend);
        enqueueLayers(stream, nullptr);
    }
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (m_graphMode)
        captureGraph(stream);
    m_prepared = true;
}

namespace {
    // Captures what `enqueue` puts on `stream` into an instantiated graph; a failure to capture or instantiate is
    // UnsupportedError naming the session.
    cudaGraphExec_t capture(cudaStream_t stream, const std::string& who, const std::function<void()>& enqueue)
    {
        CONVSCOPE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        cudaGraph_t graph = nullptr;
        try {
            enqueue();
        } catch (const std::exception& e) {
            (void)cudaStreamEndCapture(stream, &graph);
            if (graph)
                (void)cudaGraphDestroy(graph);
            (void)cudaGetLastError();
            throw UnsupportedError(who + ": graph mode: a layer could not be captured into a CUDA Graph: " + e.what());
        }
        CONVSCOPE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
        cudaGraphExec_t exec = nullptr;
        const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
        (void)cudaGraphDestroy(graph);
        if (inst != cudaSuccess) {
            (void)cudaGetLastError();
            throw UnsupportedError(who + ": graph mode: cudaGraphInstantiate failed: " + cudaGetErrorString(inst));
        }
        // The first replay uploads the graph to the device: untimed, like the warm-up pass.
        CONVSCOPE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream));
        return exec;
    }
} // namespace

void GpuSessionBase::captureGraph(cudaStream_t stream)
{
    for (cudaGraphExec_t* g : { &m_graph, &m_leanGraph })
        if (*g) {
            CONVSCOPE_CUDA_CHECK(cudaGraphExecDestroy(*g));
            *g = nullptr;
        }
    m_leanPassMs.clear();
    const std::string who = m_backend + "." + m_algorithm;
    nvtx::Range range(who + " · capture CUDA Graph", m_backend);
    m_graph = capture(stream, who, [&] {
        // The layers start here: after the H2D copy, which stays outside, and the graph's own start (launch_gate.h).
        queueEngineHandoff(stream);
        m_events[1].recordExternal(stream);
        enqueueLayers(stream, &m_events, true);
    });
    m_leanGraph = capture(stream, who, [&] { enqueueLayers(stream, nullptr); });
    for (auto& l : m_layers)
        l.note += std::string(l.note.empty() ? "" : "; ") + "replayed from a CUDA Graph";
}

void GpuSessionBase::enqueueLayers(cudaStream_t stream, std::vector<CudaEvent>* marks, bool externalMarks)
{
    for (size_t i = 0; i < m_layers.size(); ++i) {
        nvtx::Range range(m_layers[i].rangeName, m_backend);
        if (!m_layers[i].view) {
            runOneLayer(i, stream);
            CONVSCOPE_CUDA_CHECK_LAUNCH(m_layers[i].rangeName.c_str());
        }
        if (marks && externalMarks)
            (*marks)[i + 2].recordExternal(stream);
        else if (marks)
            (*marks)[i + 2].record(stream);
    }
}

void GpuSessionBase::runOneLayer(size_t i, cudaStream_t stream)
{
    LayerState& s = m_layers[i];
    if (s.permuteFlatten) {
        channelsLastToNchw(inputData(i), s.out, sourceShape(i, 0), m_storage.dtype, stream);
        return;
    }
    if (s.inStorage) {
        runLayer(i, stream);
        return;
    }
    for (size_t k = 0; k < s.shadowIn.size(); ++k)
        fromStorage(inputData(i, k), s.shadowIn[k], sourceShape(i, k), m_storage, stream);
    runLayer(i, stream);
    toStorage(s.shadowOut, s.out, m_shapes.layers[i].out, m_storage, stream);
}

PassTiming GpuSessionBase::runPass(const Tensor& in)
{
    if (!m_prepared)
        throw Error("internal error: runPass before prepare");
    requireUsable();
    makeCurrent();
    if (in.numel() != m_shapes.input.numel())
        throw InputError("input " + in.shape().str() + " does not match the network input " + m_shapes.input.str());
    const size_t n = m_layers.size();
    cudaStream_t stream = m_stream->get();
    nvtx::Range passRange(m_backend + "." + m_algorithm + " · pass", m_backend);

    if (m_poisonOutputs)
        for (size_t i = 0; i < n; ++i)
            if (!m_layers[i].view)
                CONVSCOPE_CUDA_CHECK(
                    cudaMemsetAsync(m_layers[i].out, 0xFF, storedBytes(m_shapes.layers[i].out, m_storage), stream));

    // Host-side staging into page-locked memory happens before the first event: it is a host memcpy, and the
    // pinned buffer is what makes the timed device copy asynchronous and full-speed.
    const size_t inBytes = static_cast<size_t>(in.numel()) * sizeof(float);
    std::memcpy(m_stagingIn.floats(), in.data(), inBytes);

    // Everything from here to the last event is queued behind the gate and released at once (launch_gate.h).
    GateHold gate(gateForPass(), stream);
    m_events[0].record(stream);
    {
        nvtx::Range range(m_backend + "." + m_algorithm + " · H2D input", m_backend);
        if (m_storage.plainFp32()) {
            CONVSCOPE_CUDA_CHECK(
                cudaMemcpyAsync(m_input, m_stagingIn.floats(), inBytes, cudaMemcpyHostToDevice, stream));
        } else {
            // Converted once, on the device, inside the timed H2D step (compute/storage_format.h).
            CONVSCOPE_CUDA_CHECK(
                cudaMemcpyAsync(m_inputFp32, m_stagingIn.floats(), inBytes, cudaMemcpyHostToDevice, stream));
            toStorage(m_inputFp32, m_input, m_shapes.input, m_storage, stream);
        }
    }
    if (m_graph) {
        injectPassFault(m_fault, m_backend + "." + m_algorithm, stream);
        // The graph queues its own handoff kernel before event 1 (captureGraph).
        nvtx::Range range(m_backend + "." + m_algorithm + " · CUDA Graph launch", m_backend);
        CONVSCOPE_CUDA_CHECK(cudaGraphLaunch(m_graph, stream)); // records events 1 .. n+1 itself
    } else {
        queueEngineHandoff(stream);
        m_events[1].record(stream);
        injectPassFault(m_fault, m_backend + "." + m_algorithm, stream);
        enqueueLayers(stream, &m_events);
    }
    const size_t outBytes = n ? static_cast<size_t>(m_shapes.layers.back().out.bytes()) : 0;
    {
        nvtx::Range range(m_backend + "." + m_algorithm + " · D2H output", m_backend);
        if (n)
            CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(
                m_stagingOut.floats(), fp32Output(n - 1, stream), outBytes, cudaMemcpyDeviceToHost, stream));
    }
    m_events[n + 2].record(stream);
    gate.open();
    // One synchronisation per pass; a kernel fault surfaces here (and poisons the backend if it is sticky).
    CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(m_events[n + 2].get()));
    checkGate();
    if (m_leanGraph) {
        // The same layers once more without event nodes, timed as a whole (after the pass, on its output), the
        // graph launch itself queued behind the gate too.
        CudaEvent start, stop;
        GateHold leanGate(gateForPass(), stream);
        start.record(stream);
        CONVSCOPE_CUDA_CHECK(cudaGraphLaunch(m_leanGraph, stream));
        stop.record(stream);
        leanGate.open();
        CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        checkGate();
        m_leanPassMs.push_back(elapsedMs(start, stop));
    }

    PassTiming t;
    t.h2dMs = elapsedMs(m_events[0], m_events[1]);
    t.layerMs.resize(n);
    for (size_t i = 0; i < n; ++i)
        t.layerMs[i] = elapsedMs(m_events[i + 1], m_events[i + 2]);
    t.d2hMs = elapsedMs(m_events[n + 1], m_events[n + 2]);
    return t;
}

LaunchGate* GpuSessionBase::gateForPass() const
{
    // The driver's queue holds on the order of a thousand launches; a pass that long is not launch-bound anyway.
    constexpr size_t kMaxGatedLayers = 128;
    return m_gate && m_layers.size() <= kMaxGatedLayers ? m_gate.get() : nullptr;
}

void GpuSessionBase::checkGate()
{
    if (m_gate && m_gate->timedOut()) {
        m_gate.reset();
        m_gateState = "off: the gate timed out (100 ms) because the host waited on the GPU while queuing a pass; later "
                      "passes ran without it";
    }
}

Tensor GpuSessionBase::fetchOutput(size_t layer, double* ms)
{
    if (!m_prepared || layer >= m_layers.size())
        throw Error("internal error: fetchOutput(" + std::to_string(layer) + ") out of range or before prepare");
    requireUsable();
    makeCurrent();
    const Shape& shape = m_shapes.layers[layer].out;
    Tensor out(shape);
    const size_t bytes = static_cast<size_t>(shape.bytes());
    PinnedBuffer& staging = m_stagingOut;
    staging.reserve(bytes);
    cudaStream_t stream = m_stream->get();
    nvtx::Range range(m_backend + "." + m_algorithm + " · fetch L" + std::to_string(layer), m_backend);
    CudaEvent start, stop;
    start.record(stream);
    CONVSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(staging.floats(), fp32Output(layer, stream), bytes, cudaMemcpyDeviceToHost, stream));
    stop.record(stream);
    CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    if (ms)
        *ms = elapsedMs(start, stop);
    std::memcpy(out.data(), staging.floats(), bytes);
    return out;
}

const float* GpuSessionBase::fp32Output(size_t layer, cudaStream_t stream)
{
    if (m_storage.plainFp32())
        return m_layers[layer].out;
    fromStorage(m_layers[layer].out, m_fetchFp32, m_shapes.layers[layer].out, m_storage, stream);
    return m_fetchFp32;
}

std::string GpuSessionBase::layerNote(size_t layer) const
{
    if (layer >= m_layers.size())
        return {};
    const LayerState& s = m_layers[layer];
    return s.note + (s.note.empty() || s.storageNote.empty() ? "" : "; ") + s.storageNote;
}

std::map<std::string, std::string> GpuSessionBase::metadata() const
{
    auto meta = deviceInfo();
    meta.merge(gpuClocks()); // sampled now, after the timed passes: the clocks the run left the GPU at
    meta["backend"] = m_backend;
    meta["algorithm"] = m_algorithm;
    meta["math"] = mathModeName(m_options.math);
    meta["storage"] = m_storage.str()
        + (m_storage.plainFp32() ? "" : " on the device; FP32 NCHW on the host (converted on the device)");
    meta["timing"] = "CUDA events around each phase on one stream; one synchronisation per pass";
    meta["launch"] = m_graph ? "CUDA Graph: the layers captured once at prepare, one cudaGraphLaunch per pass"
                             : "eager: one launch per kernel";
    meta["launch_gate"] = m_gate && !gateForPass() ? "off: more than 128 layers" : m_gateState;
    if (m_arena)
        meta["device_memory_planned"] = mib(m_arena->used());
    if (!m_leanPassMs.empty()) {
        std::vector<double> v = m_leanPassMs;
        std::sort(v.begin(), v.end());
        const double medianUs = 1000.0 * v[v.size() / 2];
        size_t launched = 0;
        for (const auto& l : m_layers)
            launched += l.view ? 0 : 1;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.2f", medianUs);
        meta["graph_pass_us"] = buf;
        std::snprintf(buf, sizeof buf, "%.2f", launched ? medianUs / double(launched) : 0.0);
        meta["graph_layer_us"] = buf;
        meta["graph_layers"] = std::to_string(launched);
    }
    for (auto& [k, v] : extraMetadata())
        meta[k] = v;
    return meta;
}

} // namespace convscope::gpu
