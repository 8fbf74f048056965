// Internal to compute/cpu: the argument checks and the workspace bound every CPU op shares. The caller allocates `out`
// from shape inference, so a mismatch here means the network and its tensors disagree (a weight file of the wrong size,
// a stale output buffer); it is reported in words instead of reading or writing out of bounds.
#pragma once

#include "compute/cpu/cpu_ops.h"
#include "compute/error.h"
#include "compute/layer_spec.h"
#include "compute/tensor.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <string>

namespace convscope::cpu::detail {

inline void require(bool condition, const std::string& op, const std::string& what)
{
    if (!condition)
        throw InputError(op + ": " + what);
}

inline std::string dims(const Tensor& t)
{
    const Shape& s = t.shape();
    return "[" + std::to_string(s.n) + ", " + std::to_string(s.c) + ", " + std::to_string(s.h) + ", "
        + std::to_string(s.w) + "]";
}

inline void requireWeight(const Tensor& weight, int64_t n, int64_t c, int64_t h, int64_t w, const std::string& op)
{
    const Shape& s = weight.shape();
    require(s.n == n && s.c == c && s.h == h && s.w == w, op,
        "weight has shape " + dims(weight) + " but the layer needs [" + std::to_string(n) + ", " + std::to_string(c)
            + ", " + std::to_string(h) + ", " + std::to_string(w) + "]");
}

// A per-channel parameter (bias, batch-norm statistics) holds exactly `channels` values.
inline void requireVector(const Tensor* t, int64_t channels, const std::string& op, const std::string& name)
{
    if (t)
        require(t->numel() == channels, op,
            name + " has " + std::to_string(t->numel()) + " values but the layer has " + std::to_string(channels)
                + " channels");
}

inline void requireNonEmpty(const Tensor& in, const Tensor& out, const std::string& op)
{
    require(!in.empty() && in.data() != nullptr, op, "the input tensor is empty");
    require(!out.empty() && out.data() != nullptr, op, "the output tensor is not allocated");
}

// Shared by the convolution ops: the channel counts must split evenly into groups.
inline void requireGroups(int64_t inChannels, int64_t outChannels, int64_t groups, const std::string& op)
{
    require(groups >= 1, op, "groups must be at least 1");
    require(inChannels % groups == 0 && outChannels % groups == 0, op,
        std::to_string(inChannels) + " input and " + std::to_string(outChannels) + " output channels do not split into "
            + std::to_string(groups) + " groups");
}

inline void requireWindow(const Pair& kernel, const Pair& stride, const Pair& dilation, const std::string& op)
{
    require(kernel[0] >= 1 && kernel[1] >= 1, op, "kernel_size must be at least 1");
    require(stride[0] >= 1 && stride[1] >= 1, op, "stride must be at least 1");
    require(dilation[0] >= 1 && dilation[1] >= 1, op, "dilation must be at least 1");
}

// cblas takes int dimensions; a larger one would wrap into a wrong (or negative) size.
// The sizes a convolution reads, after the checks all four CPU convolutions share. conv2d and
// conv_transpose2d differ only in the weight layout: [C_out, C_in/g, kh, kw] against [C_in, C_out/g, kh, kw].
struct ConvSizes {
    int64_t batch, inC, inH, inW, outC, outH, outW, kh, kw, inPerGroup, outPerGroup;
};

template <typename Spec>
inline ConvSizes checkConvolution(const Tensor& in, const Tensor& weight, const Tensor* bias, const Spec& spec,
    const Tensor& out, const std::string& op, bool transposed)
{
    requireNonEmpty(in, out, op);
    requireWindow(spec.kernel_size, spec.stride, spec.dilation, op);
    ConvSizes g { in.shape().n, in.shape().c, in.shape().h, in.shape().w, out.shape().c, out.shape().h, out.shape().w,
        spec.kernel_size[0], spec.kernel_size[1], 0, 0 };
    require(out.shape().n == g.batch, op, "output batch differs from the input batch");
    requireGroups(g.inC, g.outC, spec.groups, op);
    g.inPerGroup = g.inC / spec.groups;
    g.outPerGroup = g.outC / spec.groups;
    if (transposed)
        requireWeight(weight, g.inC, g.outPerGroup, g.kh, g.kw, op);
    else
        requireWeight(weight, g.outC, g.inPerGroup, g.kh, g.kw, op);
    requireVector(bias, g.outC, op, "bias");
    return g;
}

inline void requireBlasDimensions(std::initializer_list<int64_t> dims, const std::string& op)
{
    for (int64_t d : dims)
        require(d <= std::numeric_limits<int>::max(), op,
            "a matrix dimension of " + std::to_string(d) + " is too large for OpenBLAS (at most 2^31 - 1)");
}

// The fast convolutions' column buffer never exceeds this: roughly the layer's own tensors again, so a run
// needs ~2x the memory of its activations instead of the kh*kw-fold blow-up a whole-image im2col costs.
inline int64_t workspaceBudgetBytes(const Tensor& in, const Tensor& out)
{
    return std::max<int64_t>(fast::kMinWorkspaceBytes, (in.numel() + out.numel()) * int64_t(sizeof(float)));
}

// Uninitialised scratch floats (every element is written before it is read); allocation failure is reported
// as an error, never an abort.
inline std::unique_ptr<float[]> allocateWorkspace(int64_t count, const std::string& op)
{
    float* p = new (std::nothrow) float[static_cast<size_t>(count)];
    if (!p)
        throw OutOfMemoryError(
            op + ": could not allocate a " + std::to_string(count * 4 / (1 << 20)) + " MiB workspace");
    return std::unique_ptr<float[]>(p);
}

// Σ x[i] in double with eight independent partial sums (a single chain waits on the adder's latency every element:
// 88 ms for a 256 MiB global pool on 2 cores); the partial sums are added in a fixed order, so a result does not
// depend on the thread that computed it.
inline double sumInDouble(const float* x, int64_t n)
{
    double part[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k)
            part[k] += x[i + k];
    for (; i < n; ++i)
        part[0] += x[i];
    return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// Below this many elements an element-wise or pooling loop runs on the calling thread: waking the OpenMP team costs
// a microsecond or two, more than a LeNet-sized layer takes (docs/PERFORMANCE.md, "## CPU").
inline constexpr int64_t kMinParallelElements = int64_t(1) << 15;

// C[m, n] = op(A)[m, k] · op(B)[k, n] + beta · C, row-major (op = transpose where asked), split across the OpenMP team
// by blocks of C, each one single-threaded OpenBLAS call; one row (a batch-1 linear layer) is a GEMV. Inside a
// parallel region, or for a small product, it runs on the calling thread. Where the caller already splits its work
// across OpenMP threads it calls cblas directly, after keepBlasOnCallingThread() (compute/cpu_threads.h).
void parallelSgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
    const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// A linear layer's three products on row-major [rows, in] activations and an [out, in] weight, each one
// parallelSgemm. A transposed convolution that is a linear layer (dense_convolution.h) uses them with the roles of
// forward and data swapped: its forward is the data product, its data gradient the forward product.
//   forward   y [rows, out] = x · Wᵀ (+ beta · y)
//   data      gx [rows, in] = gy · W
//   weights   gw [out, in]  = gyᵀ · x
inline void linearForwardProduct(
    const float* x, const float* w, float* y, int64_t rows, int64_t in, int64_t out, float beta = 0.0f)
{
    parallelSgemm(false, true, rows, out, in, x, in, w, in, beta, y, out);
}
inline void linearDataProduct(const float* gy, const float* w, float* gx, int64_t rows, int64_t in, int64_t out)
{
    parallelSgemm(false, false, rows, in, out, gy, out, w, in, 0.0f, gx, in);
}
inline void linearWeightsProduct(const float* gy, const float* x, float* gw, int64_t rows, int64_t in, int64_t out)
{
    parallelSgemm(true, false, out, in, rows, gy, out, x, in, 0.0f, gw, in);
}

// Batch norm's inference formula folded per channel (in double) into y = x · scale + shift and applied in float over
// the N·C planes of `planeSize` elements (H·W of an image, D·H·W of a volume), split across OpenMP threads: fast::
// batchNorm2d and batchNorm3d after their own checks (batchnorm2d.cpp).
void batchNormPlanes(const Tensor& in, const Tensor& mean, const Tensor& var, const Tensor* weight, const Tensor* bias,
    double eps, Tensor& out, int64_t planeSize);

} // namespace convscope::cpu::detail
