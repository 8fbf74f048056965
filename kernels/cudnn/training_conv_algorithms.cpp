// The cudnn training session's convolution algorithms (training_layers.h): forward, backward-data and backward-
// filter each chosen once in prepare by cudnnFind*Algorithm (measured on this device, this layer's shapes), the first
// result that ran in the session's math within the workspace limit; a pinned forward algorithm is taken as given. Each
// runs in the math type Find measured it in (TrainLayer::fwdMath, ...), with the larger of Find's workspace and
// cudnnGet*WorkspaceSize's for it.
#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/training_layers.h"

#include <algorithm>

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
        cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int n = 0;
        CONVSCOPE_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(
            h, t.xd->get(), t.wd->get(), t.cd->get(), t.yd->get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, r));
        const auto* p = firstUsable(r, n, m_workspaceLimit, tensorCores());
        if (!p)
            throw none("forward");
        t.fwdAlgo = p->algo;
        t.fwdMath = p->mathType;
        t.cd->setMath(t.fwdMath);
        size_t bytes = 0;
        CONVSCOPE_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            h, t.xd->get(), t.wd->get(), t.cd->get(), t.yd->get(), p->algo, &bytes));
        m_workspaceBytes = std::max({ m_workspaceBytes, p->memory, bytes });
        note = "forward " + algorithmName(p->algo) + " (cudnnFind)";
    }
    cudnnConvolutionBwdDataAlgoPerf_t d[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int nd = 0;
    CONVSCOPE_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(
        h, t.wd->get(), t.yd->get(), t.cd->get(), t.xd->get(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &nd, d));
    const auto* pd = firstUsable(d, nd, m_workspaceLimit, tensorCores());
    if (!pd)
        throw none("backward-data");
    t.bwdDataAlgo = pd->algo;
    t.bwdDataMath = pd->mathType;
    t.cd->setMath(t.bwdDataMath);
    size_t dataBytes = 0;
    CONVSCOPE_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, t.wd->get(), t.yd->get(), t.cd->get(), t.xd->get(), pd->algo, &dataBytes));
    m_workspaceBytes = std::max({ m_workspaceBytes, pd->memory, dataBytes });
    cudnnConvolutionBwdFilterAlgoPerf_t f[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int nf = 0;
    CONVSCOPE_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(
        h, t.xd->get(), t.yd->get(), t.cd->get(), t.wd->get(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &nf, f));
    const auto* pf = firstUsable(f, nf, m_workspaceLimit, tensorCores());
    if (!pf)
        throw none("backward-filter");
    t.bwdFilterAlgo = pf->algo;
    t.bwdFilterMath = pf->mathType;
    t.cd->setMath(t.bwdFilterMath);
    size_t filterBytes = 0;
    CONVSCOPE_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, t.xd->get(), t.yd->get(), t.cd->get(), t.wd->get(), pf->algo, &filterBytes));
    m_workspaceBytes = std::max({ m_workspaceBytes, pf->memory, filterBytes });
    t.note = note + ", backward-data " + bwdDataAlgorithmName(pd->algo) + ", backward-filter algo_"
        + std::to_string(int(pf->algo)) + " (cudnnFind), "
        + (mixed()       ? std::string(dtypeName(m_storage)) + " Tensor Core math"
                : tf32() ? "TF32 allowed"
                         : "FMA math");
}

} // namespace convscope::cudnn
