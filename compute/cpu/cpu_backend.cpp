// The built-in CPU backend. One session runs the whole network on the host: prepare() keeps the network
// (its parameters are shared, immutable tensors, so this copies pointers, not weights) and allocates every
// layer's output once, so a timed pass measures compute only, never allocation. Each layer runs inside an
// NVTX range named like the GUI's layer list ("cpu.im2col_gemm · L3 conv2d 6→16 k5") so a Nsight Systems
// capture of a CPU run lines up with a GPU one.
//
// Algorithms: "direct" runs the readable reference loops (direct::) for every layer; "im2col_gemm" runs the
// convolutions through im2col / col2im + OpenBLAS and every other layer through the threaded fast:: loops;
// "tap_gemm" is im2col_gemm except that stride-1 conv2d layers run as one sgemm per kernel tap on the padded input;
// "fft" is im2col_gemm except that conv2d layers run as FFT convolutions (conv2d_fft.cpp), whose state (kernel
// spectra, FFTW plans) is made in prepare().
#include "compute/cpu/cpu_backend.h"

#include "compute/fusion.h"

#include "compute/cpu/conv2d_fft.h"
#include "compute/cpu/conv2d_tap_avx512.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/layer_clock.h"
#include "compute/cpu_threads.h"
#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/nvtx.h"
#include "compute/reduce.h"
#include "compute/resize.h"
#include "compute/training/cpu_training_session.h"

#include <cblas.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>
#include <type_traits>
#include <variant>

namespace convscope {

namespace {

    const char* const kDirect = "direct";
    const char* const kIm2colGemm = "im2col_gemm";
    const char* const kTapGemm = "tap_gemm";
    const char* const kFft = "fft";
    bool known(const std::string& algorithm)
    {
        return algorithm == kDirect || algorithm == kIm2colGemm || algorithm == kTapGemm || algorithm == kFft;
    }

    std::string openblasConfig()
    {
        const char* config = openblas_get_config();
        return config ? std::string(config) : std::string("unknown");
    }

    std::string cpuModelName()
    {
        std::ifstream cpuinfo("/proc/cpuinfo");
        std::string line;
        while (std::getline(cpuinfo, line)) {
            if (line.rfind("model name", 0) == 0) {
                const auto colon = line.find(':');
                if (colon != std::string::npos && colon + 2 <= line.size())
                    return line.substr(colon + 2);
            }
        }
        return "unknown CPU";
    }

    // "conv2d 6→16 k5" for convolutions (the input channels come from shape inference), layerSummary otherwise.
    std::string rangeLabel(const Layer& layer, const LayerShape& shape)
    {
        std::string summary = layerSummary(layer.spec);
        if (isConvolution(layer.spec)) {
            const auto arrow = summary.find(" →");
            if (arrow != std::string::npos)
                summary.insert(arrow + 1, std::to_string(shape.in.c));
        }
        return summary;
    }

    const Tensor& requireParameter(const std::shared_ptr<const Tensor>& p, const Layer& layer, const char* what)
    {
        if (!p)
            throw Error("layer " + layer.name + " has no " + what
                + " tensor: the network's parameters were not materialised before the run");
        return *p;
    }

    // Missing parameters are found in prepare(), before anything is timed, rather than half-way through a pass.
    void checkParameters(const Layer& layer)
    {
        std::visit(
            [&](const auto& spec) {
                using Spec = std::decay_t<decltype(spec)>;
                if constexpr (
                    std::is_same_v<Spec,
                        Conv2d> || std::is_same_v<Spec, ConvTranspose2d> || std::is_same_v<Spec, Linear> || std::is_same_v<Spec, Conv3d> || std::is_same_v<Spec, ConvTranspose3d>) {
                    requireParameter(layer.weight, layer, "weight");
                    if (spec.bias)
                        requireParameter(layer.bias, layer, "bias");
                } else if constexpr (std::is_same_v<Spec, PReLU>) {
                    requireParameter(layer.weight, layer, "weight (the slopes)");
                } else if constexpr (std::is_same_v<Spec, BatchNorm2d> || std::is_same_v<Spec, BatchNorm3d>) {
                    requireParameter(layer.runningMean, layer, "running_mean");
                    requireParameter(layer.runningVar, layer, "running_var");
                }
            },
            layer.spec);
    }

    class CpuSession final : public BackendSession {
    public:
        CpuSession(std::string algorithm, const SessionOptions& options)
            : m_algorithm(std::move(algorithm))
            , m_fast(m_algorithm != kDirect)
            , m_taps(m_algorithm == kTapGemm)
            , m_useFft(m_algorithm == kFft)
            , m_options(options)
            , m_clock(options)
        {
        }

        void prepare(const Network& net, const ShapeReport& shapes) override
        {
            m_prepared = false; // until this prepare completes (cpu.fft's plans can fail half-way)
            enterCpuThreadPolicy(); // cpu.fft sizes its buffers by the team
            if (!shapes.ok())
                throw InputError("cpu: the network has a shape error: " + shapes.firstError());
            if (shapes.layers.size() != net.layers.size())
                throw Error("cpu: the shape report does not belong to this network ("
                    + std::to_string(shapes.layers.size()) + " shapes for " + std::to_string(net.layers.size())
                    + " layers)");
            for (size_t i = 0; i < shapes.layers.size(); ++i)
                if (shapes.layers[i].sources.empty())
                    throw Error("cpu: layer " + std::to_string(i) + " has no resolved inputs");
            int64_t bytes = 0;
            for (const LayerShape& s : shapes.layers)
                bytes += s.out.bytes();
            if (m_options.memoryBudgetBytes > 0 && bytes > m_options.memoryBudgetBytes)
                throw OutOfMemoryError("cpu: the layer outputs need " + std::to_string(bytes >> 20)
                    + " MiB but the memory budget is " + std::to_string(m_options.memoryBudgetBytes >> 20) + " MiB");

            for (const Layer& layer : net.layers)
                checkParameters(layer);

            m_layers = net.layers;
            m_shapes = shapes;
            m_outputs.clear();
            m_rangeNames.clear();
            m_fft.clear();
            m_fft.resize(m_layers.size());
            if (m_useFft) // kernel spectra and plans, untimed
                for (size_t i = 0; i < m_layers.size(); ++i)
                    if (const auto* conv = std::get_if<Conv2d>(&m_layers[i].spec))
                        m_fft[i] = std::make_unique<cpu::FftConv2d>(*conv, shapes.layers[i],
                            requireParameter(m_layers[i].weight, m_layers[i], "weight"),
                            parseFftTileOption(m_options.extra));
            // cpu.tap_gemm's weights in the AVX-512 tile's order, once (as cpu.fft's spectra and oneDNN's reordered
            // weights): repacking them every pass cost more than a 7×7 layer's products at batch 1.
            m_tapWeights.assign(m_layers.size(), {});
            if (m_taps && cpu::fast::avx512::haveAvx512())
                for (size_t i = 0; i < m_layers.size(); ++i)
                    if (const auto* conv = std::get_if<Conv2d>(&m_layers[i].spec);
                        conv && cpu::fast::conv2dTapAvx512Applies(*conv, shapes.layers[i].in.c, shapes.layers[i].out.c))
                        m_tapWeights[i] = cpu::fast::packTapWeights(
                            requireParameter(m_layers[i].weight, m_layers[i], "weight"), *conv);
            m_outputs.reserve(m_layers.size());
            // "poison_outputs" (the tests): NaN until a kernel writes, so an element it forgets fails the comparison.
            const auto poison = m_options.extra.find("poison_outputs");
            for (size_t i = 0; i < m_layers.size(); ++i) {
                m_outputs.emplace_back(shapes.layers[i].out);
                if (poison != m_options.extra.end() && poison->second == "1")
                    m_outputs.back().fill(std::numeric_limits<float>::quiet_NaN());
                m_rangeNames.push_back("cpu." + m_algorithm + " · L" + std::to_string(i) + " "
                    + rangeLabel(m_layers[i], shapes.layers[i]));
            }
            m_prepared = true;
            m_ran = false;
        }

        PassTiming runPass(const Tensor& input) override
        {
            if (!m_prepared)
                throw Error("cpu: runPass called before prepare");
            enterCpuThreadPolicy(); // this thread's team: a GUI worker thread starts with OpenMP's default
            const Shape& want = m_shapes.input;
            const Shape& got = input.shape();
            if (got.n != want.n || got.c != want.c || got.d != want.d || got.h != want.h || got.w != want.w)
                throw InputError("cpu: the input is " + got.str() + " but the network expects " + want.str());

            PassTiming timing;
            timing.layerMs.reserve(m_layers.size());
            std::vector<const Tensor*> ins;
            for (size_t i = 0; i < m_layers.size(); ++i) {
                // Every output stays allocated for fetchOutput, so a skip's tensor is simply still there.
                ins.clear();
                for (int src : m_shapes.layers[i].sources)
                    ins.push_back(src < 0 ? &input : &m_outputs[size_t(src)]);
                const nvtx::Range range(m_rangeNames[i], "cpu");
                const double start = m_clock.nowMs();
                runLayer(i, ins, m_outputs[i]);
                timing.layerMs.push_back(m_clock.nowMs() - start);
                layerDone(i); // after the clock stopped: progress for a person watching
            }
            m_ran = true;
            return timing;
        }

        Tensor fetchOutput(size_t layer, double* ms) override
        {
            if (layer >= m_outputs.size())
                throw Error("cpu: no layer " + std::to_string(layer) + " (the network has "
                    + std::to_string(m_outputs.size()) + ")");
            if (!m_ran)
                throw Error("cpu: fetchOutput called before a pass has run");
            const auto start = std::chrono::steady_clock::now();
            Tensor copy = m_outputs[layer].clone();
            if (ms)
                *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            return copy;
        }

        std::string layerNote(size_t layer) const override
        {
            if (!m_fast || layer >= m_layers.size())
                return {};
            if (const auto* conv = std::get_if<Conv2d>(&m_layers[layer].spec)) {
                if (m_fft[layer])
                    return m_fft[layer]->note();
                if (m_taps) {
                    const LayerShape& shape = m_shapes.layers[layer];
                    if (cpu::fast::avx512::haveAvx512())
                        return cpu::fast::conv2dTapAvx512Applies(*conv, shape.in.c, shape.out.c)
                            ? "per-tap products on the zero-padded input, AVX-512 register tile"
                            : "as im2col_gemm (unequal strides, or too few channels per group for a 32-channel tile)";
                    return cpu::fast::conv2dTapGemmApplies(*conv, shape.in.c)
                        ? "per-tap GEMM on the zero-padded input (OpenBLAS: this CPU has no AVX-512)"
                        : "as im2col_gemm (stride > 1, < 16 input channels per group, or 1×1 without padding)";
                }
                const Padding2d& p = m_shapes.layers[layer].resolvedPadding;
                const bool pointwise = conv->kernel_size == Pair { 1, 1 } && conv->stride == Pair { 1, 1 } && p.top == 0
                    && p.bottom == 0 && p.left == 0 && p.right == 0;
                return pointwise ? "1×1: sgemm straight on the input, no im2col" : "im2col + OpenBLAS sgemm";
            }
            if (std::holds_alternative<ConvTranspose2d>(m_layers[layer].spec))
                return "OpenBLAS sgemm (Wᵀ·X) + col2im";
            if (std::holds_alternative<Linear>(m_layers[layer].spec))
                return "OpenBLAS sgemm";
            if (std::holds_alternative<Conv3d>(m_layers[layer].spec))
                return "vol2col + OpenBLAS sgemm (every fast CPU algorithm runs volumes this way)";
            if (std::holds_alternative<ConvTranspose3d>(m_layers[layer].spec))
                return "OpenBLAS sgemm (Wᵀ·X) + col2vol";
            return {};
        }

        std::map<std::string, std::string> metadata() const override
        {
            return {
                { "device", cpuModelName() },
                { "threads", std::to_string(cpuThreadCount()) },
                { "openblas", openblasConfig() + " (core " + blasCoreName() + ")" },
                { "openblas_threads", "1 per OpenMP thread (built " + blasThreading() + ")" },
                { "clock", m_clock.name() },
                { "math", mathNote(m_options.math) },
                { "algorithm", "cpu." + m_algorithm },
            };
        }

    private:
        // Our CPU kernels compute FP32 in every mode and never refuse one: cpu.direct is the FP32 reference of every
        // run, half-precision runs included. The note says where the mode does run on the CPU.
        static std::string mathNote(MathMode m)
        {
            switch (m) {
            case MathMode::TF32:
                return "fp32 (the CPU has no TF32)";
            case MathMode::FP16:
            case MathMode::BF16:
                return "fp32: our CPU kernels compute in FP32; " + std::string(m == MathMode::BF16 ? "BF16" : "FP16")
                    + " on the CPU runs on onednn";
            case MathMode::FP32:
                break;
            }
            return "fp32";
        }

        static void copy(const Tensor& in, Tensor& out)
        {
            if (in.numel() != out.numel())
                throw Error("cpu: a copy between tensors of different sizes");
            std::memcpy(out.data(), in.data(), size_t(in.numel()) * sizeof(float));
        }

        // Every kind is named; a kind added to LayerSpec without a branch here does not compile.
        void runLayer(size_t i, const std::vector<const Tensor*>& ins, Tensor& out)
        {
            const Layer& layer = m_layers[i];
            const Padding2d& pad = m_shapes.layers[i].resolvedPadding;
            const Padding3d& pad3 = m_shapes.layers[i].resolvedPadding3d;
            const Tensor& in = *ins.at(0);
            std::visit(
                [&](const auto& spec) {
                    using Spec = std::decay_t<decltype(spec)>;
                    if constexpr (std::is_same_v<Spec, Conv2d>) {
                        const Tensor& w = requireParameter(layer.weight, layer, "weight");
                        if (m_fft[i])
                            m_fft[i]->run(in, layer.bias.get(), out);
                        else if (m_taps)
                            cpu::fast::conv2dTapGemm(in, w, layer.bias.get(), spec, pad, out,
                                m_tapWeights[i].empty() ? nullptr : m_tapWeights[i].data());
                        else
                            m_fast ? cpu::fast::conv2d(in, w, layer.bias.get(), spec, pad, out)
                                   : cpu::direct::conv2d(in, w, layer.bias.get(), spec, pad, out);
                        // A fused residual add and activation (compute/fusion.h), applied in place while the output
                        // is in cache: the add layer's own code on (conv output, skip), so the sum is the same.
                        if (spec.fused_residual) {
                            const std::vector<const Tensor*> sum { &out, ins.at(1) };
                            m_fast ? cpu::fast::add(sum, out) : cpu::direct::add(sum, out);
                        }
                        if (spec.fused_activation) {
                            const LayerSpec act = activationSpecOf(spec.fused_activation);
                            m_fast ? cpu::fast::activation(out, act, out) : cpu::direct::activation(out, act, out);
                        }
                    } else if constexpr (std::is_same_v<Spec, ConvTranspose2d>) {
                        const Tensor& w = requireParameter(layer.weight, layer, "weight");
                        m_fast ? cpu::fast::convTranspose2d(in, w, layer.bias.get(), spec, pad, out)
                               : cpu::direct::convTranspose2d(in, w, layer.bias.get(), spec, pad, out);
                    } else if constexpr (std::is_same_v<Spec, MaxPool2d>) {
                        m_fast ? cpu::fast::maxPool2d(in, spec, pad, out) : cpu::direct::maxPool2d(in, spec, pad, out);
                    } else if constexpr (std::is_same_v<Spec, AvgPool2d>) {
                        m_fast ? cpu::fast::avgPool2d(in, spec, pad, out) : cpu::direct::avgPool2d(in, spec, pad, out);
                    } else if constexpr (std::is_same_v<Spec, GlobalAvgPool2d>) {
                        m_fast ? cpu::fast::globalAvgPool2d(in, out) : cpu::direct::globalAvgPool2d(in, out);
                    } else if constexpr (std::is_same_v<Spec, BatchNorm2d>) {
                        const Tensor& mean = requireParameter(layer.runningMean, layer, "running_mean");
                        const Tensor& var = requireParameter(layer.runningVar, layer, "running_var");
                        m_fast
                            ? cpu::fast::batchNorm2d(in, mean, var, layer.weight.get(), layer.bias.get(), spec.eps, out)
                            : cpu::direct::batchNorm2d(
                                in, mean, var, layer.weight.get(), layer.bias.get(), spec.eps, out);
                    } else if constexpr (
                        std::is_same_v<Spec,
                            Flatten> || std::is_same_v<Spec, Reshape> || std::is_same_v<Spec, Identity> || std::is_same_v<Spec, Dropout>) {
                        // A view (flatten, reshape) or nothing (identity, dropout at inference) elsewhere; here a copy
                        // into the preallocated output, so every layer has an output of its own to show.
                        copy(in, out);
                    } else if constexpr (std::is_same_v<Spec, Linear>) {
                        const Tensor& w = requireParameter(layer.weight, layer, "weight");
                        m_fast ? cpu::fast::linear(in, w, layer.bias.get(), out)
                               : cpu::direct::linear(in, w, layer.bias.get(), out);
                    } else if constexpr (isSoftmaxKind<Spec>) {
                        const int64_t axis = wrapAxis(spec.dim, in.shape().ndim(), layerTypeName(spec));
                        m_fast ? cpu::fast::softmax(in, out, axis, isLogSoftmax<Spec>)
                               : cpu::direct::softmax(in, out, axis, isLogSoftmax<Spec>);
                    } else if constexpr (std::is_same_v<Spec, Reduce>) {
                        m_fast ? cpu::fast::reduce(in, spec, out) : cpu::direct::reduce(in, spec, out);
                    } else if constexpr (std::
                                             is_same_v<
                                                 Spec, ReLU> || std::is_same_v<Spec, LeakyReLU> || std::is_same_v<Spec, Sigmoid> || std::is_same_v<Spec, Tanh> || std::is_same_v<Spec, ELU> || std::is_same_v<Spec, ReLU6> || std::is_same_v<Spec, Hardswish> || std::is_same_v<Spec, Hardsigmoid> || std::is_same_v<Spec, SiLU> || std::is_same_v<Spec, Hardtanh> || isElementwiseMathKind<Spec>) {
                        m_fast ? cpu::fast::activation(in, layer.spec, out)
                               : cpu::direct::activation(in, layer.spec, out);
                    } else if constexpr (std::is_same_v<Spec, PReLU>) {
                        const Tensor& slopes = requireParameter(layer.weight, layer, "weight (the slopes)");
                        m_fast ? cpu::fast::prelu(in, slopes, out) : cpu::direct::prelu(in, slopes, out);
                    } else if constexpr (std::is_same_v<Spec, Binary>) {
                        cpu::runBinary(spec, m_shapes.layers[i], ins, layer.weight.get(), out, m_fast);
                    } else if constexpr (std::is_same_v<Spec, Matmul>) {
                        cpu::runMatmul(spec, m_shapes.layers[i], ins, layer.weight.get(), out, m_fast);
                    } else if constexpr (std::is_same_v<Spec, Gather>) {
                        cpu::runGather(spec, in, out);
                    } else if constexpr (std::is_same_v<Spec, Add>) {
                        m_fast ? cpu::fast::add(ins, out) : cpu::direct::add(ins, out);
                    } else if constexpr (std::is_same_v<Spec, Mul>) {
                        m_fast ? cpu::fast::mul(*ins.at(0), *ins.at(1), out)
                               : cpu::direct::mul(*ins.at(0), *ins.at(1), out);
                    } else if constexpr (std::is_same_v<Spec, Concat>) {
                        const int64_t dim = wrappedDim(spec, out.shape().ndim());
                        m_fast ? cpu::fast::concat(ins, dim, out) : cpu::direct::concat(ins, dim, out);
                    } else if constexpr (std::is_same_v<Spec, Pad>) {
                        m_fast ? cpu::fast::pad(in, spec, out) : cpu::direct::pad(in, spec, out);
                    } else if constexpr (std::is_same_v<Spec, Resize>) {
                        const ResizePlan plan = resizePlan(spec, m_shapes.layers[i]);
                        m_fast ? cpu::fast::resize(in, plan, out) : cpu::direct::resize(in, plan, out);
                    } else if constexpr (std::is_same_v<Spec, ChannelShuffle>) {
                        m_fast ? cpu::fast::channelShuffle(in, spec, out) : cpu::direct::channelShuffle(in, spec, out);
                    } else if constexpr (std::is_same_v<Spec, Slice>) {
                        m_fast ? cpu::fast::slice(in, spec, out) : cpu::direct::slice(in, spec, out);
                    } else if constexpr (std::is_same_v<Spec, Transpose>) {
                        const std::vector<int64_t> perm = wrappedDims(spec, in.shape().ndim());
                        m_fast ? cpu::fast::transpose(in, perm, out) : cpu::direct::transpose(in, perm, out);
                    } else if constexpr (std::is_same_v<Spec, Conv3d>) {
                        const Tensor& w = requireParameter(layer.weight, layer, "weight");
                        m_fast ? cpu::fast::conv3d(in, w, layer.bias.get(), spec, pad3, out)
                               : cpu::direct::conv3d(in, w, layer.bias.get(), spec, pad3, out);
                    } else if constexpr (std::is_same_v<Spec, ConvTranspose3d>) {
                        const Tensor& w = requireParameter(layer.weight, layer, "weight");
                        m_fast ? cpu::fast::convTranspose3d(in, w, layer.bias.get(), spec, pad3, out)
                               : cpu::direct::convTranspose3d(in, w, layer.bias.get(), spec, pad3, out);
                    } else if constexpr (std::is_same_v<Spec, MaxPool3d>) {
                        m_fast ? cpu::fast::maxPool3d(in, spec, pad3, out)
                               : cpu::direct::maxPool3d(in, spec, pad3, out);
                    } else if constexpr (std::is_same_v<Spec, AvgPool3d>) {
                        m_fast ? cpu::fast::avgPool3d(in, spec, pad3, out)
                               : cpu::direct::avgPool3d(in, spec, pad3, out);
                    } else if constexpr (std::is_same_v<Spec, GlobalAvgPool3d>) {
                        m_fast ? cpu::fast::globalAvgPool3d(in, out) : cpu::direct::globalAvgPool3d(in, out);
                    } else if constexpr (std::is_same_v<Spec, BatchNorm3d>) {
                        const Tensor& mean = requireParameter(layer.runningMean, layer, "running_mean");
                        const Tensor& var = requireParameter(layer.runningVar, layer, "running_var");
                        m_fast
                            ? cpu::fast::batchNorm3d(in, mean, var, layer.weight.get(), layer.bias.get(), spec.eps, out)
                            : cpu::direct::batchNorm3d(
                                in, mean, var, layer.weight.get(), layer.bias.get(), spec.eps, out);
                    } else if constexpr (isNormKind<Spec>) {
                        const NormPlan plan = normPlan(spec, in.shape());
                        const Tensor& w = requireParameter(layer.weight, layer, "weight");
                        const Tensor& b = requireParameter(layer.bias, layer, "bias");
                        m_fast ? cpu::fast::normalization(in, w, b, plan, out)
                               : cpu::direct::normalization(in, w, b, plan, out);
                    } else {
                        static_assert(dependent_false<Spec>, "cpu backend: a layer kind has no branch");
                    }
                },
                layer.spec);
        }

        std::string m_algorithm;
        bool m_fast;
        bool m_taps;
        bool m_useFft;
        SessionOptions m_options;
        cpu::LayerClock m_clock;
        std::vector<Layer> m_layers;
        ShapeReport m_shapes;
        std::vector<Tensor> m_outputs;
        std::vector<std::string> m_rangeNames;
        std::vector<std::unique_ptr<cpu::FftConv2d>> m_fft; // cpu.fft: one per conv2d layer, null elsewhere
        std::vector<std::vector<float>> m_tapWeights; // cpu.tap_gemm: packed weights where the AVX-512 tile runs
        bool m_prepared = false;
        bool m_ran = false;
    };

    class CpuBackend final : public Backend {
    public:
        std::string name() const override { return "cpu"; }
        std::string description() const override
        {
            return "ConvScope's own CPU code: reference loops, im2col + OpenBLAS sgemm, per-tap GEMM (AVX-512), FFT "
                   "(FFTW3)";
        }
        std::vector<AlgorithmInfo> algorithms() const override
        {
            return {
                { kDirect, "the readable reference loops for every layer, one thread, double sums" },
                { kIm2colGemm, "convolutions as im2col / col2im + OpenBLAS sgemm, other layers threaded" },
                { kTapGemm,
                    "stride-1 conv2d as one GEMM per kernel tap on the padded input (no im2col; AVX-512 "
                    "register tile), else as im2col_gemm" },
                { kFft,
                    "stride-1 conv2d by FFT (FFTW3, single precision, overlap-save tiles): transform, multiply "
                    "and sum over input channels per frequency, transform back; other layers as im2col_gemm" },
            };
        }
        Availability availability() const override { return { true, {} }; }
        bool fusesActivation(FusedActivation::Kind) const override { return true; }
        bool fusesResidual() const override { return true; } // every algorithm: runLayer's shared epilogue
        bool takesVolumes(const LayerSpec&) const override { return true; } // every loop here walks N·C·D·H·W
        Support supports(const std::string& algorithm, const LayerSpec& spec, const LayerShape& shape) const override
        {
            if (!known(algorithm))
                return { false,
                    "cpu has no algorithm \"" + algorithm + "\" (it has direct, im2col_gemm, tap_gemm, fft)" };
            if (const auto* conv = std::get_if<Conv2d>(&spec); conv && algorithm == kFft)
                if (std::string why = fftRefusal(*conv, shape, cpu::cpuFftTarget(), "cpu.fft"); !why.empty())
                    return { false, std::move(why) };
            return std::visit(
                [](const auto& l) -> Support {
                    using T = std::decay_t<decltype(l)>;
                    // Every kind the session's runLayer dispatches; a new kind must be added here and there.
                    if constexpr (
                        std::
                            is_same_v<T,
                                Conv2d> || std::is_same_v<T, ConvTranspose2d> || std::is_same_v<T, MaxPool2d> || std::is_same_v<T, AvgPool2d> || std::is_same_v<T, GlobalAvgPool2d> || std::is_same_v<T, BatchNorm2d> || std::is_same_v<T, ReLU> || std::is_same_v<T, LeakyReLU> || std::is_same_v<T, Sigmoid> || std::is_same_v<T, Tanh> || std::is_same_v<T, ELU> || std::is_same_v<T, ReLU6> || std::is_same_v<T, Hardswish> || std::is_same_v<T, Hardsigmoid> || std::is_same_v<T, SiLU> || std::is_same_v<T, Hardtanh> || std::is_same_v<T, PReLU> || std::is_same_v<T, Flatten> || std::is_same_v<T, Linear> || std::is_same_v<T, Softmax> || std::is_same_v<T, Add> || std::is_same_v<T, Mul> || std::is_same_v<T, Concat> || std::is_same_v<T, Pad> || std::is_same_v<T, Resize> || std::is_same_v<T, Identity> || std::is_same_v<T, Dropout> || std::is_same_v<T, ChannelShuffle> || std::is_same_v<T, Slice> || std::is_same_v<T, Conv3d> || std::is_same_v<T, ConvTranspose3d> || std::is_same_v<T, MaxPool3d> || std::is_same_v<T, AvgPool3d> || std::is_same_v<T, GlobalAvgPool3d> || std::is_same_v<T, BatchNorm3d>)
                        return { true, {} };
                    else if constexpr (
                        std::is_same_v<T,
                            Reshape> || std::is_same_v<T, Transpose> || isElementwiseMathKind<T> || std::is_same_v<T, Binary>)
                        return { true, {} };
                    else if constexpr (
                        isNormKind<
                            T> || isSoftmaxKind<T> || std::is_same_v<T, Reduce> || std::is_same_v<T, Matmul> || std::is_same_v<T, Gather>)
                        return { true, {} };
                    else
                        static_assert(dependent_false<T>, "cpu backend: supports() does not know a layer kind");
                },
                spec);
        }
        std::unique_ptr<BackendSession> createSession(
            const std::string& algorithm, const SessionOptions& options) override
        {
            if (!known(algorithm))
                throw UnsupportedError(
                    "cpu." + algorithm + " is unsupported: the cpu backend has direct, im2col_gemm, tap_gemm and fft");
            return std::make_unique<CpuSession>(algorithm, options);
        }
        std::unique_ptr<TrainingSession> createTrainingSession(
            const std::string& algorithm, const SessionOptions& options) override
        {
            return makeCpuTrainingSession(algorithm, options);
        }
        std::optional<DeviceCeilings> calibrate(const SessionOptions&) override { return calibrateCpu(); }
        std::map<std::string, std::string> info() const override
        {
            return {
                { "device", cpuModelName() },
                { "threads", std::to_string(cpuThreadCount()) },
                { "openblas", openblasConfig() + " (core " + blasCoreName() + ", built " + blasThreading() + ")" },
            };
        }
    };

} // namespace

std::shared_ptr<Backend> makeCpuBackend() { return std::make_shared<CpuBackend>(); }

} // namespace convscope
