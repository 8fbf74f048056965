// The algorithm explorer: for one conv2d layer, every cuDNN forward algorithm with its status (or cuDNN's
// reason it cannot run this convolution), its time, its workspace, whether it is deterministic and which math
// it used — the table behind "why did cudnn.auto pick winograd_nonfused here?".
//
// Two timings per algorithm, because they answer different questions: cuDNN's own Find measurement (what
// `auto` decides on, one short measurement each) and ours, the median of several runs between CUDA events with
// the algorithm pinned exactly as a pinned selection runs it. Data is a constant; no algorithm's speed depends
// on the values.
#include "kernels/cudnn/cudnn_session.h"

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/storage_convert.cuh"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/cudnn_support.h"
#include "kernels/cudnn/explorer_support.h"
#include "kernels/cudnn/graph_conv.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace convscope::cudnn {

std::string exploreConvolution(
    const Network& net, const ShapeReport& shapes, size_t index, const SessionOptions& options)
{
    const auto* spec = layerToExplore<Conv2d>(net, shapes, index);
    if (!spec)
        return {};
    const LayerShape& shape = shapes.layers[index];
    const ConvOptions o = convOptions(options);
    // In tf32/fp16/bf16 a session stores tensors channels-last in that format and runs conv2d natively on them
    // (cudnn_session.cpp; asymmetric padding after a pad step, so cuDNN sees the padded input): the explorer times
    // exactly that configuration.
    const StorageFormat storage = gpuStorageFor(o.math);
    const bool native = !storage.plainFp32();
    const ConvLayout l = native ? nativeConvLayout(*spec, shape, storage.dtype) : convLayout(*spec, shape, o.nhwc);
    const size_t elemBytes = dtypeBytes(l.storage);
    ExplorerStream stream;
    const cudnnHandle_t h = stream.handle();

    ConvDescriptors d;
    describe(l, mathTypeFor(o.math), d);
    const size_t xElems = size_t(l.n) * l.cin * l.ph * l.pw;
    const size_t wElems = size_t(l.cout) * (l.cin / l.groups) * l.kernel[0] * l.kernel[1];
    gpu::DeviceBuffer x(xElems * elemBytes, "explorer input");
    gpu::DeviceBuffer w(wElems * elemBytes, "explorer weights");
    gpu::DeviceBuffer y(size_t(l.n) * l.cout * l.out[0] * l.out[1] * elemBytes, "explorer output");
    fillConstant(stream, x.get(), xElems, 0.5f, l.storage);
    fillConstant(stream, w.get(), wElems, 0.01f, l.storage);

    // cuDNN's Find over every algorithm, with as much workspace as the limit allows; the workspace is kept for the
    // graph API row below, which searches within the same workspace.
    const ExploredConv conv { h, stream.get(), d, x.get(), w.get(), y.get() };
    gpu::DeviceBuffer findWs = findWorkspace(o.workspaceLimit);
    const std::vector<cudnnConvolutionFwdAlgoPerf_t> perf = findAll(conv, findWs);

    nlohmann::json doc = explorerDocument(net, index, shape, l, o);
    doc["padding"] = { l.pad.top, l.pad.bottom, l.pad.left, l.pad.right };
    doc["pad_step"] = l.padStep;
    doc["layout"] = native ? "nhwc (native: the session's channels-last storage)" : o.nhwc ? "nhwc" : "nchw";
    doc["data_type"] = cudnnTypeName(l.storage);
    doc["compute_type"] = "CUDNN_DATA_FLOAT";
    doc["find"] = findRows(perf, cudnnTypeName(l.storage));

    std::vector<std::string> candidates; // what chooseAuto re-times: acceptable, within 1.5x of Find's best, ≤ 4
    float bestFind = -1;
    for (const auto& p : perf) {
        const bool mathOk = o.math != MathMode::FP32 || p.mathType == CUDNN_FMA_MATH;
        if (p.status == CUDNN_STATUS_SUCCESS && p.memory <= o.workspaceLimit && mathOk && candidates.size() < 4
            && (bestFind < 0 || p.time <= 1.5f * bestFind)) {
            if (bestFind < 0)
                bestFind = p.time;
            candidates.push_back(algorithmName(p.algo));
        }
    }

    nlohmann::json algos = algorithmRows(conv, perf, o, { cudnnTypeName(l.storage), true });
    // cudnn.auto's rule (conv_plan.cpp): among Find's candidates, the lowest median of our timing.
    std::string autoChoice = candidates.empty() ? std::string() : candidates.front();
    double autoMs = -1;
    for (auto& e : algos) {
        const bool candidate
            = std::find(candidates.begin(), candidates.end(), e["algorithm"].get<std::string>()) != candidates.end();
        if (candidate && e.contains("time_ms") && (autoMs < 0 || e["time_ms"].get<double>() < autoMs)) {
            autoMs = e["time_ms"].get<double>();
            autoChoice = e["algorithm"].get<std::string>();
        }
    }
    // The graph API's fastest engine configuration, which cudnn.auto races against that legacy choice
    // (graph_conv.h). It has no pinned selection of its own. The race here is the convolution alone; a layer
    // with a bias also weighs the bias pass a graph plan cannot fuse, and the layer note says what won.
    if (!o.nhwc || l.native) {
        nlohmann::json e { { "algorithm", "graph_api" }, { "pinnable", false },
            { "math", o.math != MathMode::FP32 ? "tensor cores allowed" : "fma (no tensor-core engines)" },
            { "data_type", cudnnTypeName(l.storage) } };
        try {
            int tried = 0;
            const auto plan
                = GraphConvPlan::tune(h, l, o.math, x.get(), w.get(), y.get(), findWs.get(), findWs.bytes(), &tried);
            if (plan) {
                e["status"] = "ok";
                e["time_ms"] = plan->medianMs();
                e["workspace_bytes"] = plan->workspace();
                e["reason"] = plan->name() + ", fastest of " + std::to_string(tried) + " engine configurations";
                if (autoMs < 0 || plan->medianMs() < autoMs)
                    autoChoice = "graph_api";
            } else {
                e["status"] = "unsupported";
                e["reason"] = "no graph API engine configuration finalized within the workspace limit";
            }
        } catch (const std::exception& ex) {
            (void)cudaGetLastError();
            e["status"] = "failed";
            e["reason"] = ex.what();
        }
        algos.push_back(e);
    }
    for (auto& e : algos)
        e["auto_choice"] = e["algorithm"].get<std::string>() == autoChoice;
    doc["auto_choice"] = autoChoice;
    doc["algorithms"] = algos;
    return doc.dump();
}

} // namespace convscope::cudnn
