// matmul and gather on the cudnn backend (kernels/cudnn/tensor_layers.h).
#include "kernels/cudnn/tensor_layers.h"

#include "compute/error.h"
#include "compute/linear_geometry.h"
#include "compute/matmul.h"
#include "kernels/cuda/tensor_kinds.h"
#include "kernels/cudnn/cudnn_support.h"

#include <climits>
#include <variant>

namespace convscope::cudnn {

namespace {
    // cuBLAS's form of the product: every stride fixed and every size an int.
    bool cublasFits(const MatmulPlan& p, int64_t stride[3])
    {
        if (!matmulUniformBatch(p, stride))
            return false;
        for (const int64_t v : { p.m, p.n, p.k, p.batch })
            if (v > INT_MAX)
                return false;
        return true;
    }

    MatmulPlan planOf(const LayerSpec& spec, const LayerShape& s)
    {
        const MatmulOperands o = matmulOperands(std::get<Matmul>(spec), s.ins);
        return makeMatmulPlan(o.a, false, o.b, false, false);
    }
} // namespace

std::string prepareTensorLayer(
    const LayerSpec& spec, const LayerShape& s, MathMode math, void* scratch, cudaStream_t st)
{
    if (std::holds_alternative<Matmul>(spec)) {
        int64_t stride[3] = {};
        if (!cublasFits(planOf(spec, s), stride))
            return cuda::prepareTensorKind(spec, s, scratch, st)
                + ": cuDNN has no matmul, and this broadcast of the batch axes has no single stride per operand for "
                  "cuBLAS's strided batch";
        return std::string("cublasGemmStridedBatchedEx (FP32 operands, ")
            + (math == MathMode::TF32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F") + "; a stride of 0 "
            + "for an operand broadcast over the batch): cuDNN has no matmul";
    }
    return cuda::prepareTensorKind(spec, s, scratch, st) + ": cuDNN has no gather";
}

void runTensorLayer(cublasHandle_t h, MathMode math, const LayerSpec& spec, const LayerShape& s, const float* x,
    const float* x2, const float* constant, const void* scratch, float* y, cudaStream_t st)
{
    if (const auto* mm = std::get_if<Matmul>(&spec)) {
        const MatmulPlan p = planOf(spec, s);
        // The operands: the two inputs, or the input and the constant on its side ((c, x) or (x, c)).
        const float* a = mm->constant.empty() || !mm->constant_first ? x : constant;
        const float* b = mm->constant.empty() ? x2 : mm->constant_first ? x : constant;
        int64_t stride[3] = {};
        if (cublasFits(p, stride)) {
            CONVSCOPE_CUBLAS_CHECK(cublasSetStream(h, st));
            CONVSCOPE_CUBLAS_CHECK(
                cublasSetMathMode(h, math == MathMode::TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
            const cublasComputeType_t compute
                = math == MathMode::TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
            // Row-major C[M, N] = A[M, K] · B[K, N] is, column-major, Cᵀ[N, M] = Bᵀ · Aᵀ: B first, with its rows
            // of N (ldb N; a 1-D b is [K, 1], ldb 1), then A (lda K), C (ldc N).
            const int m = int(p.m), n = int(p.n), k = int(p.k);
            CONVSCOPE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &kOne, b,
                CUDA_R_32F, n, stride[1], a, CUDA_R_32F, k, stride[0], &kZero, y, CUDA_R_32F, n, stride[2],
                int(p.batch), compute, CUBLAS_GEMM_DEFAULT));
            return;
        }
    }
    cuda::runTensorKind(spec, s, DType::F32, false, { x, x2 }, constant, scratch, y, st);
}

std::string tensorTrainingRefusal(const LayerSpec& spec, const LayerShape& s)
{
    if (std::holds_alternative<Matmul>(spec) || std::holds_alternative<Gather>(spec))
        return std::string(layerTypeName(spec))
            + " has no backward on cudnn yet (unsupported; train on cpu.direct or cpu.im2col_gemm)";
    if (std::holds_alternative<Linear>(spec) && !linearRowsAreBatch(s.in))
        return "linear on the last axis of " + s.in.str()
            + " has no backward on cudnn yet (only [N, F] and [N, C, 1, 1]; train on cpu.direct or cpu.im2col_gemm)";
    return {};
}

} // namespace convscope::cudnn
