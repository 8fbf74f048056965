// softmax / log_softmax along any axis and the reduce kind on cuDNN (issue 30).
//   softmax: cudnnSoftmaxForward (CUDNN_SOFTMAX_ACCURATE, or CUDNN_SOFTMAX_LOG for log_softmax) in
//     CUDNN_SOFTMAX_MODE_CHANNEL on the tensor described as [outer, axis, inner, 1] around the axis: the channel mode's
//     softmax over C at every (n, h, w) is the softmax along the axis. FP32 NCHW data, or a session's channels-last
//     storage in its type (the axis's place in the channels-last order: cuda::axisRuns).
//   reduce: cudnnReduceTensor (ADD, AVG, MAX, MIN, NORM2; NaN propagated, no indices) on FP32 NCHW data, A the input's
//     dims and C the same dims with the reduced axes 1 (keepdim's shape: the same memory as the output either way),
//     padded to 4 dims; its workspace from cudnnGetReductionWorkspaceSize (indices: cudnnGetReductionIndicesSize, 0).
#pragma once

#include "kernels/cudnn/cudnn_support.h"

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"

#include <memory>
#include <optional>
#include <string>

namespace convscope::cudnn {

class ReduceLayerPlan {
public:
    // `storage`: the element type of a layer that runs natively on the session's channels-last storage; nullopt for
    // FP32 NCHW data.
    static std::unique_ptr<ReduceLayerPlan> softmax(
        int64_t dim, bool log, const Shape& in, std::optional<DType> storage);
    static std::unique_ptr<ReduceLayerPlan> reduce(cudnnHandle_t h, const Reduce& r, const LayerShape& s);
    ~ReduceLayerPlan();

    size_t workspaceBytes() const { return m_workspace; }
    const std::string& note() const { return m_note; }
    void run(cudnnHandle_t h, const void* x, void* y, void* workspace, size_t workspaceBytes) const;

private:
    ReduceLayerPlan() = default;
    TensorDesc m_x, m_y;
    cudnnReduceTensorDescriptor_t m_reduce = nullptr; // null: a softmax, or a reduce over axes of size 1 only
    // A reduce whose every reduced axis has size 1 (cudnnReduceTensor refuses input and output dims that do not
    // differ): mean, sum, max and min are a copy of `m_copyBytes`; l2 is |x| = max(x, −x) through m_abs.
    size_t m_copyBytes = 0;
    cudnnOpTensorDescriptor_t m_abs = nullptr;
    cudnnSoftmaxAlgorithm_t m_algorithm = CUDNN_SOFTMAX_ACCURATE;
    cudnnSoftmaxMode_t m_mode = CUDNN_SOFTMAX_MODE_CHANNEL;
    size_t m_workspace = 0;
    std::string m_note;
};

// The training session's refusal of these kinds: reduce has no backward on cudnn yet (empty for softmax and
// log_softmax, which train along any axis through cudnnSoftmaxBackward on softmaxTensor's view).
std::string reduceTrainingRefusal(const LayerSpec& spec);
// An FP32 tensor as [outer, axis, inner, 1] around softmax's `dim`: CUDNN_SOFTMAX_MODE_CHANNEL runs along the axis.
std::unique_ptr<TensorDesc> softmaxTensor(const Shape& in, int64_t dim, cudnnDataType_t type = CUDNN_DATA_FLOAT);
template <typename T>
inline constexpr cudnnSoftmaxAlgorithm_t kSoftmaxAlgo = isLogSoftmax<T> ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE;
template <typename T> inline constexpr const char* softmaxAlgoName = isLogSoftmax<T> ? "CUDNN_SOFTMAX_LOG" : "accurate";

} // namespace convscope::cudnn
