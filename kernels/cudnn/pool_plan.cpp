// The plan of a 2-D pool on cuDNN with PyTorch's rules (pool_plan.h).
#include "kernels/cudnn/pool_plan.h"

#include "kernels/cudnn/storage_ops.h"

namespace convscope::cudnn {

Pool2dPlan planPool2d(
    const LayerShape& s, const Pair& kernel, const Pair& stride, int mode, bool channelsLast, cudnnDataType_t type)
{
    Pool2dPlan p;
    const Padding2d& pad = s.resolvedPadding;
    const int H = int(s.in.h), W = int(s.in.w), OH = int(s.out.h), OW = int(s.out.w);
    const int kh = int(kernel[0]), kw = int(kernel[1]), sh = int(stride[0]), sw = int(stride[1]);
    const int top = int(pad.top), bottom = int(pad.bottom), left = int(pad.left), right = int(pad.right);
    const PoolBlock block = cudnnPoolBlock(s, kernel, stride, mode);
    const int hC = block.hC, wC = block.wC;
    if (hC > 0 && wC > 0) {
        p.pool = std::make_unique<PoolDesc>();
        const cudnnPoolingMode_t m = mode == 0 ? CUDNN_POOLING_MAX
            : mode == 1                        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                               : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
        p.pool->set(m, kh, kw, top, left, sh, sw);
        p.yd = std::make_unique<TensorDesc>();
        const int C = int(s.out.c);
        if (channelsLast) // every output is cuDNN's (runsNatively), the block is the whole
            p.yd->setStrided(int(s.out.n), C, hC, wC, C * OH * OW, 1, OW * C, C, type);
        else
            p.yd->setStrided(int(s.out.n), C, hC, wC, C * OH * OW, OH * OW, OW, 1);
    }
    p.note = std::string("cudnnPoolingForward ")
        + (mode == 0        ? "max"
                : mode == 1 ? "average (count_include_pad)"
                            : "average (exclude padding)");
    if (hC < OH || wC < OW) {
        p.edge = PoolEdge { int(s.in.n), int(s.in.c), H, W, OH, OW, kh, kw, sh, sw, top, bottom, left, right, mode, hC,
            wC };
        p.note += "; the last " + std::to_string(OH - hC) + " row(s) and " + std::to_string(OW - wC)
            + " column(s) by a ConvScope kernel with PyTorch's rule (ceil_mode / asymmetric padding / "
              "include-padding divisor at the edge, which cuDNN's symmetric pooling cannot express)";
    }
    return p;
}

} // namespace convscope::cudnn
