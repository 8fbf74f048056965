// softmax / log_softmax on any axis and reduce on cuDNN (reduce_layers.h).
#include "kernels/cudnn/reduce_layers.h"

// cudnnReduceTensor and its descriptor calls are marked deprecated in cuDNN 9's headers (warned only where
// CUDNN_WARN_DEPRECATED is defined), yet they are the library's one reduction call outside the graph API.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include "kernels/common/cuda_check.h"
#include "kernels/cuda/copy_kernels.cuh"

#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/reduce.h"

#include <climits>

namespace convscope::cudnn {

namespace {
    int toInt(int64_t v, const char* what)
    {
        if (v > INT_MAX)
            throw UnsupportedError(std::string("cudnn: ") + what + " of more than 2^31 elements (cuDNN's int sizes)");
        return int(v);
    }

    // dims padded to 4 with trailing ones (cuDNN's Nd descriptors take 4 to 8), packed NCHW strides.
    void setNd(cudnnTensorDescriptor_t d, std::vector<int64_t> dims)
    {
        while (dims.size() < 4)
            dims.push_back(1);
        const std::vector<int64_t> strides = contiguousStrides(dims);
        int n[8], s[8];
        for (size_t k = 0; k < dims.size(); ++k) {
            n[k] = toInt(dims[k], "a reduce");
            s[k] = toInt(strides[k], "a reduce");
        }
        CONVSCOPE_CUDNN_CHECK(cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, int(dims.size()), n, s));
    }
} // namespace

ReduceLayerPlan::~ReduceLayerPlan()
{
    if (m_reduce)
        cudnnDestroyReduceTensorDescriptor(m_reduce);
    if (m_abs)
        cudnnDestroyOpTensorDescriptor(m_abs);
}

std::unique_ptr<ReduceLayerPlan> ReduceLayerPlan::softmax(
    int64_t dim, bool log, const Shape& in, std::optional<DType> storage)
{
    std::unique_ptr<ReduceLayerPlan> p(new ReduceLayerPlan());
    const int64_t axis = wrapAxis(dim, in.ndim(), log ? "log_softmax" : "softmax");
    const cuda::AxisRuns r = cuda::axisRuns(in, axis, storage.has_value());
    p->m_x.set(CUDNN_TENSOR_NCHW, toInt(r.outer, "a softmax"), toInt(r.size, "a softmax"), toInt(r.inner, "a softmax"),
        1, storage ? cudnnType(*storage) : CUDNN_DATA_FLOAT);
    p->m_algorithm = log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE;
    // Along the innermost axis the view is [outer, size, 1, 1], where instance mode (over C·H·W of each n) is the
    // same softmax as channel mode and is cuDNN's row kernel.
    p->m_mode = r.inner == 1 ? CUDNN_SOFTMAX_MODE_INSTANCE : CUDNN_SOFTMAX_MODE_CHANNEL;
    p->m_note = std::string("cudnnSoftmaxForward (") + (log ? "CUDNN_SOFTMAX_LOG" : "accurate")
        + (r.inner == 1 ? ", instance mode" : ", channel mode") + ") along dim " + std::to_string(axis)
        + ": the tensor as [" + std::to_string(r.outer) + ", " + std::to_string(r.size) + ", " + std::to_string(r.inner)
        + ", 1]";
    return p;
}

std::unique_ptr<ReduceLayerPlan> ReduceLayerPlan::reduce(cudnnHandle_t h, const Reduce& r, const LayerShape& s)
{
    std::unique_ptr<ReduceLayerPlan> p(new ReduceLayerPlan());
    const std::vector<int64_t> in = s.in.dims();
    if (in.size() > 8)
        throw UnsupportedError("cudnn: reduce of a tensor of more than 8 dims");
    Reduce kept = r;
    kept.keepdim = true;
    setNd(p->m_x.get(), in);
    setNd(p->m_y.get(), reduceOutputDims(kept, in));
    if (s.in.numel() == s.out.numel()) { // nothing is reduced: every axis in `dim` has size 1
        if (r.op == Reduce::Op::L2) {
            CONVSCOPE_CUDNN_CHECK(cudnnCreateOpTensorDescriptor(&p->m_abs));
            CONVSCOPE_CUDNN_CHECK(
                cudnnSetOpTensorDescriptor(p->m_abs, CUDNN_OP_TENSOR_MAX, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
            p->m_note = "reduce over axes of size 1: l2 is |x|, cudnnOpTensor(MAX, x, −x)";
        } else {
            p->m_copyBytes = size_t(s.in.numel()) * sizeof(float);
            p->m_note = "reduce over axes of size 1: a copy (cudnnReduceTensor needs dims that differ)";
        }
        return p;
    }
    static const cudnnReduceTensorOp_t ops[] = { CUDNN_REDUCE_TENSOR_AVG, CUDNN_REDUCE_TENSOR_ADD,
        CUDNN_REDUCE_TENSOR_MAX, CUDNN_REDUCE_TENSOR_MIN, CUDNN_REDUCE_TENSOR_NORM2 };
    CONVSCOPE_CUDNN_CHECK(cudnnCreateReduceTensorDescriptor(&p->m_reduce));
    CONVSCOPE_CUDNN_CHECK(cudnnSetReduceTensorDescriptor(p->m_reduce, ops[int(r.op)], CUDNN_DATA_FLOAT,
        CUDNN_PROPAGATE_NAN, CUDNN_REDUCE_TENSOR_NO_INDICES, CUDNN_32BIT_INDICES));
    CONVSCOPE_CUDNN_CHECK(cudnnGetReductionWorkspaceSize(h, p->m_reduce, p->m_x.get(), p->m_y.get(), &p->m_workspace));
    size_t indices = 0;
    CONVSCOPE_CUDNN_CHECK(cudnnGetReductionIndicesSize(h, p->m_reduce, p->m_x.get(), p->m_y.get(), &indices));
    if (indices != 0)
        throw Error("internal error: cudnn: reduce without indices asks for " + std::to_string(indices) + " bytes");
    static const char* const names[] = { "AVG", "ADD", "MAX", "MIN", "NORM2" };
    p->m_note = std::string("cudnnReduceTensor (CUDNN_REDUCE_TENSOR_") + names[int(r.op)] + ", FP32, NaN propagated)"
        + ", workspace " + std::to_string(p->m_workspace) + " bytes";
    return p;
}

void ReduceLayerPlan::run(cudnnHandle_t h, const void* x, void* y, void* workspace, size_t workspaceBytes) const
{
    static constexpr float kMinusOne = -1.0f;
    if (m_reduce) {
        CONVSCOPE_CUDNN_CHECK(cudnnReduceTensor(
            h, m_reduce, nullptr, 0, workspace, workspaceBytes, &kOne, m_x.get(), x, &kZero, m_y.get(), y));
    } else if (m_abs) {
        CONVSCOPE_CUDNN_CHECK(
            cudnnOpTensor(h, m_abs, &kOne, m_x.get(), x, &kMinusOne, m_x.get(), x, &kZero, m_x.get(), y));
    } else if (m_copyBytes) {
        cudaStream_t st = nullptr;
        CONVSCOPE_CUDNN_CHECK(cudnnGetStream(h, &st));
        CONVSCOPE_CUDA_CHECK(cudaMemcpyAsync(y, x, m_copyBytes, cudaMemcpyDeviceToDevice, st));
    } else
        CONVSCOPE_CUDNN_CHECK(cudnnSoftmaxForward(h, m_algorithm, m_mode, &kOne, m_x.get(), x, &kZero, m_x.get(), y));
}

std::string reduceTrainingRefusal(const LayerSpec& spec)
{
    if (!std::holds_alternative<Reduce>(spec))
        return {};
    return std::string(layerKind(spec).type)
        + " has no backward on cudnn yet (unsupported; train on cpu.direct or cpu.im2col_gemm)";
}

std::unique_ptr<TensorDesc> softmaxTensor(const Shape& in, int64_t dim, cudnnDataType_t type)
{
    const cuda::AxisRuns r = cuda::axisRuns(in, wrapAxis(dim, in.ndim(), "softmax"), false);
    auto d = std::make_unique<TensorDesc>();
    d->set(CUDNN_TENSOR_NCHW, toInt(r.outer, "a softmax"), toInt(r.size, "a softmax"), toInt(r.inner, "a softmax"), 1,
        type);
    return d;
}

} // namespace convscope::cudnn
