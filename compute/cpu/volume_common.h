// Internal to compute/cpu: the argument checks the 3-D convolutions share (op_common.h's, one axis more). The
// caller allocates `out` from shape inference; a mismatch (a weight file of the wrong size, an image where a volume
// belongs) is reported in words instead of reading or writing out of bounds.
#pragma once

#include "compute/cpu/op_common.h"

namespace convscope::cpu::detail {

struct ConvSizes3d {
    int64_t batch, inC, inD, inH, inW, outC, outD, outH, outW, kd, kh, kw, inPerGroup, outPerGroup;
};

inline std::string dims5(const Shape& s)
{
    return "[" + std::to_string(s.n) + ", " + std::to_string(s.c) + ", " + std::to_string(s.d) + ", "
        + std::to_string(s.h) + ", " + std::to_string(s.w) + "]";
}

inline void requireVolumes(const Tensor& in, const Tensor& out, const std::string& op)
{
    requireNonEmpty(in, out, op);
    require(in.shape().isVolume(), op,
        "needs a 5-D [N, C, D, H, W] input, got the " + in.shape().rankText() + " " + in.shape().str());
    require(out.shape().isVolume(), op, "needs a 5-D output tensor, got " + out.shape().str());
}

inline void requireTriples(const Triple& kernel, const Triple& stride, const Triple& dilation, const std::string& op)
{
    for (int a = 0; a < 3; ++a) {
        require(kernel[size_t(a)] >= 1, op, "kernel_size must be at least 1");
        require(stride[size_t(a)] >= 1, op, "stride must be at least 1");
        require(dilation[size_t(a)] >= 1, op, "dilation must be at least 1");
    }
}

// conv3d's weight is [C_out, C_in/g, kd, kh, kw], conv_transpose3d's [C_in, C_out/g, kd, kh, kw].
template <typename Spec>
inline ConvSizes3d checkConvolution3d(const Tensor& in, const Tensor& weight, const Tensor* bias, const Spec& spec,
    const Tensor& out, const std::string& op, bool transposed)
{
    requireVolumes(in, out, op);
    requireTriples(spec.kernel_size, spec.stride, spec.dilation, op);
    const Shape& i = in.shape();
    const Shape& o = out.shape();
    ConvSizes3d g { i.n, i.c, i.d, i.h, i.w, o.c, o.d, o.h, o.w, spec.kernel_size[0], spec.kernel_size[1],
        spec.kernel_size[2], 0, 0 };
    require(o.n == g.batch, op, "output batch differs from the input batch");
    requireGroups(g.inC, g.outC, spec.groups, op);
    g.inPerGroup = g.inC / spec.groups;
    g.outPerGroup = g.outC / spec.groups;
    const Shape want = transposed ? Shape::ncdhw(g.inC, g.outPerGroup, g.kd, g.kh, g.kw)
                                  : Shape::ncdhw(g.outC, g.inPerGroup, g.kd, g.kh, g.kw);
    require(
        weight.shape() == want, op, "weight has shape " + weight.shape().str() + " but the layer needs " + dims5(want));
    requireVector(bias, g.outC, op, "bias");
    return g;
}

} // namespace convscope::cpu::detail
