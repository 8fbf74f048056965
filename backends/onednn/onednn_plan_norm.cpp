// The normalization kinds on oneDNN 2.6 (onednn_plan.h). layer_norm is layer_normalization_forward on the input seen
// as [rows, rowLength] (compute/normalization.h's plan; the tensor is contiguous, so the view is exact), with
// use_scale / use_shift where the layer has a weight / a bias. group_norm and instance_norm are the same rows of
// contiguous elements, but their weight and bias are per channel, where oneDNN's layer normalization scales each
// element of a row: without affine they run as the layer normalization of those rows (exact), with affine they are
// refused with the reason (oneDNN 2.6 has no group or instance normalization primitive; group normalization came in
// oneDNN 3.3).
#include "backends/onednn/onednn_plan.h"

#include "compute/error.h"
#include "compute/normalization.h"

namespace convscope::onednn {

void planNormalization(const LayerSpec& spec, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng,
    Plan& plan, const Layer* layer)
{
    const std::string type = layerTypeName(spec);
    const bool layerNorm = std::holds_alternative<LayerNorm>(spec);
    if (!layerNorm && normHasWeight(spec))
        throw UnsupportedError("onednn: " + type
            + " with affine has no oneDNN 2.6 primitive (no group or instance normalization; its layer normalization "
              "scales each element of a row, not each channel); it runs on the cpu.* selections");
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
}

} // namespace convscope::onednn
