#include "kernels/cudnn/explorer_support.h"

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_info.h"
#include "kernels/common/storage_convert.cuh"

#include <algorithm>

namespace convscope::cudnn {

void fillConstant(const ExplorerStream& stream, void* dst, size_t n, float value, DType type)
{
    gpu::DeviceBuffer f32(n * sizeof(float), "explorer constants");
    TensorDesc flat;
    flat.set(CUDNN_TENSOR_NCHW, 1, 1, 1, int(n));
    CONVSCOPE_CUDNN_CHECK(cudnnSetTensor(stream.handle(), flat.get(), f32.get(), &value));
    gpu::convertValues(f32.floats(), dst, int64_t(n), type, stream.get());
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
}

namespace {
    std::string determinismName(cudnnDeterminism_t d) { return d == CUDNN_DETERMINISTIC ? "yes" : "no"; }
} // namespace

void requireExplorable(const Network& net, const LayerShape& shape, size_t index)
{
    if (!shape.ok)
        throw InputError("layer " + std::to_string(index) + " (" + net.layers[index].name + "): " + shape.error);
    gpu::requireUsable();
    gpu::selectDevice();
}

ExplorerStream::ExplorerStream()
    : m_handle(threadHandles().cudnn)
{
    CONVSCOPE_CUDNN_CHECK(cudnnSetStream(m_handle, m_stream.get()));
}

ExplorerStream::~ExplorerStream() { (void)cudnnSetStream(m_handle, nullptr); }

std::vector<cudnnConvolutionFwdAlgoPerf_t> findAll(const ExploredConv& c, const gpu::DeviceBuffer& ws)
{
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT * 2);
    int returned = 0;
    CONVSCOPE_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(c.h, c.d.x.get(), c.x, c.d.w.get(), c.w,
        c.d.conv.get(), c.d.y.get(), c.y, int(perf.size()), &returned, perf.data(), ws.get(), ws.bytes()));
    perf.resize(size_t(std::max(returned, 0)));
    return perf;
}

nlohmann::json findRows(const std::vector<cudnnConvolutionFwdAlgoPerf_t>& perf, const char* dataType)
{
    nlohmann::json find = nlohmann::json::array();
    for (const auto& p : perf) {
        nlohmann::json row { { "algorithm", algorithmName(p.algo) }, { "status", cudnnGetErrorString(p.status) },
            { "time_ms", p.status == CUDNN_STATUS_SUCCESS ? nlohmann::json(p.time) : nlohmann::json() },
            { "workspace_bytes", p.memory }, { "deterministic", determinismName(p.determinism) },
            { "math", mathTypeName(p.mathType) } };
        if (dataType)
            row["data_type"] = dataType;
        find.push_back(row);
    }
    return find;
}

nlohmann::json algorithmRows(const ExploredConv& c, const std::vector<cudnnConvolutionFwdAlgoPerf_t>& perf,
    const ConvOptions& o, const AlgorithmRowsStyle& style)
{
    ConvDescriptors& d = c.d;
    nlohmann::json algos = nlohmann::json::array();
    gpu::CudaEvent start, stop;
    for (const auto& a : algorithmNames()) {
        if (std::string(a.name) == "auto")
            continue;
        nlohmann::json e;
        e["algorithm"] = a.name;
        if (style.dataType)
            e["data_type"] = style.dataType;
        d.conv.setMath(mathTypeFor(o.math));
        size_t wsBytes = 0;
        const cudnnStatus_t st = cudnnGetConvolutionForwardWorkspaceSize(
            c.h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), a.algo, &wsBytes);
        // cuDNN's Find entry for this algorithm (the first, i.e. fastest, when it lists several math types).
        const cudnnConvolutionFwdAlgoPerf_t* fp = nullptr;
        for (const auto& p : perf)
            if (p.algo == a.algo && p.status == CUDNN_STATUS_SUCCESS) {
                fp = &p;
                break;
            }
        if (fp) {
            e["find_ms"] = fp->time;
            e["deterministic"] = determinismName(fp->determinism);
        }
        e["math"] = mathTypeName(fp && style.mathFromFind ? fp->mathType : mathTypeFor(o.math));
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
        auto run = [&] {
            return cudnnConvolutionForward(c.h, &kOne, d.x.get(), c.x, d.w.get(), c.w, d.conv.get(), a.algo, ws.get(),
                wsBytes, &kZero, d.y.get(), c.y);
        };
        const cudnnStatus_t first = run(); // also the warm-up
        if (first != CUDNN_STATUS_SUCCESS) {
            e["status"] = "failed";
            e["reason"] = reason(first);
            algos.push_back(e);
            continue;
        }
        std::vector<double> times;
        for (int r = 0; r < kExplorerTimedRuns; ++r) {
            start.record(c.stream);
            CONVSCOPE_CUDNN_CHECK(run());
            stop.record(c.stream);
            CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
            times.push_back(gpu::elapsedMs(start, stop));
        }
        std::sort(times.begin(), times.end());
        e["status"] = "ok";
        e["time_ms"] = 0.5 * (times[(times.size() - 1) / 2] + times[times.size() / 2]);
        e["min_ms"] = times.front();
        algos.push_back(e);
    }
    CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(c.stream));
    return algos;
}

} // namespace convscope::cudnn
