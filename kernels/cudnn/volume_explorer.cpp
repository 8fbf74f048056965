// The algorithm explorer for a conv3d layer: every cuDNN forward algorithm on the layer's Nd descriptors with its
// status (or cuDNN's reason it cannot run this convolution), its time, workspace, determinism and math — the same
// document explorer.cpp writes for conv2d (the window's explorer page and `convscope-cli algos` read both), with the
// kernel, stride and dilation as three numbers and the padding as six. Two timings per algorithm, as there: cuDNN's
// Find and ours (median of several runs between CUDA events with the algorithm pinned). The graph API row of conv2d
// is left out: its engine search there is written for 4-D tensors.
#include "kernels/cudnn/volume_plan.h"

#include "compute/error.h"
#include "kernels/common/device_buffer.h"
#include "kernels/cudnn/explorer_support.h"
#include "kernels/cudnn/storage_ops.h"

#include <nlohmann/json.hpp>

namespace convscope::cudnn {

std::string exploreConvolution3d(
    const Network& net, const ShapeReport& shapes, size_t index, const SessionOptions& options)
{
    const auto* spec = layerToExplore<Conv3d>(net, shapes, index);
    if (!spec)
        return {};
    const LayerShape& shape = shapes.layers[index];
    // In tf32/fp16/bf16 the session runs conv3d natively on its NDHWC storage where cuDNN takes the descriptors
    // (storage_ops.h), else on FP32 copies with onFp32Data's math: the explorer times what the session runs.
    const ConvOptions own = convOptions(options);
    const StorageFormat storage = gpuStorageFor(own.math);
    const bool native = !storage.plainFp32() && runsNatively(LayerSpec(*spec), shape, storage.dtype);
    const ConvOptions o = native ? own : onFp32Data(own);
    const Conv3dLayout l = conv3dLayout(*spec, shape, native ? std::optional<DType>(storage.dtype) : std::nullopt);
    const size_t eb = dtypeBytes(l.storage);
    ExplorerStream stream;
    const cudnnHandle_t h = stream.handle();

    Conv3dDescriptors d;
    describe(l, mathTypeFor(o.math), d);
    const size_t xElems = size_t(l.n) * l.cin * l.pd * l.ph * l.pw;
    const size_t wElems = size_t(l.cout) * (l.cin / l.groups) * l.kernel[0] * l.kernel[1] * l.kernel[2];
    gpu::DeviceBuffer x(xElems * eb, "explorer input");
    gpu::DeviceBuffer w(wElems * eb, "explorer weights");
    gpu::DeviceBuffer y(size_t(l.n) * l.cout * l.out[0] * l.out[1] * l.out[2] * eb, "explorer output");
    fillConstant(stream, x.get(), xElems, 0.5f, l.storage);
    fillConstant(stream, w.get(), wElems, 0.01f, l.storage);

    const ExploredConv conv { h, stream.get(), d, x.get(), w.get(), y.get() };
    const std::vector<cudnnConvolutionFwdAlgoPerf_t> perf
        = findAll(conv, findWorkspace(o.workspaceLimit)); // the workspace is freed before the timing below

    nlohmann::json doc = explorerDocument(net, index, shape, l, o);
    doc["type"] = "conv3d";
    doc["padding"] = { l.pad.front, l.pad.back, l.pad.top, l.pad.bottom, l.pad.left, l.pad.right };
    doc["pad_step"] = l.padStep;
    doc["layout"] = native ? "ndhwc (native: the session's channels-last storage)" : "ncdhw";
    doc["find"] = findRows(perf, nullptr);

    nlohmann::json algos = algorithmRows(conv, perf, o, { nullptr, false });
    // cudnn.auto's choice for this layer, by the same rule the session uses (volume_plan.h).
    std::string autoChoice;
    try {
        gpu::DeviceBuffer out(y.bytes(), "explorer output");
        const Conv3dChoice c = chooseConv3d(h, l, d, o, std::nullopt, x.get(), w.get(), out.get(), stream.get());
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
