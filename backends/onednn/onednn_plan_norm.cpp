// The normalization kinds on oneDNN 2.6 (onednn_plan.h). layer_norm is layer_normalization_forward on the input seen
// as [rows, rowLength] (compute/normalization.h's plan; the tensor is contiguous, so the view is exact), with
// use_scale / use_shift where the layer has a weight / a bias. group_norm and instance_norm are the same rows of
// contiguous elements, but their weight and bias are per channel, where oneDNN's layer normalization scales each
// element of a row (and oneDNN 2.6 has no group or instance normalization primitive; group normalization came in
// oneDNN 3.3): they run as the layer normalization of those rows without scale and shift, written to the output,
// then, with affine, PyTorch's y · weight[c] + bias[c] in place on the output seen as [N, C, S]: one binary_mul by
// the weight as [1, C, 1] (broadcast) with a binary_add post-op of the bias as [1, C, 1] ([N, C] and [1, C] when
// S = 1). No intermediate buffer: the binary primitive reads and writes the output (src0 = dst).
#include "backends/onednn/onednn_plan.h"

#include "compute/error.h"
#include "compute/normalization.h"

namespace convscope::onednn {

void planNormalization(const LayerSpec& spec, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng,
    Plan& plan, const Layer* layer)
{
    const bool layerNorm = std::holds_alternative<LayerNorm>(spec);
    const NormPlan p = normPlan(spec, shape.in);
    const memory::desc rows({ p.rows, p.rowLength }, act, Tag::ab);
    auto flags = dnnl::normalization_flags::none;
    const bool scale = layerNorm && normHasWeight(spec), shift = layerNorm && normHasBias(spec);
    if (scale)
        flags = flags | dnnl::normalization_flags::use_scale;
    if (shift)
        flags = flags | dnnl::normalization_flags::use_shift;
    const dnnl::layer_normalization_forward::desc d(kInference, rows, float(p.eps), flags);
    plan.pd = dnnl::layer_normalization_forward::primitive_desc(d, eng);
    plan.rowsDesc = rows;
    if (scale) {
        plan.params.emplace_back(DNNL_ARG_SCALE, vector(p.rowLength));
        plan.paramData.push_back(layer ? layer->weight : nullptr);
    }
    if (shift) {
        plan.params.emplace_back(DNNL_ARG_SHIFT, vector(p.rowLength));
        plan.paramData.push_back(layer ? layer->bias : nullptr);
    }
    if (layerNorm || !normHasWeight(spec))
        return;
    // group_norm: rows = N·G, rowLength = C/G·S, groups = G, inner = S; instance_norm: rows = N·C, rowLength = S,
    // groups = C, inner = S. Either way the channels are groups · rowLength / inner and N is rows / groups.
    if (p.groups < 1 || p.inner < 1 || p.rows % p.groups || p.rowLength % p.inner)
        throw Error("internal error: onednn: " + layerTypeName(spec) + " has a plan that is not [N, C, S]");
    const int64_t channels = p.groups * (p.rowLength / p.inner);
    // One position (S = 1) is [N, C] and [1, C]: oneDNN 2.6's jit:uni binary applies the post-op's [1, C, 1] to
    // [N, C, 1] as if it were one value (bias[0] everywhere; its multiplication is right), the 2-D form correctly.
    const bool flat = p.inner == 1;
    const int64_t batch = p.rows / p.groups;
    const memory::desc view = flat ? memory::desc({ batch, channels }, act, Tag::ab)
                                   : memory::desc({ batch, channels, p.inner }, act, Tag::abc);
    const memory::desc perChannel
        = flat ? memory::desc({ 1, channels }, kF32, Tag::ab) : memory::desc({ 1, channels, 1 }, kF32, Tag::abc);
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_add, perChannel);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    const dnnl::binary::desc bd(dnnl::algorithm::binary_mul, view, perChannel, view);
    const dnnl::binary::primitive_desc bpd(bd, attr, eng);
    Plan::InPlace affine { dnnl::binary(bpd), view, {}, {},
        "binary_mul by weight[c] with a binary_add post-op of bias[c] on the output as [N, C, S], in place ("
            + std::string(bpd.impl_info_str()) + ")" };
    affine.params
        = { { DNNL_ARG_SRC_1, perChannel }, { DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, perChannel } };
    affine.paramData = { layer ? layer->weight : nullptr, layer ? layer->bias : nullptr };
    plan.after.push_back(std::move(affine));
}

} // namespace convscope::onednn
