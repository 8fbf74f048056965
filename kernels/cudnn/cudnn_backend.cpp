// The "cudnn" backend: NVIDIA's library as the vendor baseline every custom kernel is measured against.
// conv2d through the legacy descriptor API with `auto` (timed choice) or a pinned algorithm; the other layers
// through cuDNN's pooling, batch-norm, activation and softmax calls; linear through cuBLAS. This file is the
// module's entry point and the backend's answers (availability, supports, info, the algorithm explorer).
//
// The module links libcudnn.so.9 and libcublas directly, so on a machine without them the registry's dlopen
// fails and the backend is listed as unavailable with the loader's message, which names libcudnn.so.9.
#include "compute/backend_registry.h"
#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/normalization.h"
#include "kernels/common/calibration.h"
#include "kernels/common/device_info.h"
#include "kernels/common/gpu_session.h"
#include "kernels/cuda/tensor_kinds.h"
#include "kernels/cudnn/conv_plan.h"
#include "kernels/cudnn/cudnn_session.h"
#include "kernels/cudnn/cudnn_support.h"
#include "kernels/cudnn/training_session.h"
#include "kernels/cudnn/volume_plan.h"

#include <limits>
#include <mutex>
#include <variant>

namespace convscope::cudnn {

namespace {
    constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max();

    // cuDNN itself usable (beyond a driver and a device): the library's major version matches the headers we
    // were built with, and a handle can be created. Checked once per process.
    Availability libraryAvailability()
    {
        static Availability result;
        static std::once_flag once;
        std::call_once(once, [] {
            const size_t v = cudnnGetVersion();
            if (v / 10000 != CUDNN_MAJOR) {
                result = { false,
                    "libcudnn.so.9 reports version " + cudnnVersionString() + " but this module was built for cuDNN "
                        + std::to_string(CUDNN_MAJOR) + ".x; install cuDNN " + std::to_string(CUDNN_MAJOR) };
                return;
            }
            try {
                threadHandles();
                result = { true, {} };
            } catch (const std::exception& e) {
                result = { false, std::string("cuDNN cannot start: ") + e.what() };
            }
        });
        return result;
    }

    class CudnnBackend final : public Backend {
    public:
        std::string name() const override { return "cudnn"; }
        std::string description() const override
        {
            return "NVIDIA cuDNN " + cudnnVersionString() + " (legacy descriptor API; cuBLAS for linear layers)";
        }
        std::vector<AlgorithmInfo> algorithms() const override
        {
            std::vector<AlgorithmInfo> out;
            for (const auto& a : algorithmNames())
                out.push_back({ a.name, a.description });
            return out;
        }
        Availability availability() const override
        {
            const Availability device = gpu::queryAvailability();
            if (!device.available)
                return device;
            return libraryAvailability();
        }

        // The roofline's ceilings for the vendor library: cuBLAS SGEMM 8192³ in pedantic FP32 (no TF32), the rate
        // issue 9's efficiency goal is measured against, the copy bandwidth, and the Tensor Core ceilings (cuBLAS
        // TF32, FP16 and BF16 GEMMs) that runs in those math modes are measured against.
        std::optional<DeviceCeilings> calibrate(const SessionOptions&) override
        {
            gpu::requireUsable();
            const gpu::Measured compute = measureSgemm(), copy = gpu::measureCopyBandwidth();
            DeviceCeilings c = gpu::deviceCeilings(compute, copy);
            gpu::addTensorCoreCeilings(c, threadHandles().cublas);
            return c;
        }

        // The 3-D window kinds run on Nd descriptors (volume_plan.h); everything else describes a volume as
        // [N, C, D·H, W], which the element-wise, per-channel and over-channel calls see the same way.
        bool takesVolumes(const LayerSpec&) const override { return true; }

        // cudnnActivationForward has no leaky ReLU; everything else can follow a convolution inside its layer.
        bool fusesActivation(FusedActivation::Kind kind) const override
        {
            return kind != FusedActivation::Kind::LeakyReLU;
        }
        // A fused residual add: the z operand of cudnnConvolutionBiasActivationForward where that call runs, else one
        // add inside the layer (conv_layers.h, native_layers.h).
        bool fusesResidual() const override { return true; }

        Support supports(const std::string& algorithm, const LayerSpec& spec, const LayerShape& shape) const override
        {
            const std::string sel = "cudnn." + algorithm;
            const auto pinned = algorithmFromName(algorithm);
            if (algorithm != "auto" && !pinned)
                return { false, sel + ": unknown algorithm" };
            if (!shape.ok)
                return { false, sel + ": " + shape.error };
            try {
                if (shape.in.numel() > kMaxElements || shape.out.numel() > kMaxElements)
                    return { false, sel + ": tensors of more than 2^31 elements are unsupported (cuDNN's int sizes)" };
            } catch (const std::exception& e) {
                return { false, sel + ": " + e.what() };
            }
            return std::
                visit(
                    [&](const auto& l) -> Support {
                        using T = std::decay_t<decltype(l)>;
                        // Every kind the session dispatches (cudnn_session.cpp): a new kind must be decided on here.
                        static_assert(
                            std::is_same_v<T, Conv2d> || std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, MaxPool2d> || std::is_same_v<T, AvgPool2d> || std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, ReLU> || std::is_same_v<T, LeakyReLU> || std::is_same_v<T, Sigmoid> || std::is_same_v<T, Tanh> || std::is_same_v<T, ELU> || std::is_same_v<T, ReLU6> || std::is_same_v<T, Hardswish> || std::is_same_v<T, Hardsigmoid> || std::is_same_v<T, SiLU> || std::is_same_v<T, Hardtanh> || std::is_same_v<T, PReLU> || std::is_same_v<T, Flatten> || std::is_same_v<T, Linear> || std::is_same_v<T, Softmax> || std::is_same_v<T, Add> || std::is_same_v<T, Mul> || std::is_same_v<T, Concat> || std::is_same_v<T, Pad> || std::is_same_v<T, Resize> || std::is_same_v<T, Identity> || std::is_same_v<T, Dropout> || std::is_same_v<T, ChannelShuffle> || std::is_same_v<T, Slice> || std::is_same_v<T, Reshape> || std::is_same_v<T, Transpose> || isVolumeKind<T> || isElementwiseMathKind<T> || std::is_same_v<T, Binary> || isSoftmaxKind<T> || std::is_same_v<T, Reduce> || isNormKind<T> || cuda::isGeneralTensorKind<T>,
                            "cudnn backend: supports() does not know a layer kind");
                        if constexpr (std::is_same_v<T, Conv3d>) {
                            try {
                                const Conv3dLayout layout = conv3dLayout(l, shape);
                                if (pinned)
                                    if (std::string why
                                        = conv3dPinnedRefusal(threadHandles().cudnn, layout, ConvOptions {}, *pinned);
                                        !why.empty())
                                        return { false, why };
                            } catch (const std::exception& e) {
                                return { false, sel + ": " + e.what() };
                            }
                        } else if constexpr (std::is_same_v<T, ConvTranspose3d>) {
                            try {
                                (void)convTranspose3dLayout(l, shape);
                            } catch (const std::exception& e) {
                                return { false, sel + ": " + e.what() };
                            }
                        }
                        if constexpr (std::is_same_v<T, AvgPool2d>) {
                            if (l.divisor_override)
                                return { false,
                                    sel
                                        + ": avgpool2d with divisor_override is unsupported: cuDNN's pooling divides "
                                          "by the window (with or without padding) and takes no divisor" };
                        } else if constexpr (std::is_same_v<T, Conv2d>) {
                            try {
                                const ConvLayout layout = convLayout(l, shape, false);
                                if (pinned) {
                                    const std::string why = pinnedUnsupportedReason(
                                        threadHandles().cudnn, layout, ConvOptions {}, *pinned);
                                    if (!why.empty())
                                        return { false, why };
                                }
                            } catch (const std::exception& e) {
                                return { false, sel + ": " + e.what() };
                            }
                        } else if constexpr (std::is_same_v<T, ConvTranspose2d>) {
                            try {
                                (void)convTransposeLayout(l, shape);
                            } catch (const std::exception& e) {
                                return { false, sel + ": " + e.what() };
                            }
                        }
                        return { true, {} };
                    },
                    spec);
        }

        std::unique_ptr<BackendSession> createSession(
            const std::string& algorithm, const SessionOptions& options) override
        {
            if (algorithm != "auto" && !algorithmFromName(algorithm))
                throw UnsupportedError("cudnn." + algorithm + ": unknown algorithm");
            const Availability a = availability();
            if (!a.available)
                throw UnsupportedError("cudnn is unavailable: " + a.reason);
            return makeSession(algorithm, options, m_pool);
        }

        // The training step (training_session.h): cudnn.auto, or a pinned forward algorithm (the backward algorithms
        // are cudnnFind's either way); FP32 only.
        std::unique_ptr<TrainingSession> createTrainingSession(
            const std::string& algorithm, const SessionOptions& options) override
        {
            if (algorithm != "auto" && !algorithmFromName(algorithm))
                throw UnsupportedError("cudnn." + algorithm + ": unknown algorithm");
            const Availability a = availability();
            if (!a.available)
                throw UnsupportedError("cudnn is unavailable: " + a.reason);
            return makeTrainingSession(algorithm, options);
        }

        std::map<std::string, std::string> info() const override
        {
            auto m = gpu::deviceInfo();
            m["cudnn"] = cudnnVersionString();
            m["cudnn_compiled"] = std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "."
                + std::to_string(CUDNN_PATCHLEVEL);
            m["cublas"] = cublasVersionString();
            const Availability a = availability();
            if (!a.available)
                m["unavailable"] = a.reason;
            return m;
        }

        std::string explore(
            const Network& net, const ShapeReport& shapes, size_t layer, const SessionOptions& options) override
        {
            const Availability a = availability();
            if (!a.available)
                throw UnsupportedError("cudnn is unavailable: " + a.reason);
            if (layer < net.layers.size() && std::holds_alternative<Conv3d>(net.layers[layer].spec))
                return exploreConvolution3d(net, shapes, layer, options);
            return exploreConvolution(net, shapes, layer, options);
        }

    private:
        std::shared_ptr<gpu::ArenaPool> m_pool = std::make_shared<gpu::ArenaPool>();
    };
} // namespace

} // namespace convscope::cudnn

extern "C" __attribute__((visibility("default"))) int convscope_register_module(
    convscope::BackendRegistry* registry, int abiVersion)
{
    return convscope::registerModuleBackend(registry, abiVersion, "cudnn", "NVIDIA cuDNN", "libconvscope_cudnn.so",
        [] { return std::make_shared<convscope::cudnn::CudnnBackend>(); });
}
