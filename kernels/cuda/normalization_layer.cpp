// normalization_layer.h: the plan of compute/normalization.h as the kernel's geometry.
#include "kernels/cuda/normalization_layer.h"

namespace convscope::cuda {

NormGeometry normGeometryOf(const LayerSpec& spec, const Shape& in)
{
    const NormPlan p = normPlan(spec, in);
    return { p.rows, p.rowLength, p.groups, p.inner, float(p.eps) };
}

} // namespace convscope::cuda
