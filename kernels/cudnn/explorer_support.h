// What the algorithm explorers for conv2d (explorer.cpp) and conv3d (volume_explorer.cpp) share: finding the layer,
// a stream of their own for this thread's handle, cuDNN's Find over every forward algorithm, and the per-algorithm
// table — its status or cuDNN's reason it cannot run, its workspace, Find's time and ours (the median of
// kExplorerTimedRuns between CUDA events with the algorithm pinned, as a pinned selection runs it). What differs by
// rank (descriptors and buffers, the document's padding and layout, the graph API row, how `auto`'s choice is
// worked out) stays in those files.
#pragma once

#include "compute/error.h"
#include "compute/network.h"
#include "compute/shape_inference.h"
#include "kernels/common/device_buffer.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/cudnn_support.h"

#include <nlohmann/json.hpp>

#include <string>
#include <variant>
#include <vector>

namespace convscope::cudnn {

inline constexpr int kExplorerTimedRuns = 10;

// InputError when the layer's shape is an error; then checks a device is usable and selects it.
void requireExplorable(const Network& net, const LayerShape& shape, size_t index);

// Layer `index` as a `Spec`, or null when it is another kind (nothing to explore); InputError when it does not exist
// or its shape is an error.
template <class Spec> const Spec* layerToExplore(const Network& net, const ShapeReport& shapes, size_t index)
{
    if (index >= net.layers.size() || index >= shapes.layers.size())
        throw InputError("explore: layer " + std::to_string(index) + " does not exist");
    const auto* spec = std::get_if<Spec>(&net.layers[index].spec);
    if (spec)
        requireExplorable(net, shapes.layers[index], index);
    return spec;
}

// This thread's cuDNN handle on a stream of the explorer's own; the handle outlives the stream, so it is pointed
// back at the default stream however the explorer is left.
class ExplorerStream {
public:
    ExplorerStream();
    ~ExplorerStream();
    ExplorerStream(const ExplorerStream&) = delete;
    ExplorerStream& operator=(const ExplorerStream&) = delete;
    cudnnHandle_t handle() const { return m_handle; }
    cudaStream_t get() const { return m_stream.get(); }

private:
    cudnnHandle_t m_handle;
    gpu::CudaStream m_stream;
};

// Sets `n` values of `type` at `dst` to `value` (written as FP32 and converted: cudnnSetTensor takes a value of the
// tensor's type), then waits for the stream.
void fillConstant(const ExplorerStream& stream, void* dst, size_t n, float value, DType type);

// The document's opening keys every explorer writes: the layer, its shapes, kernel, stride, dilation, groups and
// the run's math, workspace limit, cuDNN version and timed runs.
template <size_t N>
nlohmann::json explorerDocument(
    const Network& net, size_t index, const LayerShape& shape, const ConvGeometry<N>& g, const ConvOptions& o)
{
    nlohmann::json doc;
    doc["layer"] = index;
    doc["name"] = net.layers[index].name;
    doc["input"] = shape.in.str();
    doc["output"] = shape.out.str();
    doc["kernel"] = g.kernel;
    doc["stride"] = g.stride;
    doc["dilation"] = g.dilation;
    doc["groups"] = g.groups;
    doc["math"] = mathModeName(o.math);
    doc["workspace_limit_bytes"] = o.workspaceLimit;
    doc["cudnn"] = cudnnVersionString();
    doc["timed_runs"] = kExplorerTimedRuns;
    return doc;
}

// One forward convolution set up for exploring: its descriptors and device buffers of the layout's sizes.
struct ExploredConv {
    cudnnHandle_t h;
    cudaStream_t stream;
    ConvDescriptors& d;
    const void* x;
    const void* w;
    void* y;
};

// cuDNN's Find over every forward algorithm, within the workspace `ws`.
std::vector<cudnnConvolutionFwdAlgoPerf_t> findAll(const ExploredConv& c, const gpu::DeviceBuffer& ws);

// The document's "find" table: a row per Find result; each names `dataType` too when it is given.
nlohmann::json findRows(const std::vector<cudnnConvolutionFwdAlgoPerf_t>& perf, const char* dataType);

struct AlgorithmRowsStyle {
    const char* dataType = nullptr; // named in each row when given
    bool mathFromFind = true; // a row's math is Find's for that algorithm (when Find ran it), else the session's
};
// The document's "algorithms" table: a row per pinnable algorithm (algorithmNames() less auto), "unsupported",
// "over_limit", "out_of_memory" or "failed" with the reason, or "ok" with our median and minimum; Find's time and
// determinism where Find ran it. Returns once the stream has finished.
nlohmann::json algorithmRows(const ExploredConv& c, const std::vector<cudnnConvolutionFwdAlgoPerf_t>& perf,
    const ConvOptions& o, const AlgorithmRowsStyle& style);

} // namespace convscope::cudnn
