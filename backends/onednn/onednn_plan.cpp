// How each layer kind maps to one oneDNN primitive (the plan of a layer), for the onednn backend (onednn_backend.cpp).
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
//   softmax, reduce, norms, matmul, gather  onednn_reduce.cpp, onednn_plan_norm.cpp, onednn_plan_tensor.cpp
//   add               binary_add for two inputs, sum (scales 1) for more
//   mul               binary_mul; an [N, C, 1, 1] input is oneDNN's broadcast src1
//   flatten, reshape, identity, dropout   a copy (a view or nothing everywhere else)
//   transpose, concat  a reorder of the input viewed with permuted strides; concat on [outer, size, inner] views
//   pad               refused: oneDNN has no padding primitive
//
// Data types: `act` is the type of the activations (f32, or bf16 / f16 in the half-precision math modes), and of the
// convolution and inner-product weights as oneDNN holds them (format_tag::any: the weights are reordered, and
// converted, once in prepare()). The user-side weights are PyTorch's FP32 tensors; biases, batch-norm statistics and
// PReLU slopes stay FP32, which oneDNN takes beside half-precision activations (its kernels accumulate in FP32).
#include "backends/onednn/onednn_plan.h"

#include "compute/binary.h"
#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/linear_geometry.h"
#include "compute/normalization.h"
#include "compute/resize.h"

#include <variant>

namespace convscope::onednn {

// A volume's D and H are one axis here ([N, C, D·H, W]): what the element-wise, channel-wise (softmax, batch
// norm, merges) and whole-volume (global pooling) layers see is the same, and they chain with everything else. The
// window ops of volumes (conv3d, conv_transpose3d, the 3-D pools) use ncdhw() instead (Plan::volume).
memory::desc nchw(const Shape& s, memory::data_type dt)
{
    return memory::desc({ s.n, s.c, s.d * s.h, s.w }, dt, Tag::nchw);
}
memory::desc ncdhw(const Shape& s, memory::data_type dt, Tag tag)
{
    return memory::desc({ s.n, s.c, s.d, s.h, s.w }, dt, tag);
}
memory::desc anyLayout(const Shape& s, memory::data_type dt)
{
    return memory::desc({ s.n, s.c, s.h, s.w }, dt, Tag::any);
}
memory::desc vector(int64_t c) { return memory::desc({ c }, kF32, Tag::x); }
Dims plainStrides(const Dims& dims)
{
    Dims strides(dims.size(), 1);
    for (size_t a = dims.size(); a-- > 1;)
        strides[a - 1] = strides[a] * dims[a];
    return strides;
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

namespace {

    // Inference: y = (x − running_mean) / √(running_var + eps) · weight + bias (weight 1, bias 0 when not affine,
    // which is what use_scale / use_shift left out means). A volume's D·H is one axis (nchw()).
    template <typename BatchNorm, typename Param>
    void planBatchNorm(const BatchNorm& s, const Shape& in, memory::data_type act, const dnnl::engine& eng, Plan& plan,
        Param& param, const Layer* layer)
    {
        const bool hasScale = layer ? bool(layer->weight) : s.affine;
        const bool hasShift = layer ? bool(layer->bias) : s.affine;
        auto flags = dnnl::normalization_flags::use_global_stats;
        if (hasScale)
            flags = flags | dnnl::normalization_flags::use_scale;
        if (hasShift)
            flags = flags | dnnl::normalization_flags::use_shift;
        const dnnl::batch_normalization_forward::desc d(kInference, nchw(in, act), float(s.eps), flags);
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
    void planConvolution3d(const Conv& s, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng,
        Plan& plan, Param& param, const Layer* layer)
    {
        constexpr bool transposed = std::is_same_v<Conv, ConvTranspose3d>;
        const Shape& in = shape.in;
        const Shape& out = shape.out;
        const Padding3d& pad = shape.resolvedPadding3d;
        const int64_t g = s.groups;
        const auto [kd, kh, kw] = s.kernel_size;
        const Dims wDims = g == 1 ? Dims { out.c, in.c, kd, kh, kw } : Dims { g, out.c / g, in.c / g, kd, kh, kw };
        const Tag wTag = transposed ? (g == 1 ? Tag::iodhw : Tag::giodhw) : (g == 1 ? Tag::oidhw : Tag::goidhw);
        const memory::desc wAny(wDims, act, Tag::any);
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
                ncdhw(in, act, Tag::any), wAny, biasDesc, ncdhw(out, act, Tag::any), strides, dilates, padL, padR);
            plan.pd = dnnl::deconvolution_forward::primitive_desc(d, eng);
        } else {
            const int64_t ins[3] = { in.d, in.h, in.w }, outs[3] = { out.d, out.h, out.w };
            Dims padR(3);
            for (size_t a = 0; a < 3; ++a) {
                const auto [before, after] = pad.along(int(a));
                padR[a]
                    = rightPad(ins[a], outs[a], s.stride[a], s.dilation[a] * (s.kernel_size[a] - 1) + 1, before, after);
            }
            const dnnl::convolution_forward::desc d(kInference, dnnl::algorithm::convolution_auto,
                ncdhw(in, act, Tag::any), wAny, biasDesc, ncdhw(out, act, Tag::any), strides, dilates, padL, padR);
            plan.pd = dnnl::convolution_forward::primitive_desc(d, eng);
        }
        param(DNNL_ARG_WEIGHTS, memory::desc(wDims, kF32, wTag), layer ? layer->weight : nullptr);
        if (s.bias)
            param(DNNL_ARG_BIAS, vector(out.c), layer ? layer->bias : nullptr);
    }

    // maxpool3d / avgpool3d as pooling_v2_forward on NCDHW, with the 2-D pools' rules (ceil_mode as padding after,
    // PyTorch's divisor for a last window hanging past the padding refused, no divisor_override).
    template <typename Pool>
    void planPool3d(const Pool& s, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan)
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
        const dnnl::pooling_v2_forward::desc d(kInference, alg, ncdhw(in, act), ncdhw(out, act),
            { st[0], st[1], st[2] }, { s.kernel_size[0], s.kernel_size[1], s.kernel_size[2] },
            { dilation[0] - 1, dilation[1] - 1, dilation[2] - 1 }, { pad.front, pad.top, pad.left }, padR);
        plan.pd = dnnl::pooling_v2_forward::primitive_desc(d, eng);
    }

    // oneDNN's resampling reads the source at (x + 0.5) · in / out − 0.5: ONNX's half_pixel with the scale out / in.
    // Linear interpolates there with the edge clamped (ONNX's linear); nearest rounds half up (roundf of a coordinate
    // ≥ −0.5: ONNX's round_prefer_ceil, PyTorch's "nearest-exact"). Anything else is refused with its reason.
    // gelu, softplus, mish, unary (compute/elementwise_math.h) as one eltwise primitive, softplus with β ≠ 1 as
    // linear(β) → soft_relu → linear(1/β) post-ops. Refused: log (see below), erf and reciprocal (oneDNN 2.6 has no
    // eltwise for them; pow(x, −1) is not an exact reciprocal of a negative x there), and a softplus threshold below
    // 15, where PyTorch's switch to x differs from log(1 + e^(β·x)) / β by more than FP32's rounding.
    void planMath(const MathOp& op, const Shape& in, memory::data_type act, const dnnl::engine& eng, Plan& plan)
    {
        dnnl::algorithm alg = dnnl::algorithm::eltwise_linear;
        float alpha = 0, beta = 0;
        dnnl::primitive_attr attr;
        switch (op.fn) {
        case MathFn::GeluErf:
            alg = dnnl::algorithm::eltwise_gelu_erf;
            break;
        case MathFn::GeluTanh:
            alg = dnnl::algorithm::eltwise_gelu_tanh;
            break;
        case MathFn::Softplus:
            if (op.b < 15.0)
                throw UnsupportedError("onednn: softplus with threshold " + std::to_string(op.b)
                    + " (oneDNN's soft_relu has no threshold; below 15 PyTorch's switch to x shows)");
            if (op.a == 1.0) {
                alg = dnnl::algorithm::eltwise_soft_relu;
            } else {
                alpha = float(op.a); // β·x, then soft_relu and ·(1/β) as post-ops
                dnnl::post_ops ops;
                ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_soft_relu, 0.0f, 0.0f);
                ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, float(1.0 / op.a), 0.0f);
                attr.set_post_ops(ops);
            }
            break;
        case MathFn::Mish:
            alg = dnnl::algorithm::eltwise_mish;
            break;
        case MathFn::Exp:
            alg = dnnl::algorithm::eltwise_exp;
            break;
        case MathFn::Log: // measured: 7e-5 relative L2 on a softplus's outputs (log near 0), short of FP32's 1e-5
            throw UnsupportedError("onednn: unary log: oneDNN 2.6's jit log is not FP32-accurate where log x is "
                                   "near 0 (7e-5 relative L2 measured); it runs on the cpu.* selections");
        case MathFn::Sqrt:
            alg = dnnl::algorithm::eltwise_sqrt;
            break;
        case MathFn::Abs:
            alg = dnnl::algorithm::eltwise_abs;
            break;
        case MathFn::Neg:
            alpha = -1.0f;
            break;
        case MathFn::Reciprocal:
            throw UnsupportedError("onednn: unary reciprocal has no oneDNN 2.6 eltwise (its pow is not an exact "
                                   "1/x); it runs on the cpu.* selections");
        case MathFn::Erf:
            throw UnsupportedError("onednn: unary erf has no oneDNN 2.6 eltwise; it runs on the cpu.* selections");
        }
        const dnnl::eltwise_forward::desc d(kInference, alg, nchw(in, act), alpha, beta);
        plan.pd = dnnl::eltwise_forward::primitive_desc(d, attr, eng);
    }

    // binary: oneDNN's binary primitive broadcasts its second source only, so the operand of the output's dims goes
    // first (swapped for the commutative ops; sub as b − a with an eltwise_linear ·(−1) post-op, exact: rounding is
    // symmetric) and the other, padded with 1s to the output's rank, second; every descriptor the true dims on plain
    // strides (any rank). Run as a multi-input step: a constant operand (the layer's weight) is bound beside the input
    // (Plan::constant: FP32 as the second source, the activations' type as the first). Refused with the reason: pow
    // (no oneDNN binary), div whose first operand is broadcast, and two broadcast operands.
    void planBinary(
        const Binary& s, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan)
    {
        using A = dnnl::algorithm;
        const A algs[] = { A::binary_add, A::binary_sub, A::binary_mul, A::binary_div, A::binary_add, A::binary_min,
            A::binary_max };
        const std::string op = std::string("onednn: binary ") + binaryOpName(s.op);
        if (s.op == Binary::Op::Pow)
            throw UnsupportedError(op + " has no oneDNN 2.6 binary primitive; it runs on the cpu.* selections");
        const BinaryOperands o = binaryOperands(s, shape.ins);
        const std::vector<int64_t> out = shape.out.dims();
        const bool swap = o.a != out;
        if (swap && o.b != out)
            throw UnsupportedError(op + " with both operands broadcast (oneDNN broadcasts the second source only)");
        if (swap && s.op == Binary::Op::Div)
            throw UnsupportedError(op
                + " whose first operand is broadcast (oneDNN broadcasts the second source "
                  "only; b / a has no exact inverse)");
        const std::vector<int64_t>& second = swap ? o.a : o.b;
        if (second.size() > out.size())
            throw Error("internal error: " + op + " has an operand of more dims than its output");
        Dims d(out.size() - second.size(), 1);
        d.insert(d.end(), second.begin(), second.end());
        const bool constantSecond = o.constantSide >= 0 && (o.constantSide == 1) != swap;
        const memory::desc src0(out, act, plainStrides(out)), src1(d, constantSecond ? kF32 : act, plainStrides(d));
        dnnl::primitive_attr attr;
        const bool negate = swap && s.op == Binary::Op::Sub;
        if (negate) {
            dnnl::post_ops ops;
            ops.append_eltwise(1.0f, A::eltwise_linear, -1.0f, 0.0f);
            attr.set_post_ops(ops);
        }
        const dnnl::binary::primitive_desc pd(dnnl::binary::desc(algs[int(s.op)], src0, src1, src0), attr, eng);
        plan.multi = plan.binary = true;
        plan.multiPrimitive = dnnl::binary(pd);
        plan.multiImpl = pd.impl_info_str() + std::string(negate ? "; b − a, negated by a post-op" : "");
        plan.multiDst = src0;
        if (o.constantSide < 0) {
            plan.swapped = swap;
            plan.multiSrcs = { swap ? src1 : src0, swap ? src0 : src1 }; // per input, in the layer's order
        } else {
            plan.multiArgs = { constantSecond ? DNNL_ARG_SRC_0 : DNNL_ARG_SRC_1 };
            plan.multiSrcs = { constantSecond ? src0 : src1 };
            plan.constant = Plan::Constant { constantSecond ? DNNL_ARG_SRC_1 : DNNL_ARG_SRC_0,
                constantSecond ? src1 : src0, nullptr };
        }
    }

    void planResize(
        const Resize& s, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan)
    {
        const ResizePlan p = resizePlan(s, shape);
        bool halfPixel = s.coordinate_transformation_mode == Resize::Coordinates::HalfPixel
            || s.coordinate_transformation_mode == Resize::Coordinates::PytorchHalfPixel;
        for (const ResizeAxis& a : p.axis) // pytorch_half_pixel reads −0.5 where an axis resizes to 1
            if (s.coordinate_transformation_mode == Resize::Coordinates::PytorchHalfPixel && a.out == 1 && a.in > 1)
                halfPixel = false;
        if (s.mode == Resize::Mode::Cubic)
            throw UnsupportedError("onednn: resize mode \"cubic\" has no oneDNN primitive (resampling is nearest or "
                                   "linear)");
        if (!halfPixel)
            throw UnsupportedError(std::string("onednn: resize with coordinate_transformation_mode \"")
                + resizeCoordinatesName(s.coordinate_transformation_mode)
                + "\": oneDNN's resampling computes half_pixel coordinates only");
        if (s.mode == Resize::Mode::Nearest && s.nearest_mode != Resize::NearestMode::RoundPreferCeil)
            throw UnsupportedError(std::string("onednn: resize nearest with nearest_mode \"")
                + resizeNearestModeName(s.nearest_mode)
                + "\": oneDNN's nearest rounds half up (round_prefer_ceil, PyTorch's nearest-exact) only");
        for (const ResizeAxis& a : p.axis)
            if (a.scale * double(a.in) != double(a.out))
                throw UnsupportedError("onednn: resize with a scale_factor whose product with the input is not the "
                                       "output size (oneDNN's coordinates use out / in)");
        const dnnl::algorithm alg
            = s.mode == Resize::Mode::Linear ? dnnl::algorithm::resampling_linear : dnnl::algorithm::resampling_nearest;
        const Shape& in = shape.in;
        const Shape& out = shape.out;
        plan.volume = in.isVolume();
        const memory::desc src = plan.volume ? ncdhw(in, act) : nchw(in, act);
        const memory::desc dst = plan.volume ? ncdhw(out, act) : nchw(out, act);
        const dnnl::resampling_forward::desc d(kInference, alg, src, dst);
        plan.pd = dnnl::resampling_forward::primitive_desc(d, eng);
    }

} // namespace

Plan planLayer(
    const Layer* layer, const LayerSpec& spec, const LayerShape& shape, const dnnl::engine& eng, memory::data_type act)
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
                const memory::desc wAny(wDims, act, Tag::any);
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
                        anyLayout(in, act), wAny, biasDesc, anyLayout(out, act), strides, dilates, padL, padR);
                    plan.pd = dnnl::deconvolution_forward::primitive_desc(d, eng);
                } else {
                    const int64_t extH = s.dilation[0] * (kh - 1) + 1, extW = s.dilation[1] * (kw - 1) + 1;
                    const Dims padR { rightPad(in.h, out.h, s.stride[0], extH, pad.top, pad.bottom),
                        rightPad(in.w, out.w, s.stride[1], extW, pad.left, pad.right) };
                    const dnnl::convolution_forward::desc d(kInference, dnnl::algorithm::convolution_auto,
                        anyLayout(in, act), wAny, biasDesc, anyLayout(out, act), strides, dilates, padL, padR);
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
                const dnnl::pooling_v2_forward::desc d(kInference, alg, nchw(in, act), nchw(out, act), { sh, sw },
                    { kh, kw }, dil, { pad.top, pad.left }, padR);
                plan.pd = dnnl::pooling_v2_forward::primitive_desc(d, eng);
            } else if constexpr (std::is_same_v<S, GlobalAvgPool2d>) {
                const dnnl::pooling_v2_forward::desc d(kInference, dnnl::algorithm::pooling_avg_exclude_padding,
                    nchw(in, act), nchw(out, act), { in.h, in.w }, { in.h, in.w }, { 0, 0 }, { 0, 0 }, { 0, 0 });
                plan.pd = dnnl::pooling_v2_forward::primitive_desc(d, eng);
            } else if constexpr (std::is_same_v<S, BatchNorm2d>) {
                planBatchNorm(s, in, act, eng, plan, param, layer);
            } else if constexpr (
                std::is_same_v<
                    S, ReLU> || std::is_same_v<S, LeakyReLU> || std::is_same_v<S, Sigmoid> || std::is_same_v<S, Tanh> || std::is_same_v<S, ELU> || std::is_same_v<S, ReLU6> || std::is_same_v<S, Hardswish> || std::is_same_v<S, Hardsigmoid> || std::is_same_v<S, SiLU> || std::is_same_v<S, Hardtanh>) {
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
                const dnnl::eltwise_forward::desc d(kInference, alg, nchw(in, act), alpha, beta);
                plan.pd = dnnl::eltwise_forward::primitive_desc(d, attr, eng);
            } else if constexpr (std::is_same_v<S, Linear>) {
                const LinearRows rows = linearRows(in); // [rows, in_features]: any rank's last axis
                const int64_t features = rows.inFeatures, outF = s.out_features;
                const memory::desc src({ rows.rows, features }, act, Tag::nc);
                const memory::desc dst({ rows.rows, outF }, act, Tag::nc);
                const memory::desc wAny({ s.out_features, features }, act, Tag::any);
                const auto biasDesc = s.bias ? vector(s.out_features) : memory::desc();
                const dnnl::inner_product_forward::desc d(kInference, src, wAny, biasDesc, dst);
                plan.pd = dnnl::inner_product_forward::primitive_desc(d, eng);
                plan.flatSrc = true;
                param(DNNL_ARG_WEIGHTS, memory::desc({ s.out_features, features }, kF32, Tag::oi),
                    layer ? layer->weight : nullptr);
                if (s.bias)
                    param(DNNL_ARG_BIAS, vector(s.out_features), layer ? layer->bias : nullptr);
            } else if constexpr (isSoftmaxKind<S> || std::is_same_v<S, Reduce>) {
                planAlongAxes(plan, spec, shape, eng, act); // onednn_reduce.cpp
            } else if constexpr (
                std::is_same_v<S,
                    Flatten> || std::is_same_v<S, Reshape> || std::is_same_v<S, Identity> || std::is_same_v<S, Dropout>) {
                plan.flatten = true;
            } else if constexpr (std::is_same_v<S, Transpose>) {
                // The input read in the output's axis order (its strides permuted), reordered into the plain output.
                // Bound as a one-input "binary" step: DNNL_ARG_SRC_0 is the reorder's DNNL_ARG_FROM.
                const std::vector<int64_t> perm = wrappedDims(s, in.ndim());
                const std::vector<int64_t> inDims = in.dims();
                Dims inStrides(inDims.size(), 1), strides, outDims;
                for (size_t a = inDims.size() - 1; a > 0; --a)
                    inStrides[a - 1] = inStrides[a] * inDims[a];
                for (const int64_t p : perm) {
                    outDims.push_back(inDims[size_t(p)]);
                    strides.push_back(inStrides[size_t(p)]);
                }
                const memory::desc from(outDims, act, strides);
                const memory::desc to(outDims, act, plainStrides(outDims));
                const dnnl::reorder::primitive_desc pd(eng, from, eng, to);
                plan.multi = plan.binary = true;
                plan.multiPrimitive = dnnl::reorder(pd);
                plan.multiImpl = pd.impl_info_str();
                plan.multiSrcs = { from };
                plan.multiDst = to;
            } else if constexpr (std::is_same_v<S, Concat>) {
                // Every tensor as [outer, size, inner] around the joined axis: one concat for any axis and rank.
                const int64_t dim = wrappedDim(s, out.ndim());
                const auto around = [&](const Shape& x) {
                    const std::vector<int64_t> d = x.dims();
                    Dims three { 1, d[size_t(dim)], 1 };
                    for (int64_t a = 0; a < dim; ++a)
                        three[0] *= d[size_t(a)];
                    for (size_t a = size_t(dim) + 1; a < d.size(); ++a)
                        three[2] *= d[a];
                    return memory::desc(three, act, Tag::abc);
                };
                plan.multi = true;
                for (const Shape& x : shape.ins)
                    plan.multiSrcs.push_back(around(x));
                plan.multiDst = around(out);
                const dnnl::concat::primitive_desc pd(*plan.multiDst, 1, plan.multiSrcs, eng);
                plan.multiPrimitive = dnnl::concat(pd);
                plan.multiImpl = pd.impl_info_str();
            } else if constexpr (std::is_same_v<S, Add>) {
                plan.multi = true;
                std::vector<memory::desc> srcs;
                for (const Shape& x : shape.ins)
                    srcs.push_back(nchw(x, act));
                if (srcs.size() == 2) {
                    plan.binary = true;
                    const dnnl::binary::desc d(dnnl::algorithm::binary_add, srcs[0], srcs[1], nchw(out, act));
                    const dnnl::binary::primitive_desc pd(d, eng);
                    plan.multiPrimitive = dnnl::binary(pd);
                    plan.multiImpl = pd.impl_info_str();
                } else {
                    const dnnl::sum::primitive_desc pd(
                        nchw(out, act), std::vector<float>(srcs.size(), 1.0f), srcs, eng);
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
                const dnnl::binary::desc d(dnnl::algorithm::binary_mul, nchw(a, act), nchw(b, act), nchw(out, act));
                const dnnl::binary::primitive_desc pd(d, eng);
                plan.multiPrimitive = dnnl::binary(pd);
                plan.multiImpl = pd.impl_info_str();
            } else if constexpr (std::is_same_v<S, PReLU>) {
                // oneDNN broadcasts the weights: {1, C, 1, 1} is one slope per channel, {1, 1, 1, 1} one for all
                // (a volume's D·H is one axis here, a flat input's H and W are 1).
                const memory::desc w({ 1, s.num_parameters, 1, 1 }, kF32, Tag::nchw);
                const dnnl::prelu_forward::desc d(kInference, nchw(in, act), w);
                plan.pd = dnnl::prelu_forward::primitive_desc(d, eng);
                param(DNNL_ARG_WEIGHTS, w, layer ? layer->weight : nullptr);
            } else if constexpr (std::is_same_v<S, Pad>) {
                throw UnsupportedError("onednn: pad has no oneDNN primitive (oneDNN 2.6 pads only inside a "
                                       "convolution or pooling)");
            } else if constexpr (std::is_same_v<S, Resize>) {
                planResize(s, shape, act, eng, plan);
            } else if constexpr (std::is_same_v<S, ChannelShuffle>) {
                // oneDNN's shuffle sees the axis as (C/G) × G and transposes it; PyTorch's ChannelShuffle(g) sees it
                // as g × (C/g): oneDNN's group size G is C/g.
                const dnnl::shuffle_forward::desc d(kInference, nchw(in, act), 1, int(in.c / s.groups));
                plan.pd = dnnl::shuffle_forward::primitive_desc(d, eng);
            } else if constexpr (isElementwiseMathKind<S>) {
                planMath(mathOpOf(s), in, act, eng, plan);
            } else if constexpr (std::is_same_v<S, Binary>) {
                planBinary(s, shape, act, eng, plan);
            } else if constexpr (std::is_same_v<S, Slice>) {
                planTensorKind(s, shape, act, eng, plan); // one reorder of a strided view (onednn_plan_tensor.cpp)
            } else if constexpr (std::is_same_v<S, Conv3d> || std::is_same_v<S, ConvTranspose3d>) {
                planConvolution3d(s, shape, act, eng, plan, param, layer);
            } else if constexpr (std::is_same_v<S, MaxPool3d> || std::is_same_v<S, AvgPool3d>) {
                planPool3d(s, shape, act, eng, plan);
            } else if constexpr (std::is_same_v<S, GlobalAvgPool3d>) {
                // The whole [D·H, W] plane of each channel (nchw() folds D into H).
                const Dims plane { in.d * in.h, in.w };
                const dnnl::pooling_v2_forward::desc d(kInference, dnnl::algorithm::pooling_avg_exclude_padding,
                    nchw(in, act), nchw(out, act), plane, plane, { 0, 0 }, { 0, 0 }, { 0, 0 });
                plan.pd = dnnl::pooling_v2_forward::primitive_desc(d, eng);
            } else if constexpr (std::is_same_v<S, BatchNorm3d>) {
                planBatchNorm(s, in, act, eng, plan, param, layer);
            } else if constexpr (isNormKind<S>) {
                planNormalization(s, shape, act, eng, plan, layer);
            } else if constexpr (std::is_same_v<S, Matmul> || std::is_same_v<S, Gather>) {
                planTensorKind(s, shape, act, eng, plan); // onednn_plan_tensor.cpp
            } else {
                static_assert(dependent_false<S>, "onednn backend: a layer kind has no branch");
            }
        },
        spec);
    return plan;
}

} // namespace convscope::onednn
