// Which of cuDNN's legacy calls run natively on a session's storage format (compute/storage_format.h): channels-last
// tensors of FP32, FP16 or BF16. cuDNN documents its type support per call loosely and it has changed between
// releases, so instead of a table the session asks cuDNN itself: each (call, mode, type) is tried once per process
// on a tiny NHWC tensor and the answer is cached. A call cuDNN refuses leaves its layers on the FP32 copies the
// session base makes (gpu_session.h), and the layer note says so.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "compute/storage_format.h"

#include <cudnn.h>

namespace convscope::cudnn {

enum class NativeOp {
    Activation, // cudnnActivationForward (`mode` is the cudnnActivationMode_t)
    Pooling, // cudnnPoolingForward (`mode` is the cudnnPoolingMode_t)
    BatchNorm, // cudnnBatchNormalizationForwardInference, FP32 per-channel parameters
    Softmax, // cudnnSoftmaxForward over channels (mode 1: CUDNN_SOFTMAX_LOG)
    OpTensor, // cudnnOpTensor (`mode` is the cudnnOpTensorOp_t), FP32 compute
    AddTensor, // cudnnAddTensor
};

// True when cuDNN runs `op` on channels-last tensors of `type` on the current device (this thread's handle).
bool cudnnRunsNative(NativeOp op, int mode, DType type);

// The block of a 2-D pool's outputs [0, hC) × [0, wC) that cuDNN's symmetric pooling computes with PyTorch's rules
// (pool_plan.h explains the rest, which a kernel of ours computes in FP32 NCHW). mode: 0 max, 1 average
// counting padding, 2 average over real pixels.
struct PoolBlock {
    int hC = 0, wC = 0;
};
PoolBlock cudnnPoolBlock(const LayerShape& s, const Pair& kernel, const Pair& stride, int mode);

// Whether the cudnn session runs this layer natively on channels-last tensors of `type` (runsInStorage): conv2d
// (asymmetric padding with a pad step on the storage type), conv_transpose2d, conv3d and conv_transpose3d on FP16/BF16
// where cuDNN accepts their NHWC / NDHWC descriptors of `type` for some algorithm (a workspace query), linear (on a
// [N, F] input),
// the activations, pools, batch norm, softmax, add and mul that cuDNN has calls for and accepts on `type`.
bool runsNatively(const LayerSpec& spec, const LayerShape& s, DType type);

} // namespace convscope::cudnn
