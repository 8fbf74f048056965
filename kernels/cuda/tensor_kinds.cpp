// matmul and gather on the device (kernels/cuda/tensor_kinds.h).
#include "kernels/cuda/tensor_kinds.h"

#include "compute/error.h"
#include "compute/gather.h"
#include "compute/matmul.h"
#include "kernels/common/cuda_check.h"
#include "kernels/cuda/matmul.cuh"

#include <variant>

namespace convscope::cuda {

size_t tensorKindScratchBytes(const LayerSpec& spec)
{
    if (const auto* g = std::get_if<Gather>(&spec))
        return g->indices.size() * sizeof(long long);
    return 0;
}

std::string prepareTensorKind(const LayerSpec& spec, const LayerShape& s, void* scratch, cudaStream_t st)
{
    if (const auto* g = std::get_if<Gather>(&spec)) {
        const std::vector<int64_t> wrapped = gatherWrappedIndices(*g, s.in.dims());
        const std::vector<long long> idx(wrapped.begin(), wrapped.end());
        if (!scratch)
            throw Error("gather: the layer's index buffer was not allocated");
        CONVSCOPE_CUDA_CHECK(
            cudaMemcpyAsync(scratch, idx.data(), idx.size() * sizeof(long long), cudaMemcpyHostToDevice, st));
        CONVSCOPE_CUDA_CHECK(cudaStreamSynchronize(st));
        return "our CUDA kernel: a gather copy (" + std::to_string(idx.size()) + " indices, kept on the device)";
    }
    if (const auto* m = std::get_if<Matmul>(&spec)) {
        const MatmulOperands o = matmulOperands(*m, s.ins);
        return matmulNote(makeMatmulPlan(o.a, false, o.b, false, false));
    }
    throw Error("prepareTensorKind: " + layerTypeName(spec) + " is not matmul or gather");
}

bool tensorKindRunsInStorage(const LayerSpec& spec)
{
    const auto* m = std::get_if<Matmul>(&spec);
    return !m || m->constant.empty();
}

void runTensorKind(const LayerSpec& spec, const LayerShape& s, DType type, bool channelsLast,
    const std::vector<const void*>& inputs, const float* constant, const void* scratch, void* y, cudaStream_t st)
{
    if (const auto* g = std::get_if<Gather>(&spec)) {
        const GatherPlan p = makeGatherPlan(*g, s.in.dims(), channelsLast, channelsLast);
        return gatherCopy(p, type, inputs.at(0), static_cast<const long long*>(scratch), y, st);
    }
    if (const auto* m = std::get_if<Matmul>(&spec)) {
        const MatmulOperands o = matmulOperands(*m, s.ins);
        if (o.constantSide >= 0 && (!constant || type != DType::F32))
            throw Error("matmul: a constant operand needs the layer's FP32 constant and FP32 data");
        size_t next = 0;
        const void* a = o.constantSide == 0 ? constant : inputs.at(next++);
        const void* b = o.constantSide == 1 ? constant : inputs.at(next++);
        const MatmulPlan p = makeMatmulPlan(
            o.a, channelsLast && o.constantSide != 0, o.b, channelsLast && o.constantSide != 1, channelsLast);
        return matmulBatched(p, type, a, b, y, st);
    }
    throw Error("runTensorKind: " + layerTypeName(spec) + " is not matmul or gather");
}

} // namespace convscope::cuda
