#include "kernels/cudnn/graph_conv.h"
#include "kernels/cudnn/graph_api.h"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

// CUDNN_ATTR_OPERATIONGRAPH_HANDLE is marked deprecated by newer cuDNN 9 headers, yet the 9.x libraries this
// module meets (9.19 on the GPU machine) still require it on an operation graph.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace convscope::cudnn {

namespace {
    using graph::Desc;
    using graph::tensor;
    constexpr int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';
    constexpr int kMaxConfigsTried = 16;

    struct EngineInfo {
        int64_t index = -1;
        bool tensorCore = false, downConvert = false;
        std::string traits; // ", winograd", ", fft": what the note should show (Winograd engines are less exact)
    };

    EngineInfo engineInfo(cudnnBackendDescriptor_t config)
    {
        EngineInfo info;
        Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        cudnnBackendDescriptor_t raw = engine.get();
        int64_t n = 0;
        if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw)
            != CUDNN_STATUS_SUCCESS)
            return info;
        cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &info.index);
        std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes {};
        int64_t count = 0;
        if (cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                int64_t(notes.size()), &count, notes.data())
            == CUDNN_STATUS_SUCCESS)
            for (int64_t i = 0; i < std::min<int64_t>(count, int64_t(notes.size())); ++i) {
                info.tensorCore |= notes[size_t(i)] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
                info.downConvert |= notes[size_t(i)] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
                const auto note = notes[size_t(i)];
                if ((note == CUDNN_NUMERICAL_NOTE_WINOGRAD || note == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4
                        || note == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6
                        || note == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13)
                    && info.traits.find("winograd") == std::string::npos)
                    info.traits += ", winograd";
                if (notes[size_t(i)] == CUDNN_NUMERICAL_NOTE_FFT)
                    info.traits += ", fft";
                if (notes[size_t(i)] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE)
                    info.traits += ", tensor cores";
                if (notes[size_t(i)] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)
                    info.traits += ", down-converted inputs";
            }
        return info;
    }

    const char* modeName(cudnnBackendHeurMode_t mode) { return mode == CUDNN_HEUR_MODE_A ? "mode A" : "fallback"; }
} // namespace

struct GraphConvPlan::Impl {
    // Everything the plan was built from stays alive with it.
    std::vector<Desc> keep;
    std::unique_ptr<Desc> config, plan;
    // The variant pack for the last pointers seen.
    mutable std::unique_ptr<Desc> pack;
    mutable std::array<const void*, 4> packPointers {};

    void buildPack(const void* x, const void* w, void* y, void* workspace) const
    {
        pack = std::make_unique<Desc>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
        const std::array<int64_t, 3> uids { kUidX, kUidW, kUidY };
        std::array<void*, 3> pointers { const_cast<void*>(x), const_cast<void*>(w), y };
        pack->set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids.data());
        pack->set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers.data());
        pack->set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
        pack->finalize();
        packPointers = { x, w, y, workspace };
    }
};

GraphConvPlan::~GraphConvPlan() = default;

void GraphConvPlan::execute(cudnnHandle_t h, const void* x, const void* w, void* y, void* workspace) const
{
    if (!m_impl->pack || m_impl->packPointers != std::array<const void*, 4> { x, w, y, workspace })
        m_impl->buildPack(x, w, y, workspace);
    CONVSCOPE_CUDNN_CHECK(cudnnBackendExecute(h, m_impl->plan->get(), m_impl->pack->get()));
}

double medianCallMs(cudaStream_t stream, const std::function<void()>& run, int runs)
{
    gpu::CudaEvent start, stop;
    run(); // warm-up
    std::vector<double> times;
    for (int r = 0; r < runs; ++r) {
        start.record(stream);
        run();
        stop.record(stream);
        CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        times.push_back(gpu::elapsedMs(start, stop));
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

std::shared_ptr<GraphConvPlan> GraphConvPlan::tune(cudnnHandle_t h, const ConvLayout& l, MathMode math, const void* x,
    const void* w, void* y, void* workspace, size_t workspaceBytes, int* tried)
{
    *tried = 0;
    if (l.nhwc && !l.native)
        return nullptr;
    // Native: NHWC tensors and [K, R, S, C/g] filters of the storage type; the compute type stays FLOAT.
    const cudnnDataType_t type = l.dataType();
    std::vector<Desc> keep;
    keep.push_back(tensor(kUidX, { l.n, l.cin, l.ph, l.pw }, type, l.native));
    keep.push_back(tensor(kUidW, { l.cout, l.cin / l.groups, l.kernel[0], l.kernel[1] }, type, l.native));
    keep.push_back(tensor(kUidY, { l.n, l.cout, l.out[0], l.out[1] }, type, l.native));

    Desc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t spatial = 2;
    const std::array<int64_t, 2> pad { l.padStep ? 0 : int64_t(l.pad.top), l.padStep ? 0 : int64_t(l.pad.left) };
    const std::array<int64_t, 2> stride { l.stride[0], l.stride[1] }, dilation { l.dilation[0], l.dilation[1] };
    conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
    conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation.data());
    conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride.data());
    conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad.data());
    conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad.data());
    conv.finalize();

    Desc op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    const float alpha = 1.0f, beta = 0.0f;
    op.setDesc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, keep[0]);
    op.setDesc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, keep[1]);
    op.setDesc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, keep[2]);
    op.setDesc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    op.finalize();

    Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph.setDesc(CUDNN_ATTR_OPERATIONGRAPH_OPS, op);
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    if (!graph.tryFinalize())
        return nullptr;

    cudaStream_t stream = nullptr;
    CONVSCOPE_CUDNN_CHECK(cudnnGetStream(h, &stream));
    std::shared_ptr<GraphConvPlan> best;
    int position = 0;
    for (const cudnnBackendHeurMode_t heurMode : { CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK }) {
        std::vector<std::unique_ptr<Desc>> configs = graph::engineConfigs(graph, heurMode);
        for (size_t i = 0; i < configs.size() && *tried < kMaxConfigsTried; ++i) {
            ++position;
            const EngineInfo info = engineInfo(configs[i]->get());
            // PyTorch's filter: no down-converted inputs on float data (FP32 or TF32 would silently become FP16);
            // in FP32 no tensor cores (on float data they mean TF32). FP16/BF16 data accept both.
            if ((info.downConvert && type == CUDNN_DATA_FLOAT) || (math == MathMode::FP32 && info.tensorCore))
                continue;
            size_t bytes = 0;
            std::unique_ptr<Desc> plan = graph::executionPlan(h, *configs[i], workspaceBytes, &bytes);
            if (!plan)
                continue;
            std::shared_ptr<GraphConvPlan> candidate(new GraphConvPlan());
            candidate->m_impl = std::make_unique<Impl>();
            candidate->m_impl->config = std::move(configs[i]);
            candidate->m_impl->plan = std::move(plan);
            candidate->m_workspace = bytes;
            ++*tried;
            try {
                candidate->m_ms = medianCallMs(stream, [&] { candidate->execute(h, x, w, y, workspace); });
            } catch (const std::exception&) {
                (void)cudaGetLastError(); // this configuration cannot run here: try the next
                continue;
            }
            candidate->m_name = "graph engine " + std::to_string(info.index) + " (" + modeName(heurMode) + " #"
                + std::to_string(position) + info.traits + ")";
            if (!best || candidate->m_ms < best->m_ms)
                best = std::move(candidate);
        }
    }
    if (best) {
        best->m_impl->keep = std::move(keep);
        best->m_impl->keep.push_back(std::move(conv));
        best->m_impl->keep.push_back(std::move(op));
        best->m_impl->keep.push_back(std::move(graph));
    }
    return best;
}

} // namespace convscope::cudnn
