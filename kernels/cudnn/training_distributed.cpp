// The cudnn session's part of data parallel (the flow is the shared one, kernels/common/gpu_training_parallel.cpp):
// every rank runs rank 0's convolution algorithms.
#include "kernels/cudnn/training_layers.h"

#include "compute/error.h"
#include "compute/training/distributed.h"
#include "kernels/common/cuda_check.h"

#include <sstream>

namespace convscope::cudnn {

void CudnnTrainingSession::afterPlanning()
{
    if (!dataParallelRunning())
        return;
    // Each convolution's three algorithms and math types, as numbers, in layer order.
    std::string choices;
    for (const TrainLayer& t : m_layers)
        if (t.cd)
            for (int v : { int(t.fwdAlgo), int(t.fwdMath), int(t.bwdDataAlgo), int(t.bwdDataMath), int(t.bwdFilterAlgo),
                     int(t.bwdFilterMath) })
                choices += std::to_string(v) + " ";
    const std::string mine = choices;
    m_train.group->broadcast(choices);
    if (choices == mine)
        return;
    std::istringstream in(choices);
    cudnnHandle_t h = m_handles->cudnn;
    for (size_t i = 0; i < m_layers.size(); ++i) {
        TrainLayer& t = m_layers[i];
        if (!t.cd)
            continue;
        int v[6] = {};
        for (int& x : v)
            if (!(in >> x))
                throw Error(m_prefix + ": rank 0's convolution algorithms do not fit this rank's network");
        t.fwdAlgo = cudnnConvolutionFwdAlgo_t(v[0]);
        t.fwdMath = cudnnMathType_t(v[1]);
        t.bwdDataAlgo = cudnnConvolutionBwdDataAlgo_t(v[2]);
        t.bwdDataMath = cudnnMathType_t(v[3]);
        t.bwdFilterAlgo = cudnnConvolutionBwdFilterAlgo_t(v[4]);
        t.bwdFilterMath = cudnnMathType_t(v[5]);
        // Their workspace here (the same GPU model as rank 0's, in the same math type).
        size_t f = 0, d = 0, w = 0;
        t.cd->setMath(t.fwdMath);
        CONVSCOPE_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
            h, t.xd->get(), t.wd->get(), t.cd->get(), t.yd->get(), t.fwdAlgo, &f));
        t.cd->setMath(t.bwdDataMath);
        CONVSCOPE_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, t.wd->get(), t.yd->get(), t.cd->get(), t.xd->get(), t.bwdDataAlgo, &d));
        t.cd->setMath(t.bwdFilterMath);
        CONVSCOPE_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
            h, t.xd->get(), t.yd->get(), t.cd->get(), t.wd->get(), t.bwdFilterAlgo, &w));
        m_workspaceBytes = std::max({ m_workspaceBytes, f, d, w });
        t.note += "; rank 0's algorithms (data parallel: every rank runs the same)";
    }
}

} // namespace convscope::cudnn
