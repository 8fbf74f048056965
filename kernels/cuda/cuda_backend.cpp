// The "cuda" backend: our own kernels, one .cu/.cuh pair per op in this folder, behind the shared GPU session
// flow (kernels/common/gpu_session.h). The algorithm picks the conv2d kernel — direct, tiled, implicit_gemm or
// winograd, except on tiny latency-bound layers, which all take conv2dSmall, and winograd on layers it cannot
// run (not 3×3 stride 1), which take implicit_gemm with a note saying why — and the transposed convolutions' kernels
// (transposed_layers.h: the gather, or for the GEMM family the stride phases); every other layer runs its one
// implementation.
// cuda.fft runs every conv2d layer as an FFT convolution (conv2d_fft.cu), tiny ones included: it is there to be
// compared, and supports() refuses the layers it cannot run (stride > 1). This file is the module's
// entry point, the backend's answers and the per-layer dispatch; what each algorithm supports is cuda_support.cpp's,
// the --option readers cuda_options.h's, the spec → kernel geometry mapping layer_geometry.h's.
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/fusion.h"
#include "compute/layer_kinds.h"
#include "compute/linear_geometry.h"
#include "compute/resize.h"
#include "kernels/common/calibration.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_info.h"
#include "kernels/common/gpu_session.h"
#include "kernels/cuda/activation_kind.h"
#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/conv2d_fft.cuh"
#include "kernels/cuda/conv2d_tensor_core.cuh"
#include "kernels/cuda/copy_kernels.cuh"
#include "kernels/cuda/cuda_algorithms.h"
#include "kernels/cuda/cuda_options.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/layer_geometry.h"
#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/merge.cuh"
#include "kernels/cuda/normalization_layer.h"
#include "kernels/cuda/parametric_activation.cuh"
#include "kernels/cuda/pooling.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/resize.cuh"
#include "kernels/cuda/softmax.cuh"
#include "kernels/cuda/stored_dispatch.h"
#include "kernels/cuda/tensor_kinds.h"
#include "kernels/cuda/tensor_math.h"
#include "kernels/cuda/training/cuda_training_session.h"
#include "kernels/cuda/transposed_layers.h"
#include "kernels/cuda/volume_geometry.h"

#include <limits>
#include <type_traits>
#include <variant>
#include <vector>

namespace convscope::cuda {

namespace {

    // How a conv2d layer runs under an algorithm: the tiny-layer kernel wins over every algorithm; the fast
    // algorithms (implicit_gemm, winograd) run a stem with few input channels on its own kernel, and
    // cuda.winograd runs the implicit GEMM on the other layers Winograd cannot take. A pinned implicit-GEMM tile
    // (igemm_tile) keeps depthwise layers on the GEMM: whoever pins a tile is measuring that tile.
    enum class ConvPath { Small, SmallChannels, Depthwise, Direct, Tiled, ImplicitGemm, Winograd, Fft };

    ConvPath convPath(const std::string& algorithm, const ConvGeometry& g, int winogradTile, bool gemmTilePinned)
    {
        if (algorithm == kFft)
            return ConvPath::Fft;
        if (conv2dSmallApplies(g))
            return ConvPath::Small;
        if ((algorithm == kImplicitGemm || algorithm == kWinograd || algorithm == kTensorCore)
            && conv2dSmallChannelsApplies(g))
            return ConvPath::SmallChannels;
        if ((algorithm == kImplicitGemm || algorithm == kWinograd || algorithm == kTensorCore) && !gemmTilePinned
            && conv2dDepthwiseApplies(g))
            return ConvPath::Depthwise;
        if (algorithm == kWinograd)
            return conv2dWinogradRefusal(g, winogradTile).empty() ? ConvPath::Winograd : ConvPath::ImplicitGemm;
        if (algorithm == kImplicitGemm || algorithm == kTensorCore) // tensor_core: the layers it leaves to FP32
            return ConvPath::ImplicitGemm;
        return algorithm == kTiled ? ConvPath::Tiled : ConvPath::Direct;
    }

    class CudaSession final : public gpu::GpuSessionBase {
    public:
        CudaSession(const std::string& algorithm, const SessionOptions& options, std::shared_ptr<gpu::ArenaPool> pool)
            : GpuSessionBase("cuda", algorithm, options, std::move(pool))
            , m_winogradTile(winogradTileOf(options))
            , m_igemmTile(igemmTileOf(options))
            , m_igemmSplits(igemmSplitsOf(options))
            , m_tinyLanes(tinyLanesOf(options))
            , m_transposedGemm(transposedGemmOf(options))
            , m_transposedTile(transposedTileOf(options))
            , m_fftTile(parseFftTileOption(options.extra))
            , m_fftBatch(fftBatchOf(options))
            , m_tc(conv2dTensorCoreParseOptions(options.extra))
        {
        }

    protected:
        // The transposed convolutions' forms (transposed_layers.h): the GEMM-based algorithms' stride phases, their
        // GEMMs in FP32 only.
        TransposedMode transposedMode() const
        {
            return { algorithm() == kImplicitGemm || algorithm() == kWinograd || algorithm() == kFft
                    || algorithm() == kTensorCore,
                storage().plainFp32(), m_transposedGemm, m_transposedTile };
        }
        // cuda.tensor_core: layer i is a conv2d that the Tensor Core kernel runs, in the storage format.
        bool tensorCoreRuns(size_t i) const
        {
            const auto* c = std::get_if<Conv2d>(&spec(i));
            return algorithm() == kTensorCore && !storage().plainFp32() && c
                && conv2dTensorCoreRefusal(geometryOf(*c, shape(i))).empty();
        }
        DType storageType() const { return storage().dtype; }
        // The math a linear layer runs in: the session's where it runs in the storage format, else FP32 (its copies).
        MathMode linearMath(size_t i) const { return runsInStorage(i) ? options().math : MathMode::FP32; }
        TensorCoreDevice tcDevice() const
        {
            const cudaDeviceProp& d = deviceProperties();
            return { d.multiProcessorCount, d.major * 10 + d.minor };
        }
        // Layer i is a convolution that runs stored_conv.cuh's kernels in the storage format (stored_dispatch.h's
        // rule).
        bool storedConvolution(size_t i) const
        {
            return !storage().plainFp32() && !tensorCoreRuns(i) && isConvolution(spec(i))
                && runsNativelyInStorage(spec(i), algorithm());
        }
        // stored_conv.cuh's kernels read an FP32 copy they prepare in their scratch, not the session's typed weight.
        bool readsTypedWeight(size_t i) const override { return !storedConvolution(i); }

        size_t layerScratchBytes(size_t i) const override
        {
            if (tensorCoreRuns(i))
                return conv2dTensorCoreScratchBytes(
                    geometryOf(std::get<Conv2d>(spec(i)), shape(i)), storageType(), m_tc, tcDevice());
            if (storedConvolution(i))
                return storedConvolutionScratchBytes(spec(i), shape(i));
            if (const auto* c = std::get_if<Conv2d>(&spec(i))) {
                const ConvGeometry g = convGeometryOf(*c, shape(i));
                switch (convPath(algorithm(), g, m_winogradTile, m_igemmTile != 0)) {
                case ConvPath::ImplicitGemm:
                    return conv2dImplicitGemmScratchBytes(g, deviceProperties().multiProcessorCount);
                case ConvPath::Winograd:
                    return conv2dWinogradScratchBytes(g, m_winogradTile);
                case ConvPath::Fft: { // plans and tiling are made here, while the arena is planned
                    if (m_fft.size() < layerCount())
                        m_fft.resize(layerCount());
                    m_fft[i] = std::make_unique<Conv2dFft>(
                        g, chooseFftTiling(*c, shape(i), cudaFftTarget(m_fftTile), "cuda.fft"), m_fftBatch);
                    return m_fft[i]->scratchBytes();
                }
                default:
                    return 0;
                }
            }
            if (isTransposedConvolution(spec(i))) // the phase GEMMs' weights, scratch and staging
                return transposedScratchBytes(
                    spec(i), shape(i), transposedMode(), deviceProperties().multiProcessorCount);
            if (const auto* c = std::get_if<Conv3d>(&spec(i)))
                return conv3dPath(algorithm()) == Conv3dPath::ImplicitGemm ? conv3dImplicitGemmScratchBytes(
                           volumeGeometryOf(*c, shape(i)), deviceProperties().multiProcessorCount)
                                                                           : 0;
            if (std::holds_alternative<BatchNorm2d>(spec(i)) || std::holds_alternative<BatchNorm3d>(spec(i)))
                return 2 * static_cast<size_t>(shape(i).in.c) * sizeof(float);
            if (isNormLayer(spec(i))) // the split-row path's chunk statistics (normalization.cu)
                return normalizationScratchBytes(
                    normGeometryOf(spec(i), shape(i).in), deviceProperties().multiProcessorCount);
            if (const auto* r = std::get_if<Reduce>(&spec(i))) // a split reduction's partial results (reduce.cu)
                return reduceScratchBytes(reducePlanNchw(*r, shape(i)), deviceProperties().multiProcessorCount);
            if (const auto* l = std::get_if<Linear>(&spec(i))) { // split-K partial sums (linear.cu)
                const LinearRows r = linearRows(shape(i).in);
                return linearScratchBytes(int(r.rows), int(r.inFeatures), int(l->out_features),
                    deviceProperties().multiProcessorCount, linearMath(i));
            }
            return tensorKindScratchBytes(spec(i)); // gather's indices; 0 for the rest
        }

        void prepareLayer(size_t i, cudaStream_t stream) override
        {
            const int sms = deviceProperties().multiProcessorCount;
            if (tensorCoreRuns(i)) {
                const ConvGeometry g = geometryOf(std::get<Conv2d>(spec(i)), shape(i));
                conv2dTensorCorePrepare(g, storageType(), m_tc, tcDevice(), weightData(i), scratch(i), stream);
                setLayerNote(i,
                    conv2dTensorCoreNote(g, storageType(), m_tc, tcDevice(), std::get<Conv2d>(spec(i)).fused_residual));
                return;
            }
            if (storedConvolution(i)) {
                setLayerNote(
                    i, prepareStoredConvolution(spec(i), shape(i), storageType(), weight(i), scratch(i), stream));
                return;
            }
            if (isTransposedConvolution(spec(i))) { // once: the phase GEMMs' gathered weights and tables
                setLayerNote(
                    i, prepareTransposed(spec(i), shape(i), transposedMode(), weight(i), scratch(i), sms, stream));
                return;
            }
            std::visit(
                [&](const auto& l) {
                    using T = std::decay_t<decltype(l)>;
                    if constexpr (std::is_same_v<T, Conv2d>) {
                        const ConvGeometry g = convGeometryOf(l, shape(i));
                        switch (convPath(algorithm(), g, m_winogradTile, m_igemmTile != 0)) {
                        case ConvPath::Small:
                            // runLayer sends every algorithm to the latency-bound kernel (conv2d.cu says why).
                            setLayerNote(i, conv2dSmallNote(g));
                            break;
                        case ConvPath::SmallChannels:
                            setLayerNote(i, conv2dSmallChannelsNote(g));
                            break;
                        case ConvPath::Depthwise:
                            setLayerNote(i, conv2dDepthwiseNote(g));
                            break;
                        case ConvPath::ImplicitGemm:
                            conv2dImplicitGemmPrepare(g, weight(i), scratch(i), sms, stream);
                            setLayerNote(i,
                                (algorithm() == kWinograd
                                        ? "not Winograd (" + conv2dWinogradRefusal(g, m_winogradTile) + "): "
                                        : "")
                                    + conv2dImplicitGemmVariant(g, sms));
                            break;
                        case ConvPath::Winograd:
                            conv2dWinogradPrepare(g, m_winogradTile, scratch(i), stream);
                            setLayerNote(i, conv2dWinogradNote(g, m_winogradTile, sms));
                            break;
                        case ConvPath::Fft:
                            fftOf(i).prepare(weight(i), scratch(i), stream);
                            setLayerNote(i, fftOf(i).note());
                            break;
                        case ConvPath::Tiled:
                            setLayerNote(i,
                                "16x16 output tile x 16 channels, " + std::to_string(conv2dTiledChannelsPerStage(g))
                                    + " input channels per stage");
                            break;
                        case ConvPath::Direct:
                            setLayerNote(i, "one thread per output element");
                            break;
                        }
                    } else if constexpr (std::is_same_v<T, Conv3d>) {
                        const Conv3dGeometry g = volumeGeometryOf(l, shape(i));
                        if (conv3dPath(algorithm()) == Conv3dPath::ImplicitGemm)
                            conv3dImplicitGemmPrepare(g, scratch(i), stream);
                        setLayerNote(i, conv3dNote(algorithm(), g, sms));
                    } else if constexpr (std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, BatchNorm3d>) {
                        if (!runningMean(i) || !runningVar(i))
                            throw InputError("layer " + std::to_string(i) + " (" + layer(i).name
                                + "): " + layerTypeName(l) + " has no running_mean / running_var");
                        batchNormFold(int(shape(i).in.c), runningMean(i), runningVar(i), weight(i), bias(i), l.eps,
                            static_cast<float*>(scratch(i)), stream);
                        setLayerNote(i, "statistics folded into scale and shift at prepare");
                    } else if constexpr (isNormKind<T>) {
                        setLayerNote(i, normalizationNote(normGeometryOf(l, shape(i).in), sms));
                    } else if constexpr (std::is_same_v<T, Linear>) {
                        const LinearRows r = linearRows(shape(i).in);
                        setLayerNote(
                            i, linearNote(int(r.rows), int(r.inFeatures), int(l.out_features), sms, linearMath(i)));
                    } else if constexpr (isGeneralTensorKind<T>) {
                        setLayerNote(i, prepareTensorKind(l, shape(i), scratch(i), stream));
                    }
                },
                spec(i));
            if (!storage().plainFp32() && runsNativelyInStorage(spec(i), algorithm())) {
                const std::string note = layerNote(i);
                setLayerNote(i, (note.empty() ? "" : note + "; ") + "native " + storage().str() + " kernel, FP32 math");
            }
        }

        // ---- Storage format (stored_dispatch.h): the non-convolution kinds run in fp16/bf16/tf32 storage natively.
        // (cuda.tensor_core adds the conv2d layers its kernel runs: tensorCoreRuns.)
        bool runsInStorage(size_t i) const override
        {
            // A linear layer on the last axis of rank 3 and up reads rows that channels-last storage does not keep
            // together, and a matmul by a constant reads an FP32 operand: they run on the FP32 copies.
            if ((std::holds_alternative<Linear>(spec(i)) && !linearRowsAreBatch(shape(i).in))
                || !tensorKindRunsInStorage(spec(i)))
                return false;
            return tensorCoreRuns(i) || runsNativelyInStorage(spec(i), algorithm());
        }

        void runStored(size_t i, cudaStream_t st)
        {
            StoredLayerCall call;
            call.type = storage().dtype;
            for (size_t k = 0; k < inputCount(i); ++k)
                call.inputs.push_back(inputData(i, k));
            call.output = outputData(i);
            call.weight = weight(i);
            call.weightData = weightData(i);
            call.bias = bias(i);
            call.scratch = scratch(i);
            call.sms = deviceProperties().multiProcessorCount;
            runStoredLayer(spec(i), shape(i), call, st);
        }
        // ---- end storage format

        void runLayer(size_t i, cudaStream_t st) override
        {
            if (tensorCoreRuns(i)) { // reads and writes the storage format: no FP32 pointers here
                ConvGeometry g = geometryOf(std::get<Conv2d>(spec(i)), shape(i));
                g.residual = inputCount(i) > 1 ? inputData(i, 1) : nullptr; // a fused residual add's skip
                conv2dTensorCore(
                    g, storageType(), m_tc, tcDevice(), inputData(i), bias(i), outputData(i), scratch(i), st);
                return;
            }
            if (!storage().plainFp32() && runsInStorage(i)) { // storage format (the base's answer, asked once)
                runStored(i, st);
                return;
            }
            const LayerShape& s = shape(i);
            const float* x = input(i);
            float* y = output(i);
            std::visit(
                [&](const auto& l) {
                    using T = std::decay_t<decltype(l)>;
                    if constexpr (std::is_same_v<T, Conv2d>) {
                        ConvGeometry g = convGeometryOf(l, s);
                        g.residual = l.fused_residual ? input(i, 1) : nullptr; // a fused residual add's skip
                        const int sms = deviceProperties().multiProcessorCount;
                        switch (convPath(algorithm(), g, m_winogradTile, m_igemmTile != 0)) {
                        case ConvPath::Small:
                            conv2dSmall(g, x, weight(i), bias(i), y, st);
                            break;
                        case ConvPath::SmallChannels:
                            conv2dSmallChannels(g, x, weight(i), bias(i), y, st);
                            break;
                        case ConvPath::Depthwise:
                            conv2dDepthwise(g, x, weight(i), bias(i), y, st);
                            break;
                        case ConvPath::ImplicitGemm:
                            conv2dImplicitGemm(g, x, weight(i), bias(i), y, scratch(i), sms, st);
                            break;
                        case ConvPath::Winograd:
                            conv2dWinograd(g, m_winogradTile, x, weight(i), bias(i), y, scratch(i), sms, st);
                            break;
                        case ConvPath::Fft:
                            fftOf(i).run(x, bias(i), y, st, static_cast<const float*>(g.residual));
                            break;
                        case ConvPath::Tiled:
                            conv2dTiled(g, x, weight(i), bias(i), y, st);
                            break;
                        case ConvPath::Direct:
                            conv2dDirect(g, x, weight(i), bias(i), y, st);
                            break;
                        }
                    } else if constexpr (std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, ConvTranspose3d>) {
                        runTransposed(spec(i), s, transposedMode(), x, weight(i), bias(i), y, scratch(i),
                            deviceProperties().multiProcessorCount, st);
                    } else if constexpr (std::is_same_v<T, MaxPool2d>) {
                        maxPool2d(poolGeometry(s, l.kernel_size, l.effectiveStride(), l.dilation), x, y, st);
                    } else if constexpr (std::is_same_v<T, AvgPool2d>) {
                        PoolGeometry g = poolGeometry(s, l.kernel_size, l.effectiveStride(), { 1, 1 });
                        g.countIncludePad = l.count_include_pad;
                        g.divisorOverride = l.divisor_override ? int(*l.divisor_override) : 0;
                        avgPool2d(g, x, y, st);
                    } else if constexpr (std::is_same_v<T, GlobalAvgPool2d>) {
                        globalAvgPool2d(int(s.in.n * s.in.c), int(s.in.h * s.in.w), x, y, st);
                    } else if constexpr (std::is_same_v<T, BatchNorm2d>) {
                        batchNorm2d(int(s.in.n), int(s.in.c), int(s.in.h * s.in.w), x,
                            static_cast<const float*>(scratch(i)), y, st);
                    } else if constexpr (std::is_same_v<T, Linear>) {
                        const LinearRows r = linearRows(s.in); // the last axis of any rank
                        linear(int(r.rows), int(r.inFeatures), int(l.out_features), x, weight(i), bias(i), y,
                            scratch(i), deviceProperties().multiProcessorCount, st);
                    } else if constexpr (isGeneralTensorKind<T>) {
                        const std::vector<const float*> xs = inputs(i);
                        runTensorKind(l, s, DType::F32, false, { xs.begin(), xs.end() }, weight(i), scratch(i), y, st);
                    } else if constexpr (isSoftmaxKind<T>) {
                        const AxisView v = softmaxView(s.in, l.dim);
                        softmaxAxis(v.outer, v.size, v.inner, isLogSoftmax<T>, DType::F32, x, y, st);
                    } else if constexpr (std::is_same_v<T, Reduce>) {
                        reduceTensor(reducePlanNchw(l, s), l.op, DType::F32, x, y, scratch(i),
                            deviceProperties().multiProcessorCount, st);
                    } else if constexpr (std::is_same_v<T, Flatten> || std::is_same_v<T, Reshape>) { // view, or copies
                        CONVSCOPE_CUDA_CHECK(
                            cudaMemcpyAsync(y, x, size_t(s.out.numel()) * 4, cudaMemcpyDeviceToDevice, st));
                    } else if constexpr (std::is_same_v<T, Identity> || std::is_same_v<T, Dropout>) {
                        // Views: never called (the session aliases the buffer).
                    } else if constexpr (std::is_same_v<T, Transpose>) {
                        transposeDims(x, s.in.dims(), wrappedDims(l, s.in.ndim()), 4, y, st);
                    } else if constexpr (
                        std::is_same_v<T,
                            ReLU> || std::is_same_v<T, LeakyReLU> || std::is_same_v<T, Sigmoid> || std::is_same_v<T, Tanh> || std::is_same_v<T, ELU> || std::is_same_v<T, ReLU6> || std::is_same_v<T, Hardswish> || std::is_same_v<T, Hardsigmoid> || std::is_same_v<T, SiLU>) {
                        float param = 0;
                        const ActivationKind kind = activationKindOf(l, &param);
                        activation(kind, param, s.in.numel(), x, y, st);
                    } else if constexpr (isTensorMathKind<T>) {
                        runTensorMath(l, s, inputs(i), weight(i), y, st);
                    } else if constexpr (std::is_same_v<T, Hardtanh>) {
                        hardtanh(static_cast<float>(l.min_val), static_cast<float>(l.max_val), s.in.numel(), x, y, st);
                    } else if constexpr (std::is_same_v<T, PReLU>) {
                        prelu(weight(i), l.num_parameters, s.in.n, s.in.c, s.in.d * s.in.h * s.in.w, x, y, st);
                    } else if constexpr (std::is_same_v<T, Add>) {
                        addTensors(inputs(i), s.out.numel(), y, st);
                    } else if constexpr (std::is_same_v<T, Mul>) {
                        runMul(i, y, st);
                    } else if constexpr (std::is_same_v<T, Concat>) {
                        std::vector<long long> channels;
                        for (const Shape& in : s.ins)
                            channels.push_back(in.c);
                        // inputs(i) returns a fresh vector: one copy, or begin and end would be of two vectors.
                        if (const int64_t dim = wrappedDim(l, s.out.ndim()); dim != 1) {
                            const auto xs = inputs(i);
                            concatAxis({ xs.begin(), xs.end() }, s.ins, s.out, dim, false, 4, y, st);
                        } else
                            concatChannels(inputs(i), channels, s.out.n, s.out.d * s.out.h * s.out.w, y, st);
                    } else if constexpr (std::is_same_v<T, Pad>) {
                        pad2d(x, s.in.n * s.in.c, int(s.in.h), int(s.in.w), int(l.padding[0]), int(l.padding[2]),
                            int(s.out.h), int(s.out.w), padMode(l.mode), static_cast<float>(l.value), y, st);
                    } else if constexpr (std::is_same_v<T, Resize>) {
                        resizeNchw(resizePlan(l, s), s.in.n * s.in.c, x, y, st);
                    } else if constexpr (std::is_same_v<T, ChannelShuffle>) {
                        channelShuffle(x, s.in.n, s.in.c, l.groups, s.in.d * s.in.h * s.in.w, 4, y, st);
                    } else if constexpr (std::is_same_v<T, Slice>) {
                        const AxisRuns r = axisRuns(s.in, l.dim, false);
                        sliceAxis(x, r.outer, r.size, r.inner, l.start, l.end, 4, y, st);
                    } else if constexpr (std::is_same_v<T, Conv3d>) {
                        const Conv3dGeometry g = volumeGeometryOf(l, s);
                        if (conv3dPath(algorithm()) == Conv3dPath::ImplicitGemm)
                            conv3dImplicitGemm(
                                g, x, weight(i), bias(i), y, scratch(i), deviceProperties().multiProcessorCount, st);
                        else
                            conv3dDirect(g, x, weight(i), bias(i), y, st);
                    } else if constexpr (std::is_same_v<T, MaxPool3d>) {
                        maxPool3d(pool3dGeometry(s, l.kernel_size, l.effectiveStride(), l.dilation), x, y, st);
                    } else if constexpr (std::is_same_v<T, AvgPool3d>) {
                        Pool3dGeometry g = pool3dGeometry(s, l.kernel_size, l.effectiveStride(), { 1, 1, 1 });
                        g.countIncludePad = l.count_include_pad;
                        g.divisorOverride = l.divisor_override ? int(*l.divisor_override) : 0;
                        avgPool3d(g, x, y, st);
                    } else if constexpr (std::is_same_v<T, GlobalAvgPool3d>) {
                        globalAvgPool2d(int(s.in.n * s.in.c), int(s.in.d * s.in.h * s.in.w), x, y, st);
                    } else if constexpr (std::is_same_v<T, BatchNorm3d>) {
                        batchNorm2d(int(s.in.n), int(s.in.c), int(s.in.d * s.in.h * s.in.w), x,
                            static_cast<const float*>(scratch(i)), y, st);
                    } else if constexpr (isNormKind<T>) {
                        normalization(normGeometryOf(l, s.in), x, weight(i), bias(i), y, scratch(i),
                            deviceProperties().multiProcessorCount, st);
                    } else {
                        static_assert(dependent_false<T>, "cuda backend: runLayer has no branch for a layer kind");
                    }
                },
                spec(i));
        }

        std::vector<const float*> inputs(size_t i) const
        {
            std::vector<const float*> xs;
            for (size_t k = 0; k < inputCount(i); ++k)
                xs.push_back(input(i, k));
            return xs;
        }

        // mul: a gate of [N, C, 1, 1] (or [N, C, 1, 1, 1]; either input) is broadcast over the other's (D·)H·W.
        void runMul(size_t i, float* y, cudaStream_t st) const
        {
            const LayerShape& s = shape(i);
            const bool gateFirst = s.ins[0] != s.out;
            const float* full = input(i, gateFirst ? 1 : 0);
            const float* other = input(i, gateFirst ? 0 : 1);
            const bool broadcast = s.ins[gateFirst ? 0 : 1] != s.out;
            mulTensors(full, other, s.out.numel(), broadcast ? s.out.d * s.out.h * s.out.w : 0, y, st);
        }

        std::map<std::string, std::string> extraMetadata() const override
        {
            std::map<std::string, std::string> m;
            m["math"] = options().math == MathMode::FP32 ? "fp32"
                                                         : mathModeName(options().math) + " storage (" + storage().str()
                    + "); layers without a kernel for it run their FP32 kernels on FP32 copies (layer notes say which)";
            m["kernels"] = "ConvScope CUDA kernels (FP32 FFMA)";
            if (algorithm() == kWinograd)
                m["winograd_tile"] = std::to_string(m_winogradTile);
            if (algorithm() == kTensorCore)
                m["math"] = mathModeName(options().math)
                    + " (conv2d on Tensor Cores: wgmma on sm_90, mma.sync elsewhere, " + storage().str()
                    + " storage, FP32 sums; the layer notes say which kernel and tile)";
            return m;
        }

    private:
        // A conv2d layer's geometry with the session's implicit GEMM tile override.
        ConvGeometry convGeometryOf(const Conv2d& c, const LayerShape& s) const
        {
            ConvGeometry g = geometryOf(c, s);
            g.igemmTile = m_igemmTile;
            g.igemmSplits = m_igemmSplits;
            g.tinyLanes = m_tinyLanes;
            g.igemmPipe = 1; // our scratch is sized and prepared for whichever implicit GEMM variant runs
            return g;
        }

        Conv2dFft& fftOf(size_t i) const
        {
            if (i >= m_fft.size() || !m_fft[i])
                throw Error("cuda.fft: layer " + std::to_string(i) + " has no FFT plan (planning did not run)");
            return *m_fft[i];
        }

        int m_winogradTile;
        int m_igemmTile;
        int m_igemmSplits;
        int m_tinyLanes;
        int m_transposedGemm, m_transposedTile; // --option transposed_gemm, transposed_tile (cuda_options.h)
        int64_t m_fftTile;
        int m_fftBatch;
        TensorCoreOptions m_tc; // cuda.tensor_core's --option tc_kernel / tc_tile / tc_kbytes (conv2d_tensor_core.cuh)
        mutable std::vector<std::unique_ptr<Conv2dFft>> m_fft; // cuda.fft: per conv2d layer, made in planning
    };

    class CudaBackend final : public Backend {
    public:
        std::string name() const override { return "cuda"; }
        std::string description() const override
        {
            return "our CUDA kernels: direct, tiled (shared memory), implicit GEMM, Winograd and FFT (cuFFT) "
                   "convolutions";
        }
        std::vector<AlgorithmInfo> algorithms() const override
        {
            return { { kDirect, "one thread per output element, straight from global memory" },
                { kTiled, "input tiles with their halo in shared memory, reused across 16 output channels" },
                { kImplicitGemm,
                    "implicit GEMM: register tiling, a cp.async pipeline or double-buffered shared memory" },
                { kWinograd,
                    "Winograd F(4x4,3x3) on 3x3 stride-1 layers (F(2x2,3x3) with --option winograd_tile=2): "
                    "transforms and 36 batched GEMMs, 4x fewer multiplies; implicit GEMM on other layers" },
                { kFft,
                    "stride-1 conv2d by FFT: cuFFT batched r2c/c2r over overlap-save tiles, our kernels for the "
                    "padding, the per-frequency channel sums (a complex GEMM per frequency) and the crop" },
                { kTensorCore,
                    "implicit GEMM on Tensor Cores (--math tf32, fp16 or bf16), FP32 sums, channels-last: wgmma on "
                    "sm_90 GPUs, its operands copied by TMA (or cp.async where TMA does not fit the layer), mma.sync "
                    "elsewhere (--option tc_kernel=tma|wgmma|mma, tc_tile=..., tc_kbytes=64|128); grouped, "
                    "depthwise, transposed and 3-D convolutions run direct kernels in the same format" } };
        }
        Availability availability() const override { return gpu::queryAvailability(); }
        bool fusesActivation(FusedActivation::Kind) const override { return true; }
        bool fusesResidual() const override { return true; } // every conv2d epilogue: ConvGeometry::residual
        // The 3-D kinds have kernels of their own (conv3d.cuh, pooling3d.cuh); the element-wise, merge and per-channel
        // kernels count D·H·W; resize resizes D, H and W. Pad is 2-D only (shape inference refuses it a volume).
        bool takesVolumes(const LayerSpec&) const override { return true; }

        // The roofline's ceilings for our kernels: the FP32 FMA peak a kernel reaches, the copy bandwidth, and cuBLAS's
        // TF32/FP16/BF16 GEMM rates, the Tensor Core ceilings our Tensor Core kernel is compared against.
        std::optional<DeviceCeilings> calibrate(const SessionOptions&) override
        {
            gpu::requireUsable();
            const gpu::Measured compute = gpu::measureFmaPeak(), copy = gpu::measureCopyBandwidth();
            DeviceCeilings c = gpu::deviceCeilings(compute, copy);
            gpu::addTensorCoreCeilings(c);
            return c;
        }

        Support supports(const std::string& algorithm, const LayerSpec& spec, const LayerShape& shape) const override
        {
            return cudaSupport(algorithm, spec, shape);
        }

        std::unique_ptr<BackendSession> createSession(
            const std::string& algorithm, const SessionOptions& options) override
        {
            if (!isKnownAlgorithm(algorithm))
                throw UnsupportedError("cuda." + algorithm
                    + ": unknown algorithm (direct, tiled, implicit_gemm, winograd, fft, tensor_core)");
            if (algorithm == kTensorCore && options.math == MathMode::FP32)
                throw UnsupportedError("cuda.tensor_core runs on Tensor Cores: use --math tf32, fp16 or bf16");
            return std::make_unique<CudaSession>(algorithm, options, m_pool);
        }

        std::unique_ptr<TrainingSession> createTrainingSession(const std::string& a, const SessionOptions& o) override
        {
            return makeTrainingSession(a, o); // training/cuda_training_session.h: FP32, our kernels only
        }
        std::map<std::string, std::string> info() const override
        {
            auto m = gpu::deviceInfo();
            const Availability a = gpu::queryAvailability();
            if (!a.available)
                m["unavailable"] = a.reason;
            return m;
        }

    private:
        std::shared_ptr<gpu::ArenaPool> m_pool = std::make_shared<gpu::ArenaPool>();
    };
} // namespace

} // namespace convscope::cuda

extern "C" __attribute__((visibility("default"))) int convscope_register_module(
    convscope::BackendRegistry* registry, int abiVersion)
{
    return convscope::registerModuleBackend(registry, abiVersion, "cuda", "our CUDA kernels", "libconvscope_cuda.so",
        [] { return std::make_shared<convscope::cuda::CudaBackend>(); });
}
