// The algorithm explorer for a conv3d layer: every cuDNN forward algorithm on the layer's Nd descriptors with its
// status (or cuDNN's reason it cannot run this convolution), its time, workspace, determinism and math — the same
// document explorer.cpp writes for conv2d (the window's explorer page and `convscope-cli algos` read both), with the
// kernel, stride and dilation as three numbers and the padding as six. Two timings per algorithm, as there: cuDNN's
// Find and ours (median of several runs between CUDA events with the algorithm pinned). The graph API row of conv2d
// is left out: its engine search there is written for 4-D tensors.
#include "kernels/cudnn/volume_plan.h"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/device_info.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace convscope::cudnn {

namespace {
    constexpr int kTimedRuns = 10;
} // namespace

std::string exploreConvolution3d(
    const Network& net, const ShapeReport& shapes, size_t index, const SessionOptions& options)
{
    if (index >= net.layers.size() || index >= shapes.layers.size())
        throw InputError("explore: layer " + std::to_string(index) + " does not exist");
    const auto* spec = std::get_if<Conv3d>(&net.layers[index].spec);
    if (!spec)
        return {};
    const LayerShape& shape = shapes.layers[index];
    if (!shape.ok)
        throw InputError("layer " + std::to_string(index) + " (" + net.layers[index].name + "): " + shape.error);
    gpu::requireUsable();
    gpu::selectDevice();
    const ConvOptions o = convOptions(options);
    const Conv3dLayout l = conv3dLayout(*spec, shape);
    Handles& h = threadHandles();
    gpu::CudaStream stream;
    CONVSCOPE_CUDNN_CHECK(cudnnSetStream(h.cudnn, stream.get()));
    struct StreamReset {
        cudnnHandle_t handle;
        ~StreamReset() { (void)cudnnSetStream(handle, nullptr); }
    } resetStream { h.cudnn };

    Conv3dDescriptors d;
    describe(l, mathTypeFor(o.math), d);
    gpu::DeviceBuffer x(size_t(l.n) * l.cin * l.pd * l.ph * l.pw * sizeof(float), "explorer input");
    gpu::DeviceBuffer w(size_t(l.cout) * (l.cin / l.groups) * l.kernel[0] * l.kernel[1] * l.kernel[2] * sizeof(float),
        "explorer weights");
    gpu::DeviceBuffer y(size_t(l.n) * l.cout * l.out[0] * l.out[1] * l.out[2] * sizeof(float), "explorer output");
    const float half = 0.5f, small = 0.01f;
    CONVSCOPE_CUDNN_CHECK(cudnnSetTensor(h.cudnn, d.x.get(), x.get(), &half));
    {
        TensorDesc flat;
        flat.set(CUDNN_TENSOR_NCHW, 1, 1, 1, int(w.bytes() / sizeof(float)));
        CONVSCOPE_CUDNN_CHECK(cudnnSetTensor(h.cudnn, flat.get(), w.get(), &small));
    }

    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT * 2);
    int returned = 0;
    {
        gpu::DeviceBuffer findWs = findWorkspace(o.workspaceLimit);
        CONVSCOPE_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(h.cudnn, d.x.get(), x.get(), d.w.get(), w.get(),
            d.conv.get(), d.y.get(), y.get(), int(perf.size()), &returned, perf.data(), findWs.get(), findWs.bytes()));
    }
    perf.resize(size_t(std::max(returned, 0)));

    nlohmann::json doc;
    doc["layer"] = index;
    doc["name"] = net.layers[index].name;
    doc["type"] = "conv3d";
    doc["input"] = shape.in.str();
    doc["output"] = shape.out.str();
    doc["kernel"] = l.kernel;
    doc["stride"] = l.stride;
    doc["dilation"] = l.dilation;
    doc["padding"] = { l.pad.front, l.pad.back, l.pad.top, l.pad.bottom, l.pad.left, l.pad.right };
    doc["groups"] = l.groups;
    doc["pad_step"] = l.padStep;
    doc["math"] = mathModeName(o.math);
    doc["layout"] = "ncdhw";
    doc["workspace_limit_bytes"] = o.workspaceLimit;
    doc["cudnn"] = cudnnVersionString();
    doc["timed_runs"] = kTimedRuns;

    nlohmann::json find = nlohmann::json::array();
    for (const auto& p : perf)
        find.push_back({ { "algorithm", algorithmName(p.algo) }, { "status", cudnnGetErrorString(p.status) },
            { "time_ms", p.status == CUDNN_STATUS_SUCCESS ? nlohmann::json(p.time) : nlohmann::json() },
            { "workspace_bytes", p.memory }, { "deterministic", p.determinism == CUDNN_DETERMINISTIC ? "yes" : "no" },
            { "math", mathTypeName(p.mathType) } });
    doc["find"] = find;

    nlohmann::json algos = nlohmann::json::array();
    gpu::CudaEvent start, stop;
    for (const auto& a : algorithmNames()) {
        if (std::string(a.name) == "auto")
            continue;
        nlohmann::json e;
        e["algorithm"] = a.name;
        d.conv.setMath(mathTypeFor(o.math));
        size_t wsBytes = 0;
        const cudnnStatus_t st = cudnnGetConvolutionForwardWorkspaceSize(
            h.cudnn, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), a.algo, &wsBytes);
        const cudnnConvolutionFwdAlgoPerf_t* fp = nullptr;
        for (const auto& p : perf)
            if (p.algo == a.algo && p.status == CUDNN_STATUS_SUCCESS) {
                fp = &p;
                break;
            }
        if (fp) {
            e["find_ms"] = fp->time;
            e["deterministic"] = fp->determinism == CUDNN_DETERMINISTIC ? "yes" : "no";
        }
        e["math"] = mathTypeName(mathTypeFor(o.math));
        if (st != CUDNN_STATUS_SUCCESS) {
            e["status"] = "unsupported";
            e["reason"] = reason(st);
            algos.push_back(e);
            continue;
        }
        e["workspace_bytes"] = wsBytes;
        if (wsBytes > o.workspaceLimit) {
            e["status"] = "over_limit";
            e["reason"]
                = "needs " + gpu::mib(wsBytes) + " of workspace, more than the limit of " + gpu::mib(o.workspaceLimit);
            algos.push_back(e);
            continue;
        }
        gpu::DeviceBuffer ws;
        try {
            if (wsBytes)
                ws = gpu::DeviceBuffer(wsBytes, "explorer workspace for " + std::string(a.name));
        } catch (const OutOfMemoryError& ex) {
            e["status"] = "out_of_memory";
            e["reason"] = ex.what();
            algos.push_back(e);
            continue;
        }
        const float one = 1.0f, zero = 0.0f;
        auto run = [&] {
            return cudnnConvolutionForward(h.cudnn, &one, d.x.get(), x.get(), d.w.get(), w.get(), d.conv.get(), a.algo,
                ws.get(), wsBytes, &zero, d.y.get(), y.get());
        };
        const cudnnStatus_t first = run();
        if (first != CUDNN_STATUS_SUCCESS) {
            e["status"] = "failed";
            e["reason"] = reason(first);
            algos.push_back(e);
            continue;
        }
        std::vector<double> times;
        for (int r = 0; r < kTimedRuns; ++r) {
            start.record(stream.get());
            CONVSCOPE_CUDNN_CHECK(run());
            stop.record(stream.get());
            CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
            times.push_back(gpu::elapsedMs(start, stop));
        }
        std::sort(times.begin(), times.end());
        e["status"] = "ok";
        e["time_ms"] = 0.5 * (times[(times.size() - 1) / 2] + times[times.size() / 2]);
        e["min_ms"] = times.front();
        algos.push_back(e);
    }
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    // cudnn.auto's choice for this layer, by the same rule the session uses (volume_plan.h).
    std::string autoChoice;
    try {
        gpu::DeviceBuffer out(y.bytes(), "explorer output");
        const Conv3dChoice c = chooseConv3d(h.cudnn, l, d, o, std::nullopt, x.get(), w.get(), out.get(), stream.get());
        autoChoice = algorithmName(c.algo);
    } catch (const Error&) {
        // nothing runs: every row above says why
    }
    for (auto& e : algos)
        e["auto_choice"] = e["algorithm"].get<std::string>() == autoChoice;
    doc["auto_choice"] = autoChoice;
    doc["algorithms"] = algos;
    return doc.dump();
}

} // namespace convscope::cudnn
