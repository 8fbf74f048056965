// The onednn backend: Intel's oneDNN (Debian's libdnnl, API v2.x) as the CPU library baseline, the CPU
// counterpart of cuDNN. A loadable module (libconvscope_onednn.so) like the GPU ones, so ConvScope starts
// without libdnnl installed.
//
// One algorithm, "auto": convolutions use dnnl::algorithm::convolution_auto and oneDNN picks its own
// implementation (jit:avx512_core, gemm:jit, ...; the layer note shows which). Every layer kind maps to one
// primitive:
//   conv2d            convolution_forward (groups as a 5-D goihw weight, dilation d-1, padding l/r apart)
//   conv_transpose2d  deconvolution_forward (PyTorch's [C_in, C_out/g, kh, kw] is oneDNN's giohw;
//                     output_padding becomes a smaller right padding)
//   maxpool2d         pooling_v2_forward, pooling_max (dilation; ceil_mode as extra right padding, which
//                     oneDNN ignores for max, as PyTorch's −∞ padding does)
//   avgpool2d         pooling_avg_include_padding / pooling_avg_exclude_padding (count_include_pad)
//   global_avgpool2d  pooling over the whole plane
//   batchnorm2d       batch_normalization_forward, inference with global statistics, scale and shift
//   activations       eltwise_forward: relu, relu with alpha (leaky), logistic, tanh, elu, clip [0, 6] (relu6),
//                     hardswish, swish with alpha 1 (silu), linear x/6 + 1/2 with a clip [0, 1] post-op (hardsigmoid:
//                     oneDNN 2.6 has no hardsigmoid of its own), clip [min_val, max_val] (hardtanh)
//   prelu             prelu_forward with {1, C, 1, 1} (or {1, 1, 1, 1}) weights broadcast over the rest
//   linear            inner_product_forward on [N, F]
//   softmax           softmax_forward over axis 1
//   add               binary_add for two inputs, sum (scales 1) for more
//   mul               binary_mul; an [N, C, 1, 1] input is oneDNN's broadcast src1
//   concat            concat over axis 1
//   flatten, identity, dropout   a copy (a view or nothing everywhere else)
//   pad               refused: oneDNN has no padding primitive
//
// Layout: every layer takes and gives NCHW float32 like every other backend, so layers chain and can be
// compared. Convolutions and inner products let oneDNN choose its layouts (format_tag::any, usually
// nChw16c blocks); the activation reorders into and out of them run inside the timed layer (a caller with
// NCHW data pays them too) and are named in the layer note. Weights are reordered once, in prepare().
// Primitive creation is untimed (prepare()); a pass only executes the primitives.
//
// NaN: oneDNN 2.6's max pooling skips a NaN and its ReLU maps NaN to 0, where PyTorch propagates it; the only
// difference on finite data is rounding (checked by tests/onednn against cpu.direct).
//
// Threads: Debian's libdnnl runs on OpenMP (libgomp), the same runtime and thread count
// (omp_get_max_threads, OMP_NUM_THREADS) as the cpu backend's loops.
#include "compute/backend.h"
#include "compute/backend_registry.h"
#include "compute/cpu/layer_clock.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/nvtx.h"

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <unordered_map>
#include <variant>

namespace convscope::onednn {

namespace {

    using dnnl::memory;
    using Tag = memory::format_tag;
    using Dims = memory::dims;
    constexpr auto kF32 = memory::data_type::f32;
    constexpr auto kInference = dnnl::prop_kind::forward_inference;
    const char* const kAuto = "auto";

    // A volume's D and H are one axis here ([N, C, D·H, W]): what the element-wise, channel-wise (softmax, batch
    // norm, merges) and whole-volume (global pooling) layers see is the same, and they chain with everything else. The
    // window ops of volumes (conv3d, conv_transpose3d, the 3-D pools) use ncdhw() instead (Plan::volume).
    memory::desc nchw(const Shape& s) { return memory::desc({ s.n, s.c, s.d * s.h, s.w }, kF32, Tag::nchw); }
    memory::desc ncdhw(const Shape& s, Tag tag = Tag::ncdhw)
    {
        return memory::desc({ s.n, s.c, s.d, s.h, s.w }, kF32, tag);
    }
    memory::desc anyLayout(const Shape& s) { return memory::desc({ s.n, s.c, s.h, s.w }, kF32, Tag::any); }
    memory::desc vector(int64_t c) { return memory::desc({ c }, kF32, Tag::x); }

    std::string versionString()
    {
        const dnnl_version_t* v = dnnl_version();
        return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + " ("
            + (v->hash ? v->hash : "") + ")";
    }

    std::string isaName()
    {
        switch (dnnl::get_effective_cpu_isa()) {
        case dnnl::cpu_isa::sse41:
            return "sse41";
        case dnnl::cpu_isa::avx:
            return "avx";
        case dnnl::cpu_isa::avx2:
            return "avx2";
        case dnnl::cpu_isa::avx512_core:
            return "avx512_core";
        case dnnl::cpu_isa::avx512_core_vnni:
            return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core_bf16:
            return "avx512_core_bf16";
        case dnnl::cpu_isa::avx512_core_amx:
            return "avx512_core_amx";
        default:
            return "other";
        }
    }

    std::string cpuModelName()
    {
        std::ifstream cpuinfo("/proc/cpuinfo");
        std::string line;
        while (std::getline(cpuinfo, line))
            if (line.rfind("model name", 0) == 0) {
                const auto colon = line.find(':');
                if (colon != std::string::npos && colon + 2 <= line.size())
                    return line.substr(colon + 2);
            }
        return "unknown CPU";
    }

    // The padding after the last window that makes oneDNN's size rule, out = (in + l + r − extent) / s + 1,
    // give exactly `out`: the last window ends there. PyTorch's floor (or ceil) rule already fixed `out`, so
    // this is the padding that window actually reads; never negative (oneDNN refuses that), the given
    // padding otherwise (floor division then lands on the same size).
    int64_t rightPad(int64_t in, int64_t out, int64_t stride, int64_t extent, int64_t left, int64_t given)
    {
        const int64_t exact = (out - 1) * stride + extent - in - left;
        return exact >= 0 ? exact : given;
    }

    // A parameter tensor of the network, wrapped without a copy (oneDNN only reads it).
    memory wrap(const memory::desc& d, const dnnl::engine& e, const std::shared_ptr<const Tensor>& t)
    {
        return memory(d, e, const_cast<float*>(t->data()));
    }

    // What one layer runs: the primitive descriptor and its parameters in PyTorch's layouts.
    struct Plan {
        std::optional<dnnl::primitive_desc> pd;
        bool flatten = false; // a copy of the one input (flatten, identity, dropout)
        // Several NCHW inputs, passed as DNNL_ARG_SRC_0 / _1 (binary) or DNNL_ARG_MULTIPLE_SRC + k (sum, concat);
        // `swapped`: the binary primitive's src0 is the layer's second input (so a broadcast input is src1).
        bool multi = false, binary = false, swapped = false;
        std::optional<dnnl::primitive> multiPrimitive; // multi-input layers (sum and concat have no primitive_desc)
        std::string multiImpl;
        bool flatSrc = false; // linear: the source is [N, F]
        bool volume = false; // conv3d, conv_transpose3d, 3-D pools: the user layout is NCDHW
        std::vector<std::pair<int, memory::desc>> params; // arg id, user (PyTorch) layout
        std::vector<std::shared_ptr<const Tensor>> paramData; // same order; null when only planning
    };

    // Inference: y = (x − running_mean) / √(running_var + eps) · weight + bias (weight 1, bias 0 when not affine,
    // which is what use_scale / use_shift left out means). A volume's D·H is one axis (nchw()).
    template <typename BatchNorm, typename Param>
    void planBatchNorm(const BatchNorm& s, const Shape& in, const dnnl::engine& eng, Plan& plan, Param& param,
        const Layer* layer)
    {
        const bool hasScale = layer ? bool(layer->weight) : s.affine;
        const bool hasShift = layer ? bool(layer->bias) : s.affine;
        auto flags = dnnl::normalization_flags::use_global_stats;
        if (hasScale)
            flags = flags | dnnl::normalization_flags::use_scale;
        if (hasShift)
            flags = flags | dnnl::normalization_flags::use_shift;
        const dnnl::batch_normalization_forward::desc d(kInference, nchw(in), float(s.eps), flags);
        plan.pd = dnnl::batch_normalization_forward::primitive_desc(d, eng);
        param(DNNL_ARG_MEAN, vector(in.c), layer ? layer->runningMean : nullptr);
        param(DNNL_ARG_VARIANCE, vector(in.c), layer ? layer->runningVar : nullptr);
        if (hasScale)
            param(DNNL_ARG_SCALE, vector(in.c), layer ? layer->weight : nullptr);
        if (hasShift)
            param(DNNL_ARG_SHIFT, vector(in.c), layer ? layer->bias : nullptr);
    }

    // conv3d as convolution_forward (convolution_auto) and conv_transpose3d as deconvolution_forward on NCDHW, as the
    // 2-D ones with depth in front: PyTorch's weights [C_out, C_in/g, kd, kh, kw] and [C_in, C_out/g, kd, kh, kw] are
    // oneDNN's (g)oidhw and (g)iodhw; padding front/top/left before, the rest after; output_padding as a smaller
    // padding after.
    template <typename Conv, typename Param>
    void planConvolution3d(const Conv& s, const LayerShape& shape, const dnnl::engine& eng, Plan& plan, Param& param,
        const Layer* layer)
    {
        constexpr bool transposed = std::is_same_v<Conv, ConvTranspose3d>;
        const Shape& in = shape.in;
        const Shape& out = shape.out;
        const Padding3d& pad = shape.resolvedPadding3d;
        const int64_t g = s.groups;
        const auto [kd, kh, kw] = s.kernel_size;
        const Dims wDims = g == 1 ? Dims { out.c, in.c, kd, kh, kw } : Dims { g, out.c / g, in.c / g, kd, kh, kw };
        const Tag wTag = transposed ? (g == 1 ? Tag::iodhw : Tag::giodhw) : (g == 1 ? Tag::oidhw : Tag::goidhw);
        const memory::desc wAny(wDims, kF32, Tag::any);
        const Dims strides { s.stride[0], s.stride[1], s.stride[2] };
        const Dims dilates { s.dilation[0] - 1, s.dilation[1] - 1, s.dilation[2] - 1 };
        const Dims padL { pad.front, pad.top, pad.left };
        const auto biasDesc = s.bias ? vector(out.c) : memory::desc();
        plan.volume = true;
        if constexpr (transposed) {
            const Dims padR { pad.back - s.output_padding[0], pad.bottom - s.output_padding[1],
                pad.right - s.output_padding[2] };
            for (size_t a = 0; a < 3; ++a)
                if (padR[a] <= -s.stride[a])
                    throw UnsupportedError("onednn: conv_transpose3d output_padding reaches the stride plus the "
                                           "back/bottom/right padding; oneDNN cannot express that");
            const dnnl::deconvolution_forward::desc d(kInference, dnnl::algorithm::deconvolution_direct,
                ncdhw(in, Tag::any), wAny, biasDesc, ncdhw(out, Tag::any), strides, dilates, padL, padR);
            plan.pd = dnnl::deconvolution_forward::primitive_desc(d, eng);
        } else {
            const int64_t ins[3] = { in.d, in.h, in.w }, outs[3] = { out.d, out.h, out.w };
            Dims padR(3);
            for (size_t a = 0; a < 3; ++a) {
                const auto [before, after] = pad.along(int(a));
                padR[a] = rightPad(
                    ins[a], outs[a], s.stride[a], s.dilation[a] * (s.kernel_size[a] - 1) + 1, before, after);
            }
            const dnnl::convolution_forward::desc d(kInference, dnnl::algorithm::convolution_auto,
                ncdhw(in, Tag::any), wAny, biasDesc, ncdhw(out, Tag::any), strides, dilates, padL, padR);
            plan.pd = dnnl::convolution_forward::primitive_desc(d, eng);
        }
        param(DNNL_ARG_WEIGHTS, memory::desc(wDims, kF32, wTag), layer ? layer->weight : nullptr);
        if (s.bias)
            param(DNNL_ARG_BIAS, vector(out.c), layer ? layer->bias : nullptr);
    }

    // maxpool3d / avgpool3d as pooling_v2_forward on NCDHW, with the 2-D pools' rules (ceil_mode as padding after,
    // PyTorch's divisor for a last window hanging past the padding refused, no divisor_override).
    template <typename Pool> void planPool3d(const Pool& s, const LayerShape& shape, const dnnl::engine& eng, Plan& plan)
    {
        constexpr bool isMax = std::is_same_v<Pool, MaxPool3d>;
        const Shape& in = shape.in;
        const Shape& out = shape.out;
        const Padding3d& pad = shape.resolvedPadding3d;
        const Triple st = s.effectiveStride();
        Triple dilation { 1, 1, 1 };
        dnnl::algorithm alg = dnnl::algorithm::pooling_max;
        if constexpr (isMax) {
            dilation = s.dilation;
        } else {
            if (s.divisor_override)
                throw UnsupportedError("onednn: avgpool3d divisor_override has no oneDNN equivalent");
            alg = s.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                      : dnnl::algorithm::pooling_avg_exclude_padding;
        }
        const int64_t ins[3] = { in.d, in.h, in.w }, outs[3] = { out.d, out.h, out.w };
        Dims padR(3);
        for (size_t a = 0; a < 3; ++a) {
            const auto [before, after] = pad.along(int(a));
            const int64_t extent = dilation[a] * (s.kernel_size[a] - 1) + 1;
            if constexpr (!isMax)
                if (s.count_include_pad && (outs[a] - 1) * st[a] - before + s.kernel_size[a] > ins[a] + after)
                    throw UnsupportedError("onednn: with ceil_mode the last avgpool3d window hangs past the padding; "
                                           "PyTorch divides it by the part inside the padded input, oneDNN by the "
                                           "whole kernel");
            padR[a] = rightPad(ins[a], outs[a], st[a], extent, before, after);
        }
        plan.volume = true;
        const dnnl::pooling_v2_forward::desc d(kInference, alg, ncdhw(in), ncdhw(out), { st[0], st[1], st[2] },
            { s.kernel_size[0], s.kernel_size[1], s.kernel_size[2] },
            { dilation[0] - 1, dilation[1] - 1, dilation[2] - 1 }, { pad.front, pad.top, pad.left }, padR);
        plan.pd = dnnl::pooling_v2_forward::primitive_desc(d, eng);
    }

    // Builds the plan of a layer; throws UnsupportedError (PyTorch semantics oneDNN cannot express) or
    // dnnl::error (oneDNN has no implementation).
    Plan planLayer(const Layer* layer, const LayerSpec& spec, const LayerShape& shape, const dnnl::engine& eng)
    {
        Plan plan;
        const Shape& in = shape.in;
        const Shape& out = shape.out;
        const Padding2d& pad = shape.resolvedPadding;
        auto param = [&](int arg, const memory::desc& d, std::shared_ptr<const Tensor> t) {
            plan.params.emplace_back(arg, d);
            plan.paramData.push_back(layer ? std::move(t) : nullptr);
        };
        std::visit(
            [&](const auto& s) {
                using S = std::decay_t<decltype(s)>;
                if constexpr (std::is_same_v<S, Conv2d> || std::is_same_v<S, ConvTranspose2d>) {
                    constexpr bool transposed = std::is_same_v<S, ConvTranspose2d>;
                    const int64_t g = s.groups, kh = s.kernel_size[0], kw = s.kernel_size[1];
                    const Dims wDims = g == 1 ? Dims { out.c, in.c, kh, kw } : Dims { g, out.c / g, in.c / g, kh, kw };
                    const Tag wTag = transposed ? (g == 1 ? Tag::iohw : Tag::giohw) : (g == 1 ? Tag::oihw : Tag::goihw);
                    const memory::desc wAny(wDims, kF32, Tag::any);
                    const Dims strides { s.stride[0], s.stride[1] };
                    const Dims dilates { s.dilation[0] - 1, s.dilation[1] - 1 };
                    const Dims padL { pad.top, pad.left };
                    const auto biasDesc = s.bias ? vector(out.c) : memory::desc();
                    if constexpr (transposed) {
                        // out = (in − 1)·s − top − bottom + d·(k − 1) + 1 + output_padding: oneDNN has no
                        // output_padding; it is padding taken back at the bottom/right. oneDNN accepts a negative
                        // padding there only above −stride, so output_padding ≥ stride + padding (possible only with
                        // dilation > stride) cannot be expressed.
                        const Dims padR { pad.bottom - s.output_padding[0], pad.right - s.output_padding[1] };
                        if (padR[0] <= -s.stride[0] || padR[1] <= -s.stride[1])
                            throw UnsupportedError("onednn: conv_transpose2d output_padding reaches the stride plus "
                                                   "the bottom/right padding; oneDNN cannot express that");
                        const dnnl::deconvolution_forward::desc d(kInference, dnnl::algorithm::deconvolution_direct,
                            anyLayout(in), wAny, biasDesc, anyLayout(out), strides, dilates, padL, padR);
                        plan.pd = dnnl::deconvolution_forward::primitive_desc(d, eng);
                    } else {
                        const int64_t extH = s.dilation[0] * (kh - 1) + 1, extW = s.dilation[1] * (kw - 1) + 1;
                        const Dims padR { rightPad(in.h, out.h, s.stride[0], extH, pad.top, pad.bottom),
                            rightPad(in.w, out.w, s.stride[1], extW, pad.left, pad.right) };
                        const dnnl::convolution_forward::desc d(kInference, dnnl::algorithm::convolution_auto,
                            anyLayout(in), wAny, biasDesc, anyLayout(out), strides, dilates, padL, padR);
                        plan.pd = dnnl::convolution_forward::primitive_desc(d, eng);
                    }
                    param(DNNL_ARG_WEIGHTS, memory::desc(wDims, kF32, wTag), layer ? layer->weight : nullptr);
                    if (s.bias)
                        param(DNNL_ARG_BIAS, vector(out.c), layer ? layer->bias : nullptr);
                } else if constexpr (std::is_same_v<S, MaxPool2d> || std::is_same_v<S, AvgPool2d>) {
                    constexpr bool isMax = std::is_same_v<S, MaxPool2d>;
                    const auto [sh, sw] = s.effectiveStride();
                    const int64_t kh = s.kernel_size[0], kw = s.kernel_size[1];
                    Dims dil { 0, 0 };
                    int64_t extH = kh, extW = kw;
                    dnnl::algorithm alg = dnnl::algorithm::pooling_max;
                    if constexpr (isMax) {
                        dil = { s.dilation[0] - 1, s.dilation[1] - 1 };
                        extH = s.dilation[0] * (kh - 1) + 1;
                        extW = s.dilation[1] * (kw - 1) + 1;
                    } else {
                        if (s.divisor_override)
                            throw UnsupportedError("onednn: avgpool2d divisor_override has no oneDNN equivalent");
                        alg = s.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
                        // PyTorch counts a window only up to the end of the padded input; oneDNN divides every
                        // window by kh·kw. They differ only when ceil_mode lets the last window hang further.
                        if (s.count_include_pad
                            && ((out.h - 1) * sh - pad.top + kh > in.h + pad.bottom
                                || (out.w - 1) * sw - pad.left + kw > in.w + pad.right))
                            throw UnsupportedError("onednn: with ceil_mode the last avgpool2d window hangs past the "
                                                   "padding; PyTorch divides it by the part inside the padded input, "
                                                   "oneDNN by the whole kernel");
                    }
                    const Dims padR { rightPad(in.h, out.h, sh, extH, pad.top, pad.bottom),
                        rightPad(in.w, out.w, sw, extW, pad.left, pad.right) };
                    const dnnl::pooling_v2_forward::desc d(
                        kInference, alg, nchw(in), nchw(out), { sh, sw }, { kh, kw }, dil, { pad.top, pad.left }, padR);
                    plan.pd = dnnl::pooling_v2_forward::primitive_desc(d, eng);
                } else if constexpr (std::is_same_v<S, GlobalAvgPool2d>) {
                    const dnnl::pooling_v2_forward::desc d(kInference, dnnl::algorithm::pooling_avg_exclude_padding,
                        nchw(in), nchw(out), { in.h, in.w }, { in.h, in.w }, { 0, 0 }, { 0, 0 }, { 0, 0 });
                    plan.pd = dnnl::pooling_v2_forward::primitive_desc(d, eng);
                } else if constexpr (std::is_same_v<S, BatchNorm2d>) {
                    planBatchNorm(s, in, eng, plan, param, layer);
                } else if constexpr (std::is_same_v<S, ReLU> || std::is_same_v<S, LeakyReLU>
                    || std::is_same_v<S, Sigmoid> || std::is_same_v<S, Tanh> || std::is_same_v<S, ELU>
                    || std::is_same_v<S, ReLU6> || std::is_same_v<S, Hardswish> || std::is_same_v<S, Hardsigmoid>
                    || std::is_same_v<S, SiLU> || std::is_same_v<S, Hardtanh>) {
                    dnnl::algorithm alg = dnnl::algorithm::eltwise_relu;
                    float alpha = 0, beta = 0;
                    dnnl::primitive_attr attr;
                    if constexpr (std::is_same_v<S, LeakyReLU>)
                        alpha = float(s.negative_slope);
                    else if constexpr (std::is_same_v<S, Sigmoid>)
                        alg = dnnl::algorithm::eltwise_logistic;
                    else if constexpr (std::is_same_v<S, Tanh>)
                        alg = dnnl::algorithm::eltwise_tanh;
                    else if constexpr (std::is_same_v<S, ELU>) {
                        alg = dnnl::algorithm::eltwise_elu;
                        alpha = float(s.alpha);
                    } else if constexpr (std::is_same_v<S, ReLU6>) {
                        alg = dnnl::algorithm::eltwise_clip;
                        beta = 6.0f;
                    } else if constexpr (std::is_same_v<S, Hardswish>) {
                        alg = dnnl::algorithm::eltwise_hardswish;
                        alpha = 1.0f / 6.0f; // oneDNN 3 reads these; 2.6 fixes them to the same values
                        beta = 0.5f;
                    } else if constexpr (std::is_same_v<S, Hardsigmoid>) {
                        alg = dnnl::algorithm::eltwise_linear;
                        alpha = 1.0f / 6.0f;
                        beta = 0.5f;
                        dnnl::post_ops ops;
                        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 1.0f);
                        attr.set_post_ops(ops);
                    } else if constexpr (std::is_same_v<S, SiLU>) {
                        alg = dnnl::algorithm::eltwise_swish;
                        alpha = 1.0f;
                    } else if constexpr (std::is_same_v<S, Hardtanh>) {
                        alg = dnnl::algorithm::eltwise_clip; // clip(x, alpha, beta)
                        alpha = float(s.min_val);
                        beta = float(s.max_val);
                    }
                    const dnnl::eltwise_forward::desc d(kInference, alg, nchw(in), alpha, beta);
                    plan.pd = dnnl::eltwise_forward::primitive_desc(d, attr, eng);
                } else if constexpr (std::is_same_v<S, Linear>) {
                    const int64_t features = in.c * in.h * in.w;
                    const memory::desc src({ in.n, features }, kF32, Tag::nc);
                    const memory::desc dst({ out.n, out.c * out.h * out.w }, kF32, Tag::nc);
                    const memory::desc wAny({ s.out_features, features }, kF32, Tag::any);
                    const auto biasDesc = s.bias ? vector(s.out_features) : memory::desc();
                    const dnnl::inner_product_forward::desc d(kInference, src, wAny, biasDesc, dst);
                    plan.pd = dnnl::inner_product_forward::primitive_desc(d, eng);
                    plan.flatSrc = true;
                    param(DNNL_ARG_WEIGHTS, memory::desc({ s.out_features, features }, kF32, Tag::oi),
                        layer ? layer->weight : nullptr);
                    if (s.bias)
                        param(DNNL_ARG_BIAS, vector(s.out_features), layer ? layer->bias : nullptr);
                } else if constexpr (std::is_same_v<S, Softmax>) {
                    const dnnl::softmax_forward::desc d(kInference, nchw(in), 1);
                    plan.pd = dnnl::softmax_forward::primitive_desc(d, eng);
                } else if constexpr (std::is_same_v<S, Flatten> || std::is_same_v<S, Identity>
                    || std::is_same_v<S, Dropout>) {
                    plan.flatten = true;
                } else if constexpr (std::is_same_v<S, Add> || std::is_same_v<S, Concat>) {
                    plan.multi = true;
                    std::vector<memory::desc> srcs;
                    for (const Shape& x : shape.ins)
                        srcs.push_back(nchw(x));
                    if constexpr (std::is_same_v<S, Concat>) {
                        const dnnl::concat::primitive_desc pd(nchw(out), 1, srcs, eng);
                        plan.multiPrimitive = dnnl::concat(pd);
                        plan.multiImpl = pd.impl_info_str();
                    } else if (srcs.size() == 2) {
                        plan.binary = true;
                        const dnnl::binary::desc d(dnnl::algorithm::binary_add, srcs[0], srcs[1], nchw(out));
                        const dnnl::binary::primitive_desc pd(d, eng);
                        plan.multiPrimitive = dnnl::binary(pd);
                        plan.multiImpl = pd.impl_info_str();
                    } else {
                        const dnnl::sum::primitive_desc pd(nchw(out), std::vector<float>(srcs.size(), 1.0f), srcs, eng);
                        plan.multiPrimitive = dnnl::sum(pd);
                        plan.multiImpl = pd.impl_info_str();
                    }
                } else if constexpr (std::is_same_v<S, Mul>) {
                    if (shape.ins.size() != 2)
                        throw UnsupportedError("onednn: mul needs the shapes of its two inputs");
                    plan.multi = plan.binary = true;
                    // oneDNN broadcasts src1 only: the [N, C, 1, 1] gate goes second.
                    plan.swapped = shape.ins.at(0) != out;
                    const Shape& a = shape.ins.at(plan.swapped ? 1 : 0);
                    const Shape& b = shape.ins.at(plan.swapped ? 0 : 1);
                    const dnnl::binary::desc d(dnnl::algorithm::binary_mul, nchw(a), nchw(b), nchw(out));
                    const dnnl::binary::primitive_desc pd(d, eng);
                    plan.multiPrimitive = dnnl::binary(pd);
                    plan.multiImpl = pd.impl_info_str();
                } else if constexpr (std::is_same_v<S, PReLU>) {
                    // oneDNN broadcasts the weights: {1, C, 1, 1} is one slope per channel, {1, 1, 1, 1} one for all
                    // (a volume's D·H is one axis here, a flat input's H and W are 1).
                    const memory::desc w({ 1, s.num_parameters, 1, 1 }, kF32, Tag::nchw);
                    const dnnl::prelu_forward::desc d(kInference, nchw(in), w);
                    plan.pd = dnnl::prelu_forward::primitive_desc(d, eng);
                    param(DNNL_ARG_WEIGHTS, w, layer ? layer->weight : nullptr);
                } else if constexpr (std::is_same_v<S, Pad>) {
                    throw UnsupportedError("onednn: pad has no oneDNN primitive (oneDNN 2.6 pads only inside a "
                                           "convolution or pooling)");
                } else if constexpr (std::is_same_v<S, Conv3d> || std::is_same_v<S, ConvTranspose3d>) {
                    planConvolution3d(s, shape, eng, plan, param, layer);
                } else if constexpr (std::is_same_v<S, MaxPool3d> || std::is_same_v<S, AvgPool3d>) {
                    planPool3d(s, shape, eng, plan);
                } else if constexpr (std::is_same_v<S, GlobalAvgPool3d>) {
                    // The whole [D·H, W] plane of each channel (nchw() folds D into H).
                    const Dims plane { in.d * in.h, in.w };
                    const dnnl::pooling_v2_forward::desc d(kInference, dnnl::algorithm::pooling_avg_exclude_padding,
                        nchw(in), nchw(out), plane, plane, { 0, 0 }, { 0, 0 }, { 0, 0 });
                    plan.pd = dnnl::pooling_v2_forward::primitive_desc(d, eng);
                } else if constexpr (std::is_same_v<S, BatchNorm3d>) {
                    planBatchNorm(s, in, eng, plan, param, layer);
                } else {
                    static_assert(dependent_false<S>, "onednn backend: a layer kind has no branch");
                }
            },
            spec);
        return plan;
    }

    struct Step {
        dnnl::primitive primitive;
        std::unordered_map<int, memory> args;
    };

    struct LayerRun {
        std::vector<Step> steps; // [src reorder], the op, [dst reorder]
        memory src; // NCHW view of the layer's (first) input: the pass input or an earlier layer's output
        std::vector<memory> srcs; // multi-input layers: one NCHW view per input, in the primitive's order
        std::vector<int> srcSources; // the layer each of `srcs` reads (-1: the pass input)
        bool flatten = false;
        std::string note;
    };

    std::string layerLabel(const Layer& layer, size_t i)
    {
        return "onednn.auto · L" + std::to_string(i) + " " + layerSummary(layer.spec);
    }

    class OnednnSession final : public BackendSession {
    public:
        explicit OnednnSession(const SessionOptions& options)
            : m_options(options)
            , m_clock(options)
            , m_engine(dnnl::engine::kind::cpu, 0)
            , m_stream(m_engine)
        {
        }

        void prepare(const Network& net, const ShapeReport& shapes) override
        {
            if (!shapes.ok())
                throw InputError("onednn: the network has a shape error: " + shapes.firstError());
            if (shapes.layers.size() != net.layers.size())
                throw Error("onednn: the shape report does not belong to this network");
            m_layers = net.layers;
            m_shapes = shapes;
            m_outputs.clear();
            m_runs.clear();
            m_names.clear();
            for (const LayerShape& s : shapes.layers)
                m_outputs.emplace_back(s.out);
            for (size_t i = 0; i < m_layers.size(); ++i) {
                try {
                    m_runs.push_back(build(i));
                } catch (const dnnl::error& e) {
                    throw UnsupportedError("onednn: layer " + m_layers[i].name + " (" + layerTypeName(m_layers[i].spec)
                        + "): " + e.what() + " (dnnl status " + std::to_string(int(e.status)) + ")");
                }
                m_names.push_back(layerLabel(m_layers[i], i));
            }
            m_prepared = true;
            m_ran = false;
        }

        PassTiming runPass(const Tensor& input) override
        {
            if (!m_prepared)
                throw Error("onednn: runPass called before prepare");
            const Shape& want = m_shapes.input;
            const Shape& got = input.shape();
            if (got.n != want.n || got.c != want.c || got.d != want.d || got.h != want.h || got.w != want.w)
                throw InputError("onednn: the input is " + got.str() + " but the network expects " + want.str());
            PassTiming timing;
            const auto source = [&](int k) { return k < 0 ? input.data() : m_outputs[size_t(k)].data(); };
            for (size_t i = 0; i < m_runs.size(); ++i) {
                LayerRun& run = m_runs[i];
                const float* src = source(m_shapes.layers[i].sources.at(0));
                const nvtx::Range range(m_names[i], "onednn");
                const double start = m_clock.nowMs();
                if (run.flatten) {
                    std::memcpy(m_outputs[i].data(), src, size_t(m_outputs[i].numel()) * sizeof(float));
                } else {
                    if (run.srcs.empty())
                        run.src.set_data_handle(const_cast<float*>(src));
                    for (size_t k = 0; k < run.srcs.size(); ++k)
                        run.srcs[k].set_data_handle(const_cast<float*>(source(run.srcSources[k])));
                    for (Step& step : run.steps)
                        step.primitive.execute(m_stream, step.args);
                    m_stream.wait();
                }
                timing.layerMs.push_back(m_clock.nowMs() - start);
            }
            m_ran = true;
            return timing;
        }

        Tensor fetchOutput(size_t layer, double* ms) override
        {
            if (layer >= m_outputs.size())
                throw Error("onednn: no layer " + std::to_string(layer));
            if (!m_ran)
                throw Error("onednn: fetchOutput called before a pass has run");
            const auto start = std::chrono::steady_clock::now();
            Tensor copy = m_outputs[layer].clone();
            if (ms)
                *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            return copy;
        }

        std::string layerNote(size_t layer) const override
        {
            return layer < m_runs.size() ? m_runs[layer].note : std::string();
        }

        std::map<std::string, std::string> metadata() const override
        {
            return { { "device", cpuModelName() }, { "threads", std::to_string(omp_get_max_threads()) },
                { "onednn", versionString() }, { "isa", isaName() }, { "clock", m_clock.name() },
                { "math", m_options.math == MathMode::TF32 ? "fp32 (the CPU has no TF32)" : "fp32" },
                { "algorithm", "onednn.auto" } };
        }

    private:
        LayerRun build(size_t i)
        {
            const Layer& layer = m_layers[i];
            const LayerShape& shape = m_shapes.layers[i];
            Plan plan = planLayer(&layer, layer.spec, shape, m_engine);
            LayerRun run;
            if (plan.flatten) {
                run.flatten = true;
                run.note = "copy";
                return run;
            }
            const Shape& in = shape.in;
            if (plan.multi) {
                // NCHW in and out, no reorders: the inputs are bound per pass (see runPass).
                std::unordered_map<int, memory> args;
                std::vector<int> order;
                for (size_t k = 0; k < shape.ins.size(); ++k)
                    order.push_back(int(k));
                if (plan.swapped)
                    std::swap(order[0], order[1]);
                for (size_t k = 0; k < order.size(); ++k) {
                    const int from = order[k];
                    run.srcs.push_back(memory(nchw(shape.ins[size_t(from)]), m_engine, nullptr));
                    run.srcSources.push_back(shape.sources.at(size_t(from)));
                    args[plan.binary ? (k == 0 ? DNNL_ARG_SRC_0 : DNNL_ARG_SRC_1) : DNNL_ARG_MULTIPLE_SRC + int(k)]
                        = run.srcs.back();
                }
                args[DNNL_ARG_DST] = memory(nchw(shape.out), m_engine, m_outputs[i].data());
                run.steps.push_back({ *plan.multiPrimitive, std::move(args) });
                run.note = plan.multiImpl;
                return run;
            }
            const dnnl::primitive_desc& pd = *plan.pd;
            const memory::desc userSrc = plan.flatSrc ? memory::desc({ in.n, in.c * in.h * in.w }, kF32, Tag::nc)
                : plan.volume                             ? ncdhw(in)
                                                          : nchw(in);
            const memory::desc userDst = plan.flatSrc
                ? memory::desc({ shape.out.n, shape.out.c * shape.out.h * shape.out.w }, kF32, Tag::nc)
                : plan.volume ? ncdhw(shape.out)
                              : nchw(shape.out);
            // The input's address is set per pass; start from any valid one.
            run.src = memory(userSrc, m_engine, nullptr);
            memory dst(userDst, m_engine, m_outputs[i].data());

            std::unordered_map<int, memory> args;
            std::string reorders;
            if (pd.src_desc() != userSrc) {
                memory inner(pd.src_desc(), m_engine);
                run.steps.push_back(
                    { dnnl::reorder(run.src, inner), { { DNNL_ARG_FROM, run.src }, { DNNL_ARG_TO, inner } } });
                args[DNNL_ARG_SRC] = inner;
                reorders += "src";
            } else {
                args[DNNL_ARG_SRC] = run.src;
            }
            memory innerDst = dst;
            if (pd.dst_desc() != userDst) {
                innerDst = memory(pd.dst_desc(), m_engine);
                reorders += reorders.empty() ? "dst" : " and dst";
            }
            args[DNNL_ARG_DST] = innerDst;
            for (size_t k = 0; k < plan.params.size(); ++k) {
                const auto& [arg, desc] = plan.params[k];
                if (!plan.paramData[k])
                    throw Error("onednn: layer " + layer.name + " has a missing parameter tensor");
                if (plan.paramData[k]->numel() != int64_t(desc.get_size() / sizeof(float)))
                    throw InputError("onednn: layer " + layer.name + ": a parameter has "
                        + std::to_string(plan.paramData[k]->numel()) + " values, the layer needs "
                        + std::to_string(desc.get_size() / sizeof(float)));
                memory user = wrap(desc, m_engine, plan.paramData[k]);
                const memory::desc want = arg == DNNL_ARG_WEIGHTS ? pd.weights_desc() : desc;
                if (want != desc) { // untimed: weights into oneDNN's blocked layout, once
                    memory packed(want, m_engine);
                    dnnl::reorder(user, packed).execute(m_stream, user, packed);
                    m_stream.wait();
                    m_owned.push_back(packed);
                    args[arg] = packed;
                } else {
                    args[arg] = user;
                }
            }
            run.steps.push_back({ dnnl::primitive(pd), std::move(args) });
            if (innerDst.get_data_handle() != dst.get_data_handle())
                run.steps.push_back(
                    { dnnl::reorder(innerDst, dst), { { DNNL_ARG_FROM, innerDst }, { DNNL_ARG_TO, dst } } });
            run.note = pd.impl_info_str();
            if (!reorders.empty())
                run.note += "; " + reorders + " reordered NCHW ↔ oneDNN layout (timed)";
            return run;
        }

        SessionOptions m_options;
        cpu::LayerClock m_clock;
        dnnl::engine m_engine;
        dnnl::stream m_stream;
        std::vector<Layer> m_layers;
        ShapeReport m_shapes;
        std::vector<Tensor> m_outputs;
        std::vector<LayerRun> m_runs;
        std::vector<memory> m_owned;
        std::vector<std::string> m_names;
        bool m_prepared = false;
        bool m_ran = false;
    };

    class OnednnBackend final : public Backend {
    public:
        std::string name() const override { return "onednn"; }
        std::string description() const override { return "Intel oneDNN (the CPU library baseline)"; }
        std::vector<AlgorithmInfo> algorithms() const override
        {
            return { { kAuto, "oneDNN's own choice of implementation (convolution_auto), NCHW in and out" } };
        }
        Availability availability() const override
        {
            try {
                const dnnl::engine e(dnnl::engine::kind::cpu, 0);
                (void)e;
                return { true, {} };
            } catch (const std::exception& e) {
                return { false, std::string("oneDNN has no CPU engine: ") + e.what() };
            }
        }
        // Every primitive here sees a volume whole: the window ops of volumes through NCDHW descriptors, the others
        // through [N, C, D·H, W] (nchw()).
        bool takesVolumes(const LayerSpec&) const override { return true; }
        Support supports(const std::string& algorithm, const LayerSpec& spec, const LayerShape& shape) const override
        {
            if (algorithm != kAuto)
                return { false, "onednn has no algorithm \"" + algorithm + "\" (it has auto)" };
            if (!shape.ok)
                return { false, "onednn: the layer has a shape error" };
            try {
                const dnnl::engine e(dnnl::engine::kind::cpu, 0);
                planLayer(nullptr, spec, shape, e);
                return { true, {} };
            } catch (const UnsupportedError& e) {
                return { false, e.what() };
            } catch (const dnnl::error& e) {
                return { false, std::string("onednn: no implementation for this layer: ") + e.what() };
            }
        }
        std::unique_ptr<BackendSession> createSession(
            const std::string& algorithm, const SessionOptions& options) override
        {
            if (algorithm != kAuto)
                throw UnsupportedError("onednn." + algorithm + " is unsupported: the onednn backend has auto");
            return std::make_unique<OnednnSession>(options);
        }
        std::map<std::string, std::string> info() const override
        {
            return { { "device", cpuModelName() }, { "threads", std::to_string(omp_get_max_threads()) },
                { "onednn", versionString() }, { "isa", isaName() } };
        }
    };

} // namespace

} // namespace convscope::onednn

extern "C" __attribute__((visibility("default"))) int convscope_register_module(
    convscope::BackendRegistry* registry, int abiVersion)
{
    return convscope::registerModuleBackend(registry, abiVersion, "onednn", "Intel oneDNN", "libconvscope_onednn.so",
        [] { return std::make_shared<convscope::onednn::OnednnBackend>(); });
}
