// The primitives of each layer kind the onednn training session runs on oneDNN (onednn_training.h has the table),
// and the one helper that binds a call's operands with the reorders its primitive's layouts need.
#include "backends/onednn/onednn_training.h"

#include "compute/elementwise_math.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/linear_geometry.h"
#include "compute/reduce.h"

#include <type_traits>
#include <variant>

namespace convscope::onednn {

Operand operand(int arg, const memory::desc& user, const memory::desc& want, bool output, const dnnl::engine& eng)
{
    Operand op { arg, user, output, std::nullopt, std::nullopt, std::nullopt, std::nullopt };
    if (want != user) {
        op.inner = memory(want, eng);
        op.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, want, eng, user))
                            : dnnl::reorder(dnnl::reorder::primitive_desc(eng, user, eng, want));
    }
    return op;
}

Operand roundedOperand(int arg, const memory::desc& user, const memory::desc& roundedUser, const memory::desc& want,
    const dnnl::engine& eng, bool output)
{
    if (output)
        return { arg, user, true, memory(want, eng),
            dnnl::reorder(dnnl::reorder::primitive_desc(eng, roundedUser, eng, user)), memory(roundedUser, eng),
            dnnl::reorder(dnnl::reorder::primitive_desc(eng, want, eng, roundedUser)) };
    return { arg, user, false, memory(want, eng),
        dnnl::reorder(dnnl::reorder::primitive_desc(eng, roundedUser, eng, want)), memory(roundedUser, eng),
        dnnl::reorder(dnnl::reorder::primitive_desc(eng, user, eng, roundedUser)) };
}

void run(Call& call, const std::vector<const void*>& handles, const dnnl::engine& eng, dnnl::stream& stream)
{
    if (handles.size() != call.operands.size())
        throw Error("internal error: onednn training: a primitive call got " + std::to_string(handles.size())
            + " tensors for " + std::to_string(call.operands.size()) + " operands");
    try {
        std::unordered_map<int, memory> args = call.fixed;
        std::vector<std::pair<Operand*, memory>> outputs;
        for (size_t k = 0; k < handles.size(); ++k) {
            Operand& op = call.operands[k];
            memory user(op.user, eng, const_cast<void*>(handles[k])); // inputs are only read
            if (!op.inner) {
                args[op.arg] = user;
                continue;
            }
            if (op.output) {
                outputs.emplace_back(&op, user);
            } else if (op.rounded) {
                op.toRounded->execute(stream, user, *op.rounded);
                op.reorder->execute(stream, *op.rounded, *op.inner);
            } else {
                op.reorder->execute(stream, user, *op.inner);
            }
            args[op.arg] = *op.inner;
        }
        call.primitive->execute(stream, args);
        for (auto& [op, user] : outputs) {
            if (op->rounded) {
                op->toRounded->execute(stream, *op->inner, *op->rounded);
                op->reorder->execute(stream, *op->rounded, user);
            } else {
                op->reorder->execute(stream, *op->inner, user);
            }
        }
        stream.wait();
    } catch (const dnnl::error& e) {
        throw Error("onednn.auto training: " + call.label + ": " + e.what() + " (dnnl status "
            + std::to_string(int(e.status)) + ")");
    }
}

namespace {

    using Algorithm = dnnl::algorithm;
    constexpr auto kTraining = dnnl::prop_kind::forward_training;

    const char* argName(int arg)
    {
        switch (arg) {
        case DNNL_ARG_SRC:
            return "src";
        case DNNL_ARG_DST:
            return "dst";
        case DNNL_ARG_WEIGHTS:
            return "weights";
        case DNNL_ARG_DIFF_SRC:
            return "diff_src";
        case DNNL_ARG_DIFF_DST:
            return "diff_dst";
        case DNNL_ARG_DIFF_WEIGHTS:
            return "diff_weights";
        default:
            return "an operand";
        }
    }

    // impl_info_str and the operands that go through a reorder ("jit:avx512_core (src, weights reordered ...)").
    template <typename PD> void describe(Call& call, const PD& pd)
    {
        call.primitive = dnnl::primitive(pd);
        call.impl = pd.impl_info_str();
        std::string reordered;
        for (const Operand& op : call.operands)
            if (op.inner)
                reordered += (reordered.empty() ? "" : ", ") + std::string(argName(op.arg));
        if (!reordered.empty())
            call.impl += " (" + reordered + " reordered from / to PyTorch's layout, timed)";
    }

    // The three calls of a layer with weights (conv, deconv, inner product) from their primitive descriptors: x, y and
    // the weights in PyTorch's layouts (`x`, `y`, `wUser`), each reordered where the primitive chose another.
    template <typename Fwd, typename Data, typename Weights>
    TrainPlan withWeights(const Fwd& fwd, const Data& data, const Weights& weights, const memory::desc& x,
        const memory::desc& y, const memory::desc& wUser, const memory::desc& bias, const dnnl::engine& eng)
    {
        TrainPlan p;
        p.kind = TrainPlan::Kind::Conv;
        p.hasBias = !bias.is_zero();
        p.forward.operands = { operand(DNNL_ARG_SRC, x, fwd.src_desc(), false, eng),
            operand(DNNL_ARG_WEIGHTS, wUser, fwd.weights_desc(), false, eng) };
        if (p.hasBias)
            p.forward.operands.push_back(operand(DNNL_ARG_BIAS, bias, fwd.bias_desc(), false, eng));
        p.forward.operands.push_back(operand(DNNL_ARG_DST, y, fwd.dst_desc(), true, eng));
        p.data.operands = { operand(DNNL_ARG_DIFF_DST, y, data.diff_dst_desc(), false, eng),
            operand(DNNL_ARG_WEIGHTS, wUser, data.weights_desc(), false, eng),
            operand(DNNL_ARG_DIFF_SRC, x, data.diff_src_desc(), true, eng) };
        p.weights.operands = { operand(DNNL_ARG_SRC, x, weights.src_desc(), false, eng),
            operand(DNNL_ARG_DIFF_DST, y, weights.diff_dst_desc(), false, eng),
            operand(DNNL_ARG_DIFF_WEIGHTS, wUser, weights.diff_weights_desc(), true, eng) };
        if (p.hasBias)
            p.weights.operands.push_back(operand(DNNL_ARG_DIFF_BIAS, bias, weights.diff_bias_desc(), true, eng));
        describe(p.forward, fwd);
        describe(p.data, data);
        describe(p.weights, weights);
        return p;
    }

    // A bf16 layer's FP32 gradient calls (TrainPlan::dataFp32, weightsFp32), as withWeights makes the bf16 ones: the
    // data gradient with gy and the weights rounded to bf16 and its result rounded to bf16 (the bf16 primitive's
    // diff_src is bf16) before it widens into the session's gx; the weight gradient with x and gy rounded to bf16.
    // `*Bf16`: the user descriptors in bf16.
    template <typename Data, typename Weights>
    void addFp32Gradients(TrainPlan& p, const Data& data, const Weights& weights, const memory::desc& x,
        const memory::desc& xBf16, const memory::desc& y, const memory::desc& yBf16, const memory::desc& wUser,
        const memory::desc& wBf16, const memory::desc& bias, const dnnl::engine& eng)
    {
        p.dataFp32.operands = { roundedOperand(DNNL_ARG_DIFF_DST, y, yBf16, data.diff_dst_desc(), eng),
            roundedOperand(DNNL_ARG_WEIGHTS, wUser, wBf16, data.weights_desc(), eng),
            roundedOperand(DNNL_ARG_DIFF_SRC, x, xBf16, data.diff_src_desc(), eng, true) };
        describe(p.dataFp32, data);
        p.dataFp32.impl += " on operands rounded to bf16, its result rounded to bf16";
        p.weightsFp32.operands = { roundedOperand(DNNL_ARG_SRC, x, xBf16, weights.src_desc(), eng),
            roundedOperand(DNNL_ARG_DIFF_DST, y, yBf16, weights.diff_dst_desc(), eng),
            operand(DNNL_ARG_DIFF_WEIGHTS, wUser, weights.diff_weights_desc(), true, eng) };
        if (p.hasBias)
            p.weightsFp32.operands.push_back(operand(DNNL_ARG_DIFF_BIAS, bias, weights.diff_bias_desc(), true, eng));
        describe(p.weightsFp32, weights);
        p.weightsFp32.impl += " on operands rounded to bf16";
    }

    // The window axes of a 2-D (H, W) or 3-D (D, H, W) convolution or pool: their sizes in and out, and the padding
    // before and after each, from the shape's resolved padding.
    template <bool Volume> struct WindowAxes {
        static constexpr size_t count = Volume ? 3 : 2;
        int64_t in[3] {}, out[3] {}, before[3] {}, after[3] {};
        explicit WindowAxes(const LayerShape& shape)
        {
            const Shape &x = shape.in, &y = shape.out;
            const int64_t ins[3] = { x.d, x.h, x.w }, outs[3] = { y.d, y.h, y.w };
            for (size_t a = 0; a < count; ++a) {
                in[a] = ins[a + 3 - count];
                out[a] = outs[a + 3 - count];
                if constexpr (Volume) {
                    const auto around = shape.resolvedPadding3d.along(int(a));
                    before[a] = around[0];
                    after[a] = around[1];
                } else {
                    const Padding2d& pad = shape.resolvedPadding;
                    before[a] = a == 0 ? pad.top : pad.left;
                    after[a] = a == 0 ? pad.bottom : pad.right;
                }
            }
        }
    };

    // conv2d, conv_transpose2d, conv3d and conv_transpose3d with the forward plan's geometry (onednn_plan.cpp: groups
    // as a g-first weight, dilation d − 1, the padding after from rightPad, output_padding as a smaller padding after),
    // the activations and weights in oneDNN's chosen layouts.
    template <typename S>
    TrainPlan planConvolution(const S& s, const LayerShape& shape, const dnnl::engine& eng, memory::data_type products)
    {
        constexpr bool transposed = std::is_same_v<S, ConvTranspose2d> || std::is_same_v<S, ConvTranspose3d>;
        constexpr bool volume = std::is_same_v<S, Conv3d> || std::is_same_v<S, ConvTranspose3d>;
        const WindowAxes<volume> axes(shape);
        const Shape& in = shape.in;
        const Shape& out = shape.out;
        const int64_t g = s.groups;
        Dims wDims = g == 1 ? Dims { out.c, in.c } : Dims { g, out.c / g, in.c / g };
        Dims strides, dilates, padL, padR;
        for (size_t a = 0; a < axes.count; ++a) {
            const int64_t before = axes.before[a], after = axes.after[a];
            const int64_t k = s.kernel_size[a], stride = s.stride[a];
            wDims.push_back(k);
            strides.push_back(stride);
            dilates.push_back(s.dilation[a] - 1);
            padL.push_back(before);
            if constexpr (transposed) {
                padR.push_back(after - s.output_padding[a]);
                if (padR.back() <= -stride)
                    throw UnsupportedError(layerTypeName(LayerSpec(s))
                        + " output_padding reaches the stride plus the padding after, which oneDNN cannot express");
            } else {
                padR.push_back(rightPad(axes.in[a], axes.out[a], stride, s.dilation[a] * (k - 1) + 1, before, after));
            }
        }
        Tag wTag = Tag::any;
        if constexpr (volume)
            wTag = transposed ? (g == 1 ? Tag::iodhw : Tag::giodhw) : (g == 1 ? Tag::oidhw : Tag::goidhw);
        else
            wTag = transposed ? (g == 1 ? Tag::iohw : Tag::giohw) : (g == 1 ? Tag::oihw : Tag::goihw);
        const memory::desc wUser(wDims, kF32, wTag), wAny(wDims, products, Tag::any), wDiff(wDims, kF32, Tag::any);
        const memory::desc x = volume ? ncdhw(in, kF32) : nchw(in, kF32);
        const memory::desc y = volume ? ncdhw(out, kF32) : nchw(out, kF32);
        const memory::desc src = volume ? ncdhw(in, products, Tag::any) : anyLayout(in, products);
        const memory::desc dst = volume ? ncdhw(out, products, Tag::any) : anyLayout(out, products);
        const memory::desc bias = s.bias ? vector(out.c) : memory::desc();
        using Fwd = std::conditional_t<transposed, dnnl::deconvolution_forward, dnnl::convolution_forward>;
        using Data = std::conditional_t<transposed, dnnl::deconvolution_backward_data, dnnl::convolution_backward_data>;
        using Weights
            = std::conditional_t<transposed, dnnl::deconvolution_backward_weights, dnnl::convolution_backward_weights>;
        const Algorithm alg = transposed ? Algorithm::deconvolution_direct : Algorithm::convolution_direct;
        const typename Fwd::primitive_desc fwd(
            typename Fwd::desc(kTraining, alg, src, wAny, bias, dst, strides, dilates, padL, padR), eng);
        const typename Data::primitive_desc data(
            typename Data::desc(alg, src, wAny, dst, strides, dilates, padL, padR), eng, fwd);
        const typename Weights::primitive_desc weights(
            typename Weights::desc(alg, src, wDiff, bias, dst, strides, dilates, padL, padR), eng, fwd);
        TrainPlan p = withWeights(fwd, data, weights, x, y, wUser, bias, eng);
        if (products != kF32) {
            const memory::desc src32 = volume ? ncdhw(in, kF32, Tag::any) : anyLayout(in, kF32);
            const memory::desc dst32 = volume ? ncdhw(out, kF32, Tag::any) : anyLayout(out, kF32);
            const memory::desc w32(wDims, kF32, Tag::any);
            const typename Fwd::primitive_desc hint(
                typename Fwd::desc(kTraining, alg, src32, w32, bias, dst32, strides, dilates, padL, padR), eng);
            const typename Data::primitive_desc data32(
                typename Data::desc(alg, src32, w32, dst32, strides, dilates, padL, padR), eng, hint);
            const typename Weights::primitive_desc weights32(
                typename Weights::desc(alg, src32, wDiff, bias, dst32, strides, dilates, padL, padR), eng, hint);
            addFp32Gradients(p, data32, weights32, x, volume ? ncdhw(in, products) : nchw(in, products), y,
                volume ? ncdhw(out, products) : nchw(out, products), wUser, memory::desc(wDims, products, wTag), bias,
                eng);
        }
        return p;
    }

    // linear as inner_product on [rows, in_features] → [rows, out_features] (compute/linear_geometry.h).
    TrainPlan planLinear(const Linear& s, const LayerShape& shape, const dnnl::engine& eng, memory::data_type products)
    {
        const LinearRows rows = linearRows(shape.in);
        const memory::desc x({ rows.rows, rows.inFeatures }, kF32, Tag::nc);
        const memory::desc y({ rows.rows, s.out_features }, kF32, Tag::nc);
        const memory::desc wUser({ s.out_features, rows.inFeatures }, kF32, Tag::oi);
        const memory::desc wAny({ s.out_features, rows.inFeatures }, products, Tag::any);
        const memory::desc wDiff({ s.out_features, rows.inFeatures }, kF32, Tag::any);
        // The primitive's own activations: the session's FP32 rows, or bf16 ones the reorders round into.
        const memory::desc src({ rows.rows, rows.inFeatures }, products, Tag::any);
        const memory::desc dst({ rows.rows, s.out_features }, products, Tag::any);
        const memory::desc bias = s.bias ? vector(s.out_features) : memory::desc();
        const dnnl::inner_product_forward::primitive_desc fwd(
            dnnl::inner_product_forward::desc(kTraining, src, wAny, bias, dst), eng);
        const dnnl::inner_product_backward_data::primitive_desc data(
            dnnl::inner_product_backward_data::desc(src, wAny, dst), eng, fwd);
        const dnnl::inner_product_backward_weights::primitive_desc weights(
            dnnl::inner_product_backward_weights::desc(src, wDiff, bias, dst), eng, fwd);
        TrainPlan p = withWeights(fwd, data, weights, x, y, wUser, bias, eng);
        if (products != kF32) {
            const memory::desc src32({ rows.rows, rows.inFeatures }, kF32, Tag::any);
            const memory::desc dst32({ rows.rows, s.out_features }, kF32, Tag::any);
            const memory::desc w32({ s.out_features, rows.inFeatures }, kF32, Tag::any);
            const dnnl::inner_product_forward::primitive_desc hint(
                dnnl::inner_product_forward::desc(kTraining, src32, w32, bias, dst32), eng);
            const dnnl::inner_product_backward_data::primitive_desc data32(
                dnnl::inner_product_backward_data::desc(src32, w32, dst32), eng, hint);
            const dnnl::inner_product_backward_weights::primitive_desc weights32(
                dnnl::inner_product_backward_weights::desc(src32, wDiff, bias, dst32), eng, hint);
            addFp32Gradients(p, data32, weights32, x, memory::desc({ rows.rows, rows.inFeatures }, products, Tag::nc),
                y, memory::desc({ rows.rows, s.out_features }, products, Tag::nc), wUser,
                memory::desc({ s.out_features, rows.inFeatures }, products, Tag::oi), bias, eng);
        }
        return p;
    }

    // Batch norm in training mode on [N, C, D·H, W]: the batch statistics into the plan's mean / variance, which the
    // backward reads; dγ and dβ into the plan's diffScale / diffShift.
    TrainPlan planBatchNorm(const Layer& layer, double eps, const LayerShape& shape, const dnnl::engine& eng)
    {
        const Shape& in = shape.in;
        TrainPlan p;
        p.kind = TrainPlan::Kind::BatchNorm;
        p.hasScale = bool(layer.weight);
        p.hasShift = bool(layer.bias);
        p.count = in.n * in.d * in.h * in.w;
        p.eps = eps;
        auto flags = dnnl::normalization_flags::none;
        if (p.hasScale)
            flags = flags | dnnl::normalization_flags::use_scale;
        if (p.hasShift)
            flags = flags | dnnl::normalization_flags::use_shift;
        const memory::desc x = nchw(in, kF32), c = vector(in.c);
        const dnnl::batch_normalization_forward::primitive_desc fwd(
            dnnl::batch_normalization_forward::desc(kTraining, x, float(eps), flags), eng);
        const auto bprop = p.hasScale || p.hasShift ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data;
        const dnnl::batch_normalization_backward::primitive_desc data(
            dnnl::batch_normalization_backward::desc(bprop, x, x, float(eps), flags), eng, fwd);
        p.mean = memory(c, eng);
        p.variance = memory(c, eng);
        p.diffScale = memory(c, eng);
        p.diffShift = memory(c, eng);
        p.dxScratch = memory(x, eng);
        p.forward.operands = { operand(DNNL_ARG_SRC, x, fwd.src_desc(), false, eng) };
        p.data.operands = { operand(DNNL_ARG_SRC, x, data.src_desc(), false, eng),
            operand(DNNL_ARG_DIFF_DST, x, data.diff_dst_desc(), false, eng) };
        if (p.hasScale) {
            p.forward.operands.push_back(operand(DNNL_ARG_SCALE, c, c, false, eng));
            p.data.operands.push_back(operand(DNNL_ARG_SCALE, c, c, false, eng));
            p.data.fixed[DNNL_ARG_DIFF_SCALE] = p.diffScale;
        }
        if (p.hasShift) { // oneDNN 2.6's backward takes the shift too, though dx does not depend on it
            p.forward.operands.push_back(operand(DNNL_ARG_SHIFT, c, c, false, eng));
            p.data.operands.push_back(operand(DNNL_ARG_SHIFT, c, c, false, eng));
            p.data.fixed[DNNL_ARG_DIFF_SHIFT] = p.diffShift;
        }
        p.forward.operands.push_back(operand(DNNL_ARG_DST, x, fwd.dst_desc(), true, eng));
        p.data.operands.push_back(operand(DNNL_ARG_DIFF_SRC, x, data.diff_src_desc(), true, eng));
        p.forward.fixed = { { DNNL_ARG_MEAN, p.mean }, { DNNL_ARG_VARIANCE, p.variance } };
        p.data.fixed[DNNL_ARG_MEAN] = p.mean;
        p.data.fixed[DNNL_ARG_VARIANCE] = p.variance;
        describe(p.forward, fwd);
        describe(p.data, data);
        return p;
    }

    // prelu: one slope per channel ({1, C, 1, 1}) or one for all ({1, 1, 1, 1}), broadcast by oneDNN as in the
    // forward plan; its backward gives dx and the slopes' gradient (into diffScale) in one primitive.
    TrainPlan planPrelu(const PReLU& s, const LayerShape& shape, const dnnl::engine& eng)
    {
        const memory::desc x = nchw(shape.in, kF32), w({ 1, s.num_parameters, 1, 1 }, kF32, Tag::nchw);
        const dnnl::prelu_forward::primitive_desc fwd(dnnl::prelu_forward::desc(kTraining, x, w), eng);
        const dnnl::prelu_backward::primitive_desc data(dnnl::prelu_backward::desc(x, w, x, w), eng, fwd);
        TrainPlan p;
        p.kind = TrainPlan::Kind::Prelu;
        p.diffScale = memory(w, eng);
        p.dxScratch = memory(x, eng);
        p.forward.operands = { operand(DNNL_ARG_SRC, x, fwd.src_desc(), false, eng),
            operand(DNNL_ARG_WEIGHTS, w, fwd.weights_desc(), false, eng),
            operand(DNNL_ARG_DST, x, fwd.dst_desc(), true, eng) };
        p.data.operands = { operand(DNNL_ARG_SRC, x, data.src_desc(), false, eng),
            operand(DNNL_ARG_WEIGHTS, w, data.weights_desc(), false, eng),
            operand(DNNL_ARG_DIFF_DST, x, data.diff_dst_desc(), false, eng),
            operand(DNNL_ARG_DIFF_SRC, x, data.diff_src_desc(), true, eng) };
        if (data.diff_weights_desc() != w)
            throw UnsupportedError("oneDNN's prelu backward wants the slopes' gradient in another layout");
        p.data.fixed[DNNL_ARG_DIFF_WEIGHTS] = p.diffScale;
        describe(p.forward, fwd);
        describe(p.data, data);
        return p;
    }

    TrainPlan planEltwise(Algorithm alg, float alpha, float beta, const LayerShape& shape, const dnnl::engine& eng)
    {
        const memory::desc x = nchw(shape.in, kF32);
        const dnnl::eltwise_forward::primitive_desc fwd(
            dnnl::eltwise_forward::desc(kTraining, alg, x, alpha, beta), eng);
        const dnnl::eltwise_backward::primitive_desc data(
            dnnl::eltwise_backward::desc(alg, x, x, alpha, beta), eng, fwd);
        TrainPlan p;
        p.kind = TrainPlan::Kind::Eltwise;
        p.forward.operands = { operand(DNNL_ARG_SRC, x, x, false, eng), operand(DNNL_ARG_DST, x, x, true, eng) };
        p.data.operands = { operand(DNNL_ARG_DIFF_DST, x, x, false, eng), operand(DNNL_ARG_SRC, x, x, false, eng),
            operand(DNNL_ARG_DIFF_SRC, x, x, true, eng) };
        describe(p.forward, fwd);
        describe(p.data, data);
        return p;
    }

    // Pooling with the forward plan's windows: on NCHW (a volume's D·H one axis: global pooling), or NCDHW (`volume`).
    TrainPlan planPool(Algorithm alg, const Dims& strides, const Dims& kernel, const Dims& dilation, const Dims& padL,
        const Dims& padR, const LayerShape& shape, const dnnl::engine& eng, bool volume = false)
    {
        const memory::desc x = volume ? ncdhw(shape.in, kF32) : nchw(shape.in, kF32);
        const memory::desc y = volume ? ncdhw(shape.out, kF32) : nchw(shape.out, kF32);
        const dnnl::pooling_v2_forward::primitive_desc fwd(
            dnnl::pooling_v2_forward::desc(kTraining, alg, x, y, strides, kernel, dilation, padL, padR), eng);
        const dnnl::pooling_v2_backward::primitive_desc data(
            dnnl::pooling_v2_backward::desc(alg, x, y, strides, kernel, dilation, padL, padR), eng, fwd);
        TrainPlan p;
        p.kind = TrainPlan::Kind::Pool;
        p.forward.operands = { operand(DNNL_ARG_SRC, x, fwd.src_desc(), false, eng),
            operand(DNNL_ARG_DST, y, fwd.dst_desc(), true, eng) };
        p.data.operands = { operand(DNNL_ARG_DIFF_DST, y, data.diff_dst_desc(), false, eng),
            operand(DNNL_ARG_DIFF_SRC, x, data.diff_src_desc(), true, eng) };
        if (fwd.workspace_desc().get_size() > 0) { // max pooling: each window's argmax, from forward to backward
            const memory workspace(fwd.workspace_desc(), eng);
            p.forward.fixed[DNNL_ARG_WORKSPACE] = workspace;
            p.data.fixed[DNNL_ARG_WORKSPACE] = workspace;
        }
        describe(p.forward, fwd);
        describe(p.data, data);
        return p;
    }

    // maxpool2d / avgpool2d / maxpool3d / avgpool3d: ceil_mode as the padding after the last window (rightPad), which
    // max pooling never reads (PyTorch's −∞ padding); avg pooling's count_include_pad as include / exclude padding.
    template <typename S> TrainPlan planWindowPool(const S& s, const LayerShape& shape, const dnnl::engine& eng)
    {
        constexpr bool isMax = std::is_same_v<S, MaxPool2d> || std::is_same_v<S, MaxPool3d>;
        constexpr bool volume = std::is_same_v<S, MaxPool3d> || std::is_same_v<S, AvgPool3d>;
        const WindowAxes<volume> axes(shape);
        const auto st = s.effectiveStride();
        Algorithm alg = Algorithm::pooling_max;
        if constexpr (!isMax) {
            if (s.divisor_override)
                throw UnsupportedError(layerTypeName(LayerSpec(s)) + " divisor_override has no oneDNN equivalent");
            alg = s.count_include_pad ? Algorithm::pooling_avg_include_padding : Algorithm::pooling_avg_exclude_padding;
        }
        Dims strides, kernel, dilation, padL, padR;
        for (size_t a = 0; a < axes.count; ++a) {
            const int64_t before = axes.before[a], after = axes.after[a];
            const int64_t k = s.kernel_size[a];
            int64_t d = 1;
            if constexpr (isMax)
                d = s.dilation[a];
            if constexpr (!isMax)
                // PyTorch's count_include_pad counts a window only up to the end of the padded input; oneDNN's
                // include_padding divides every window by the whole kernel. They differ only where ceil_mode lets the
                // last window hang past the padding.
                if (s.count_include_pad && (axes.out[a] - 1) * st[a] - before + k > axes.in[a] + after)
                    throw UnsupportedError("with ceil_mode the last " + layerTypeName(LayerSpec(s))
                        + " window hangs past the padding; PyTorch divides it by the part inside the padded input, "
                          "oneDNN by the whole kernel");
            strides.push_back(st[a]);
            kernel.push_back(k);
            dilation.push_back(d - 1);
            padL.push_back(before);
            padR.push_back(rightPad(axes.in[a], axes.out[a], st[a], d * (k - 1) + 1, before, after));
        }
        return planPool(alg, strides, kernel, dilation, padL, padR, shape, eng, volume);
    }

    template <typename S> TrainPlan planSoftmax(const S& s, const LayerShape& shape, const dnnl::engine& eng)
    {
        const AxisView v = softmaxView(shape.in, s.dim);
        const memory::desc d({ v.outer, v.size, v.inner }, kF32, Tag::abc);
        using Fwd = std::conditional_t<isLogSoftmax<S>, dnnl::logsoftmax_forward, dnnl::softmax_forward>;
        using Bwd = std::conditional_t<isLogSoftmax<S>, dnnl::logsoftmax_backward, dnnl::softmax_backward>;
        const typename Fwd::primitive_desc fwd(typename Fwd::desc(kTraining, d, 1), eng);
        const typename Bwd::primitive_desc data(typename Bwd::desc(d, d, 1), eng, fwd);
        TrainPlan p;
        p.kind = TrainPlan::Kind::Softmax;
        p.forward.operands = { operand(DNNL_ARG_SRC, d, d, false, eng), operand(DNNL_ARG_DST, d, d, true, eng) };
        p.data.operands = { operand(DNNL_ARG_DST, d, d, false, eng), operand(DNNL_ARG_DIFF_DST, d, d, false, eng),
            operand(DNNL_ARG_DIFF_SRC, d, d, true, eng) };
        describe(p.forward, fwd);
        describe(p.data, data);
        return p;
    }

} // namespace

TrainPlan planTraining(const Layer& layer, const LayerShape& shape, const dnnl::engine& eng, memory::data_type products)
{
    return std::visit(
        [&](const auto& s) -> TrainPlan {
            using S = std::decay_t<decltype(s)>;
            if constexpr (
                std::is_same_v<S,
                    Conv2d> || std::is_same_v<S, ConvTranspose2d> || std::is_same_v<S, Conv3d> || std::is_same_v<S, ConvTranspose3d>) {
                return planConvolution(s, shape, eng, products);
            } else if constexpr (std::is_same_v<S, Linear>) {
                return planLinear(s, shape, eng, products);
            } else if constexpr (std::is_same_v<S, BatchNorm2d> || std::is_same_v<S, BatchNorm3d>) {
                return planBatchNorm(layer, s.eps, shape, eng);
            } else if constexpr (std::is_same_v<S, ReLU>) {
                return planEltwise(Algorithm::eltwise_relu, 0, 0, shape, eng);
            } else if constexpr (std::is_same_v<S, LeakyReLU>) {
                return planEltwise(Algorithm::eltwise_relu, float(s.negative_slope), 0, shape, eng);
            } else if constexpr (std::is_same_v<S, ELU>) {
                return planEltwise(Algorithm::eltwise_elu, float(s.alpha), 0, shape, eng);
            } else if constexpr (std::is_same_v<S, Sigmoid>) {
                return planEltwise(Algorithm::eltwise_logistic, 0, 0, shape, eng);
            } else if constexpr (std::is_same_v<S, Tanh>) {
                return planEltwise(Algorithm::eltwise_tanh, 0, 0, shape, eng);
            } else if constexpr (std::is_same_v<S, SiLU>) {
                return planEltwise(Algorithm::eltwise_swish, 1, 0, shape, eng);
            } else if constexpr (std::is_same_v<S, ReLU6>) {
                return planEltwise(Algorithm::eltwise_clip_v2, 0, 6, shape, eng);
            } else if constexpr (std::is_same_v<S, Hardtanh>) {
                return planEltwise(Algorithm::eltwise_clip_v2, float(s.min_val), float(s.max_val), shape, eng);
            } else if constexpr (std::is_same_v<S, GELU>) {
                return planEltwise(s.tanh_approximation ? Algorithm::eltwise_gelu_tanh : Algorithm::eltwise_gelu_erf, 0,
                    0, shape, eng);
            } else if constexpr (std::is_same_v<S, PReLU>) {
                return planPrelu(s, shape, eng);
            } else if constexpr (std::is_same_v<S, Hardswish>) {
                throw UnsupportedError("oneDNN 2.6's hardswish gradient at ±3 differs from PyTorch's");
            } else if constexpr (
                std::is_same_v<S,
                    MaxPool2d> || std::is_same_v<S, AvgPool2d> || std::is_same_v<S, MaxPool3d> || std::is_same_v<S, AvgPool3d>) {
                return planWindowPool(s, shape, eng);
            } else if constexpr (std::is_same_v<S, GlobalAvgPool2d> || std::is_same_v<S, GlobalAvgPool3d>) {
                const Dims plane { shape.in.d * shape.in.h, shape.in.w };
                return planPool(
                    Algorithm::pooling_avg_exclude_padding, plane, plane, { 0, 0 }, { 0, 0 }, { 0, 0 }, shape, eng);
            } else if constexpr (isSoftmaxKind<S>) {
                return planSoftmax(s, shape, eng);
            } else {
                throw UnsupportedError("the session runs " + layerTypeName(s)
                    + " on the CPU's code: its oneDNN forward has no backward primitive to pair with");
            }
        },
        layer.spec);
}

} // namespace convscope::onednn
