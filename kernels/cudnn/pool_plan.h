// The cudnn session's plan of a 2-D max or average pool with PyTorch's rules.
//
// cuDNN's pooling descriptor pads both sides equally and its output size is the floor formula; PyTorch adds ceil_mode
// (one more window at the bottom/right that may hang past the padding) and this project allows asymmetric padding
// ("same"). Rather than pad the input (which would make padded pixels count as real ones in an exclude-padding
// average), cuDNN gets the top/left padding and an output descriptor that is a strided window onto the block of
// outputs whose windows lie inside its own symmetric padding (cudnnPoolBlock, storage_ops.h) — there its max and both
// averages are exactly PyTorch's. The remaining bottom rows and right columns (the ceil_mode extra window, the extra
// bottom/right padding, and any window whose include-padding divisor PyTorch clips at the padded edge while cuDNN
// divides by the full window) are computed by a small kernel of ours with PyTorch's rule (poolEdges,
// layout_kernels.cuh). For floor mode with symmetric padding that kernel never runs. The layer note says when it does.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "kernels/cudnn/cudnn_support.h"
#include "kernels/cudnn/layout_kernels.cuh"

#include <memory>
#include <optional>
#include <string>

namespace convscope::cudnn {

struct Pool2dPlan {
    std::unique_ptr<PoolDesc> pool; // null when cuDNN computes no output (the kernel computes them all)
    std::unique_ptr<TensorDesc> yd; // the strided window onto cuDNN's block of the output
    std::optional<PoolEdge> edge; // the outputs our kernel computes, if any
    std::string note;
};

// mode: 0 max, 1 average counting padding, 2 average over real pixels. `channelsLast` describes the output as the
// session's channels-last storage of `type` (a layer that runs natively); else FP32 NCHW.
Pool2dPlan planPool2d(
    const LayerShape& s, const Pair& kernel, const Pair& stride, int mode, bool channelsLast, cudnnDataType_t type);

} // namespace convscope::cudnn
