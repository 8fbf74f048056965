#include "kernels/cudnn/storage_ops.h"

#include "compute/linear_geometry.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/cudnn_support.h"
#include "kernels/cudnn/volume_plan.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <variant>

namespace convscope::cudnn {

namespace {
    std::mutex g_mutex;
    std::map<std::tuple<int, int, int, int>, bool> g_answers; // (device, op, mode, type)

    // One try on [1, 8, 4, 4] NHWC tensors (zeros) on the default stream. The handle is left on the default stream:
    // the stream it pointed at may belong to a session that has ended (sessions set their own stream before every
    // call, but never reset it), and handing that dangling stream back to cudnnSetStream crashed the process on the
    // H100 when a probe ran after earlier sessions in the same process.
    bool tryOnce(NativeOp op, int mode, DType type)
    {
        Handles& h = threadHandles();
        CONVSCOPE_CUDNN_CHECK(cudnnSetStream(h.cudnn, nullptr));

        constexpr int n = 1, c = 8, hw = 4;
        const size_t elems = size_t(n) * c * hw * hw;
        gpu::DeviceBuffer a(elems * 4, "cudnn probe"), b(elems * 4, "cudnn probe"), y(elems * 4, "cudnn probe"),
            params(4 * c * sizeof(float), "cudnn probe");
        CONVSCOPE_CUDA_CHECK(cudaMemset(a.get(), 0, a.bytes()));
        CONVSCOPE_CUDA_CHECK(cudaMemset(b.get(), 0, b.bytes()));
        CONVSCOPE_CUDA_CHECK(cudaMemset(params.get(), 0, params.bytes()));
        const cudnnDataType_t t = cudnnType(type);
        TensorDesc xd, yd, pd;
        xd.set(CUDNN_TENSOR_NHWC, n, c, hw, hw, t);
        const float one = 1.0f, zero = 0.0f;
        cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
        auto* p = static_cast<float*>(params.get());
        switch (op) {
        case NativeOp::Activation: {
            ActivationDesc act;
            act.set(static_cast<cudnnActivationMode_t>(mode), mode == CUDNN_ACTIVATION_CLIPPED_RELU ? 6.0 : 1.0);
            if (mode == CUDNN_ACTIVATION_SWISH)
                CONVSCOPE_CUDNN_CHECK(cudnnSetActivationDescriptorSwishBeta(act.get(), 1.0));
            st = cudnnActivationForward(h.cudnn, act.get(), &one, xd.get(), a.get(), &zero, xd.get(), y.get());
            break;
        }
        case NativeOp::Pooling: {
            PoolDesc pool;
            pool.set(static_cast<cudnnPoolingMode_t>(mode), 2, 2, 0, 0, 2, 2);
            yd.set(CUDNN_TENSOR_NHWC, n, c, hw / 2, hw / 2, t);
            st = cudnnPoolingForward(h.cudnn, pool.get(), &one, xd.get(), a.get(), &zero, yd.get(), y.get());
            break;
        }
        case NativeOp::BatchNorm:
            pd.set(CUDNN_TENSOR_NCHW, 1, c, 1, 1);
            CONVSCOPE_CUDA_CHECK(cudaMemset(p + 3 * c, 0x3f, c * sizeof(float))); // variance ≈ 0.75
            st = cudnnBatchNormalizationForwardInference(h.cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd.get(),
                a.get(), xd.get(), y.get(), pd.get(), p, p + c, p + 2 * c, p + 3 * c, 1e-5);
            break;
        case NativeOp::Softmax:
            st = cudnnSoftmaxForward(h.cudnn, mode == 1 ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                CUDNN_SOFTMAX_MODE_CHANNEL, &one, xd.get(), a.get(), &zero, xd.get(), y.get());
            break;
        case NativeOp::OpTensor: {
            OpTensorDesc desc(static_cast<cudnnOpTensorOp_t>(mode));
            st = cudnnOpTensor(
                h.cudnn, desc.get(), &one, xd.get(), a.get(), &one, xd.get(), b.get(), &zero, xd.get(), y.get());
            break;
        }
        case NativeOp::AddTensor:
            st = cudnnAddTensor(h.cudnn, &one, xd.get(), a.get(), &one, xd.get(), y.get());
            break;
        }
        const cudaError_t sync = cudaDeviceSynchronize();
        (void)cudaGetLastError();
        return st == CUDNN_STATUS_SUCCESS && sync == cudaSuccess;
    }
} // namespace

bool cudnnRunsNative(NativeOp op, int mode, DType type)
{
    int device = 0;
    CONVSCOPE_CUDA_CHECK(cudaGetDevice(&device));
    const auto key = std::make_tuple(device, int(op), mode, int(type));
    std::lock_guard lock(g_mutex);
    if (auto it = g_answers.find(key); it != g_answers.end())
        return it->second;
    bool ok = false;
    try {
        ok = tryOnce(op, mode, type);
    } catch (const std::exception&) {
        (void)cudaGetLastError();
        ok = false;
    }
    g_answers[key] = ok;
    return ok;
}

namespace {
    // The math a convolution gets on `type`: TF32 tensor cores on FP32 storage, tensor-op math on FP16/BF16.
    cudnnMathType_t nativeMath(DType type) { return mathTypeFor(type == DType::F32 ? MathMode::TF32 : MathMode::FP16); }

    // Whether cuDNN takes a convolution's native descriptors for at least one algorithm: a workspace query each (no
    // memory, nothing runs), the same question choosePinned asks of one algorithm. A refusal leaves the layer on the
    // FP32 copies, and its note says so.
    template <class Layout> bool forwardAccepted(const Layout& l, DType type)
    {
        try {
            Handles& h = threadHandles();
            ConvDescriptors d;
            describe(l, nativeMath(type), d);
            for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
                size_t bytes = 0;
                if (cudnnGetConvolutionForwardWorkspaceSize(h.cudnn, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                        static_cast<cudnnConvolutionFwdAlgo_t>(a), &bytes)
                    == CUDNN_STATUS_SUCCESS)
                    return true;
            }
        } catch (const std::exception&) {
        }
        return false;
    }
    template <class Layout> bool backwardDataAccepted(const Layout& l, DType type)
    {
        try {
            Handles& h = threadHandles();
            ConvTransposeDescriptors d;
            describe(l, nativeMath(type), d);
            for (int a = 0; a < CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT; ++a) {
                size_t bytes = 0;
                if (cudnnGetConvolutionBackwardDataWorkspaceSize(h.cudnn, d.w.get(), d.dy.get(), d.conv.get(),
                        d.dx.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(a), &bytes)
                    == CUDNN_STATUS_SUCCESS)
                    return true;
            }
        } catch (const std::exception&) {
        }
        return false;
    }
} // namespace

PoolBlock cudnnPoolBlock(const LayerShape& s, const Pair& kernel, const Pair& stride, int mode)
{
    const Padding2d& pad = s.resolvedPadding;
    const int H = int(s.in.h), W = int(s.in.w), OH = int(s.out.h), OW = int(s.out.w);
    const int kh = int(kernel[0]), kw = int(kernel[1]), sh = int(stride[0]), sw = int(stride[1]);
    const int top = int(pad.top), bottom = int(pad.bottom), left = int(pad.left), right = int(pad.right);
    // The outputs cuDNN defines with padding (top, left) on both sides: its floor formula.
    auto cudnnCount = [](int in, int p, int k, int st) { return in + 2 * p >= k ? (in + 2 * p - k) / st + 1 : 0; };
    PoolBlock b { std::min(cudnnCount(H, top, kh, sh), OH), std::min(cudnnCount(W, left, kw, sw), OW) };
    if (mode == 1) {
        // Counting padding, PyTorch divides by the window clipped to the padded input, cuDNN by the whole
        // window: equal only where the window ends inside the padded input.
        auto inside = [](int in, int before, int after, int k, int st) {
            return in + before + after >= k ? (in + before + after - k) / st + 1 : 0;
        };
        b.hC = std::min(b.hC, inside(H, top, bottom, kh, sh));
        b.wC = std::min(b.wC, inside(W, left, right, kw, sw));
    }
    return b;
}

bool runsNatively(const LayerSpec& spec, const LayerShape& s, DType type)
{
    return std::visit(
        [&](const auto& l) -> bool {
            using T = std::decay_t<decltype(l)>;
            auto act = [&](cudnnActivationMode_t m) { return cudnnRunsNative(NativeOp::Activation, int(m), type); };
            auto pool = [&](int mode, const Pair& kernel, const Pair& stride) {
                const PoolBlock b = cudnnPoolBlock(s, kernel, stride, mode);
                const cudnnPoolingMode_t m = mode == 0 ? CUDNN_POOLING_MAX
                    : mode == 1                        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                       : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
                return b.hC == int(s.out.h) && b.wC == int(s.out.w) && cudnnRunsNative(NativeOp::Pooling, int(m), type);
            };
            if constexpr (std::is_same_v<T, Conv2d>) {
                return true; // asymmetric padding too: its pad step runs on the storage type (native_layers.h)
            } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                // These three run natively on FP16/BF16 storage only. On tf32's FP32 storage the copies cost only a
                // layout change, and cuDNN's FP32 NDHWC backward-data kernels measured far slower than NCDHW on the
                // H100 (the autoencoder's conv_transpose3d 8→16 @2³ stride 4, batch 64: 0.94 ms native against 0.04 ms
                // on the copies; 32→1 @16³: 1.21 against 0.45 ms), so tf32 keeps them where they were.
                return type != DType::F32 && backwardDataAccepted(convTransposeLayout(l, s, type), type);
            } else if constexpr (std::is_same_v<T, Conv3d>) {
                return type != DType::F32 && forwardAccepted(conv3dLayout(l, s, type), type);
            } else if constexpr (std::is_same_v<T, ConvTranspose3d>) {
                return type != DType::F32 && backwardDataAccepted(convTranspose3dLayout(l, s, type), type);
            } else if constexpr (std::is_same_v<T, Linear>) {
                return linearRowsAreBatch(s.in); // [N, F], [N, C, 1, 1]: the same in both layouts
            } else if constexpr (std::is_same_v<T, ReLU>) {
                return act(CUDNN_ACTIVATION_RELU);
            } else if constexpr (std::is_same_v<T, Sigmoid>) {
                return act(CUDNN_ACTIVATION_SIGMOID);
            } else if constexpr (std::is_same_v<T, Tanh>) {
                return act(CUDNN_ACTIVATION_TANH);
            } else if constexpr (std::is_same_v<T, ELU>) {
                return act(CUDNN_ACTIVATION_ELU);
            } else if constexpr (std::is_same_v<T, ReLU6>) {
                return act(CUDNN_ACTIVATION_CLIPPED_RELU);
            } else if constexpr (std::is_same_v<T, SiLU>) {
                return act(CUDNN_ACTIVATION_SWISH);
            } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                return l.dilation[0] == 1 && l.dilation[1] == 1 && pool(0, l.kernel_size, l.effectiveStride());
            } else if constexpr (std::is_same_v<T, AvgPool2d>) {
                return pool(l.count_include_pad ? 1 : 2, l.kernel_size, l.effectiveStride());
            } else if constexpr (std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, GlobalAvgPool3d>) {
                return cudnnRunsNative(NativeOp::Pooling, int(CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING), type);
            } else if constexpr (std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, BatchNorm3d>) {
                return cudnnRunsNative(NativeOp::BatchNorm, 0, type);
            } else if constexpr (isSoftmaxKind<T>) { // any axis: [outer, size, inner, 1] (reduce_layers.h)
                return cudnnRunsNative(NativeOp::Softmax, isLogSoftmax<T> ? 1 : 0, type);
            } else if constexpr (std::is_same_v<T, Add>) {
                return cudnnRunsNative(NativeOp::OpTensor, int(CUDNN_OP_TENSOR_ADD), type)
                    && (s.ins.size() <= 2 || cudnnRunsNative(NativeOp::AddTensor, 0, type));
            } else if constexpr (std::is_same_v<T, Mul>) {
                return cudnnRunsNative(NativeOp::OpTensor, int(CUDNN_OP_TENSOR_MUL), type);
            } else {
                return false; // our FP32 kernels and the 3-D pools
            }
        },
        spec);
}

} // namespace convscope::cudnn
