// The cudnn training session's convolution algorithms (training_layers.h): forward, backward-data and backward-
// filter each chosen once in prepare by cudnnFind*Algorithm (measured on this device, this layer's shapes, three
// times), the result with the least median time that ran in the session's math within the workspace limit; a pinned
// forward algorithm is taken as given. Each runs in the math type Find measured it in (TrainLayer::fwdMath, ...), with
// the larger of Find's workspace and cudnnGet*WorkspaceSize's for it.
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/training_layers.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace convscope::cudnn {

namespace {
    // The first acceptable result of a cudnnFind*Algorithm: it ran within the limit, in FP32 FMA math (no TF32), or
    // under --math tf32 (and in mixed precision) also on Tensor Cores (CUDNN_DEFAULT_MATH or CUDNN_TENSOR_OP_MATH;
    // never ..._ALLOW_CONVERSION, which on FP32 data may round to FP16).
    template <typename Perf> const Perf* firstUsable(const Perf* results, int count, size_t limit, bool tensorCores)
    {
        for (int k = 0; k < count; ++k) {
            const cudnnMathType_t m = results[k].mathType;
            const bool math
                = m == CUDNN_FMA_MATH || (tensorCores && (m == CUDNN_DEFAULT_MATH || m == CUDNN_TENSOR_OP_MATH));
            if (results[k].status == CUDNN_STATUS_SUCCESS && math && results[k].memory <= limit)
                return &results[k];
        }
        return nullptr;
    }

    // One cudnnFind*Algorithm (`find(count, &returned, results)`) and the first usable result: its math type set on the
    // descriptor, the workspace raised to the larger of Find's figure and cudnnGet*WorkspaceSize's for it
    // (`size(algo, &bytes)`) in that math. Find explores the math types the descriptor allows, so it is first set to
    // the session's (`math`): the previous search left the math it chose there, and a forward that picked FMA made the
    // next search try only FMA (ResNet-18's bf16 stem then took 15.7 ms for its weight gradient instead of 0.4).
    //
    // Find times each algorithm once, and that one time misled it on the H200: ResNet-18's bf16 training took an
    // algorithm for layer4.0.conv1's forward that ran in 0.357 ms where fp16's took 0.041, and two other layers lost
    // 0.1–0.2 ms each, differently from run to run (module loading and clock noise land on a single measurement). So
    // Find runs kFindRuns times and each (algorithm, math type) is ranked by the median of its times; the first run
    // also loads the candidates' kernels. Untimed prepare work: about a second on ResNet-18.
    constexpr int kFindRuns = 3;

    template <typename Perf, int Count, typename Find, typename Size>
    Perf findAlgorithm(Find&& find, Size&& size, ConvDesc& cd, cudnnMathType_t math, size_t limit, bool tensorCores,
        size_t& workspace, const std::function<UnsupportedError()>& none)
    {
        Perf runs[kFindRuns][Count];
        int returned[kFindRuns] = {};
        for (int r = 0; r < kFindRuns; ++r) {
            cd.setMath(math);
            CONVSCOPE_CUDNN_CHECK(find(Count, &returned[r], runs[r]));
        }
        const auto medianTime = [&](const Perf& q) {
            float times[kFindRuns];
            for (int r = 0; r < kFindRuns; ++r) {
                times[r] = std::numeric_limits<float>::infinity(); // absent or failed in that run
                for (int k = 0; k < returned[r]; ++k)
                    if (runs[r][k].algo == q.algo && runs[r][k].mathType == q.mathType
                        && runs[r][k].status == CUDNN_STATUS_SUCCESS)
                        times[r] = std::min(times[r], runs[r][k].time);
            }
            std::sort(times, times + kFindRuns);
            return times[kFindRuns / 2];
        };
        const Perf* p = nullptr;
        float best = std::numeric_limits<float>::infinity();
        const Perf* last = runs[kFindRuns - 1];
        for (int k = 0; k < returned[kFindRuns - 1]; ++k) {
            const Perf* q = firstUsable(last + k, 1, limit, tensorCores);
            if (!q)
                continue;
            if (const float t = medianTime(*q); !p || t < best) {
                p = q;
                best = t;
            }
        }
        if (!p)
            throw none();
        cd.setMath(p->mathType);
        size_t bytes = 0;
        if (size(p->algo, &bytes) != CUDNN_STATUS_SUCCESS) // Find ran it: its own figure stands
            bytes = 0;
        workspace = std::max({ workspace, p->memory, bytes });
        return *p;
    }
} // namespace

void CudnnTrainingSession::chooseConvAlgorithms(size_t i, cudnnHandle_t h)
{
    TrainLayer& t = m_layers[i];
    const std::string who = m_prefix + ": " + trainLayerLabel(m_net, i);
    const auto none = [&](const char* what) {
        return UnsupportedError(who + ": cuDNN has no " + mathWords() + " " + what
            + " algorithm for it within the workspace limit of " + gpu::mib(m_workspaceLimit)
            + " (--option workspace_limit=BYTES)");
    };
    std::string note;
    const auto fail
        = [&](const char* what) { return std::function<UnsupportedError()>([&none, what] { return none(what); }); };
    if (m_pinned && std::holds_alternative<Conv2d>(m_net.layers[i].spec)) {
        size_t bytes = 0;
        const cudnnStatus_t status = cudnnGetConvolutionForwardWorkspaceSize(
            h, t.xd->get(), t.wd->get(), t.cd->get(), t.yd->get(), *m_pinned, &bytes);
        if (status != CUDNN_STATUS_SUCCESS)
            throw UnsupportedError(who + ": cuDNN cannot run the pinned algorithm " + m_algorithm
                + " for this convolution: " + reason(status));
        t.fwdAlgo = *m_pinned;
        t.fwdMath = convMath();
        m_workspaceBytes = std::max(m_workspaceBytes, bytes);
        note = "forward " + m_algorithm + " (pinned)";
    } else {
        const auto p = findAlgorithm<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
            [&](int count, int* returned, cudnnConvolutionFwdAlgoPerf_t* r) {
                return cudnnFindConvolutionForwardAlgorithm(
                    h, t.xd->get(), t.wd->get(), t.cd->get(), t.yd->get(), count, returned, r);
            },
            [&](cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
                return cudnnGetConvolutionForwardWorkspaceSize(
                    h, t.xd->get(), t.wd->get(), t.cd->get(), t.yd->get(), algo, bytes);
            },
            *t.cd, convMath(), m_workspaceLimit, tensorCores(), m_workspaceBytes, fail("forward"));
        t.fwdAlgo = p.algo;
        t.fwdMath = p.mathType;
        note = "forward " + algorithmName(p.algo) + " (cudnnFind)";
    }
    const auto pd = findAlgorithm<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
        [&](int count, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* r) {
            return cudnnFindConvolutionBackwardDataAlgorithm(
                h, t.wd->get(), t.yd->get(), t.cd->get(), t.xd->get(), count, returned, r);
        },
        [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(
                h, t.wd->get(), t.yd->get(), t.cd->get(), t.xd->get(), algo, bytes);
        },
        *t.cd, convMath(), m_workspaceLimit, tensorCores(), m_workspaceBytes, fail("backward-data"));
    t.bwdDataAlgo = pd.algo;
    t.bwdDataMath = pd.mathType;
    const auto pf = findAlgorithm<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
        [&](int count, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* r) {
            return cudnnFindConvolutionBackwardFilterAlgorithm(
                h, t.xd->get(), t.yd->get(), t.cd->get(), t.wd->get(), count, returned, r);
        },
        [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                h, t.xd->get(), t.yd->get(), t.cd->get(), t.wd->get(), algo, bytes);
        },
        *t.cd, convMath(), m_workspaceLimit, tensorCores(), m_workspaceBytes, fail("backward-filter"));
    t.bwdFilterAlgo = pf.algo;
    t.bwdFilterMath = pf.mathType;
    t.note = note + ", backward-data " + bwdDataAlgorithmName(pd.algo) + ", backward-filter algo_"
        + std::to_string(int(pf.algo)) + " (cudnnFind), "
        + (mixed()       ? std::string(dtypeName(m_storage)) + " Tensor Core math"
                : tf32() ? "TF32 allowed"
                         : "FMA math");
}

} // namespace convscope::cudnn
