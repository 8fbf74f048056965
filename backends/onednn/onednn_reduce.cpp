// softmax, log_softmax and reduce on oneDNN 2.6 (onednn_plan.h): the softmax_forward and logsoftmax_forward
// primitives on the tensor as [outer, size, inner] around the axis (plain abc, axis 1), and the reduction primitive
// (reduction_mean, _sum, _max, _min, and l2 as reduction_norm_lp_sum with p = 2, eps = 0) from the input's dims to
// the same dims with the reduced axes 1 (keepdim's shape: the output's memory either way); over axes of size 1 only,
// an eltwise copy (abs for l2). Run as one-input steps of the multi-input path, whose user descriptors are these
// rather than nchw() of the shapes.
#include "backends/onednn/onednn_plan.h"

#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/reduce.h"

#include <type_traits>
#include <variant>

namespace convscope::onednn {

namespace {
    template <typename Primitive, typename P>
    void asStep(Plan& plan, const P& pd, const memory::desc& src, const memory::desc& dst)
    {
        plan.multi = plan.binary = true; // one input: DNNL_ARG_SRC_0 is DNNL_ARG_SRC
        plan.multiPrimitive = Primitive(pd);
        plan.multiImpl = pd.impl_info_str();
        plan.multiSrcs = { src };
        plan.multiDst = dst;
    }
} // namespace

void planAlongAxes(
    Plan& plan, const LayerSpec& spec, const LayerShape& shape, const dnnl::engine& eng, memory::data_type act)
{
    std::visit(
        [&](const auto& s) {
            using S = std::decay_t<decltype(s)>;
            if constexpr (isSoftmaxKind<S>) {
                const AxisView v = softmaxView(shape.in, s.dim);
                const memory::desc d({ v.outer, v.size, v.inner }, act, Tag::abc);
                if constexpr (isLogSoftmax<S>) {
                    const dnnl::logsoftmax_forward::desc desc(kInference, d, 1);
                    asStep<dnnl::logsoftmax_forward>(plan, dnnl::logsoftmax_forward::primitive_desc(desc, eng), d, d);
                } else {
                    const dnnl::softmax_forward::desc desc(kInference, d, 1);
                    asStep<dnnl::softmax_forward>(plan, dnnl::softmax_forward::primitive_desc(desc, eng), d, d);
                }
            } else if constexpr (std::is_same_v<S, Reduce>) {
                const Dims in = shape.in.dims();
                Reduce kept = s;
                kept.keepdim = true;
                const Dims out = reduceOutputDims(kept, in);
                if (out == in) {
                    // oneDNN refuses a reduction whose source and destination have the same dims. Over axes of size
                    // 1 only, each output is its one element: mean, sum, max and min copy it (linear 1·x + 0, exact),
                    // l2 is √(x²) = |x| (abs).
                    const memory::desc d(in, act, plainStrides(in));
                    const bool l2 = s.op == Reduce::Op::L2;
                    const dnnl::eltwise_forward::desc desc(kInference,
                        l2 ? dnnl::algorithm::eltwise_abs : dnnl::algorithm::eltwise_linear, d, l2 ? 0.0f : 1.0f, 0.0f);
                    asStep<dnnl::eltwise_forward>(plan, dnnl::eltwise_forward::primitive_desc(desc, eng), d, d);
                    return;
                }
                static const dnnl::algorithm algs[]
                    = { dnnl::algorithm::reduction_mean, dnnl::algorithm::reduction_sum, dnnl::algorithm::reduction_max,
                          dnnl::algorithm::reduction_min, dnnl::algorithm::reduction_norm_lp_sum };
                const memory::desc src(in, act, plainStrides(in)), dst(out, act, plainStrides(out));
                const dnnl::reduction::desc desc(algs[int(s.op)], src, dst, s.op == Reduce::Op::L2 ? 2.0f : 0.0f, 0.0f);
                asStep<dnnl::reduction>(plan, dnnl::reduction::primitive_desc(desc, eng), src, dst);
            } else {
                throw Error("internal error: onednn: " + layerTypeName(s) + " is not a softmax or a reduce");
            }
        },
        spec);
}

} // namespace convscope::onednn
