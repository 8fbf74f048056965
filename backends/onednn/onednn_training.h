// The onednn backend's training session (issue 33): the host training session (compute/training/host_layer_ops.h:
// the CPU session's parameters, loss, optimizer, phased step and per-phase timing) with these layers on oneDNN's
// forward-training and backward primitives, FP32, on the same host tensors:
//   conv2d, conv_transpose2d, conv3d, conv_transpose3d  convolution / deconvolution forward_training, backward_data,
//                     backward_weights (with the bias); activations and weights in oneDNN's chosen layouts
//                     (format_tag::any), the reorders from and to PyTorch's NCHW / OIHW inside the timed phase (the
//                     weights change at every update, so they are reordered at every forward and backward-data: the
//                     layer note names what is reordered)
//   linear            inner_product forward_training, backward_data, backward_weights (with the bias) on [rows, F]
//   batchnorm2d/3d    batch_normalization forward_training (the batch's mean and biased variance, kept for the
//                     backward; the running averages moved here as PyTorch does: momentum, the unbiased variance) and
//                     its backward (dx, dγ, dβ in one primitive, timed as backward-data, or as backward-weights for a
//                     first layer whose input gradient is not asked for)
//   relu, leaky_relu, elu, sigmoid, tanh, silu, relu6, hardtanh, gelu   eltwise forward_training / backward from the
//                     input (relu6 and hardtanh as clip_v2, whose gradient is 0 on both bounds, as PyTorch's)
//   maxpool2d/3d, avgpool2d/3d, global average pooling   pooling_v2 forward_training / backward (max: the workspace
//                     keeps each window's argmax; avg: count_include_pad as include / exclude padding)
//   prelu             prelu forward_training / backward (dx and the slopes' gradient in one primitive, timed as
//                     backward-data as batch norm's)
//   softmax, log_softmax  softmax / logsoftmax forward_training and backward from the output
// Every other layer — and the cases above that oneDNN cannot express as PyTorch computes them (avgpool's
// divisor_override, hardswish's gradient at ±3, ...) — runs the CPU session's own forward and backward
// (cpu.im2col_gemm's code) on the same host memory; the metadata's note for that layer says so and why.
#pragma once

#include "backends/onednn/onednn_plan.h"
#include "compute/training/host_layer_ops.h"

#include <dnnl.hpp>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace convscope::onednn {

// One argument of a primitive call, given in the user's (PyTorch's) layout; where the primitive wants another layout
// it goes through `reorder` (prepared once): an input into `inner` before the call, an output out of it after.
// `rounded`: an input first rounded to bf16 (into `rounded`, PyTorch's layout) and then widened into `inner`, or an
// output rounded from `inner` to bf16 and then widened into the user's tensor (the FP32 primitives of a bf16 layer's
// weight and data gradients, below: `toRounded` is the first of the two reorders, `reorder` the second).
struct Operand {
    int arg = 0;
    memory::desc user;
    bool output = false;
    std::optional<memory> inner;
    std::optional<dnnl::reorder> reorder;
    std::optional<memory> rounded;
    std::optional<dnnl::reorder> toRounded;
};
Operand operand(int arg, const memory::desc& user, const memory::desc& want, bool output, const dnnl::engine& eng);
// An FP32 input `user` rounded to bf16 (`roundedUser`: the same dims and layout in bf16), then into `want`; with
// `output`, the primitive's FP32 result (`want`) rounded to bf16, then into `user`.
Operand roundedOperand(int arg, const memory::desc& user, const memory::desc& roundedUser, const memory::desc& want,
    const dnnl::engine& eng, bool output = false);

struct Call {
    std::optional<dnnl::primitive> primitive;
    std::vector<Operand> operands; // bound per call, in this order, to the handles run() is given
    std::unordered_map<int, memory> fixed; // the plan's own memory: batch statistics, workspace, scratch
    std::string impl; // the implementation oneDNN chose, and what is reordered
    std::string label; // "layer 3 (c3, conv2d) backward-data": what a failed execution names
};
// Runs the call on `handles` (one per operand, in order); a oneDNN failure is an Error naming call.label.
void run(Call& call, const std::vector<const void*>& handles, const dnnl::engine& eng, dnnl::stream& stream);

// What one layer runs in training on oneDNN. The handles of each call, in order:
//   conv, linear   forward {x, w, [b], y}; data {gy, w, gx}; weights {x, gy, gw, [gb]}
//   batch norm     forward {x, [w], [b], y}; data {x, gy, [w], [b], gx}
//   prelu          forward {x, w, y}; data {x, w, gy, gx}
//   eltwise        forward {x, y}; data {gy, x, gx}
//   pool           forward {x, y}; data {gy, gx}
//   softmax        forward {x, y}; data {y, gy, gx}
struct TrainPlan {
    enum class Kind { Conv, BatchNorm, Prelu, Eltwise, Pool, Softmax };
    Kind kind = Kind::Conv;
    Call forward, data, weights;
    // --math bf16, conv and linear: the weight gradient also as an FP32 primitive on the same operands rounded to bf16
    // (the products of bf16 values are exact in FP32, and both sum in FP32: the same arithmetic as the bf16
    // primitive's, to the order of the sums). oneDNN's bf16 kernel for it is slower on some layers (DCGAN's 4² one:
    // 2.4 ms against FP32's 1.0 on 16 AMX cores); the session times both at prepare and keeps the faster
    // (weightsInFp32), as cuDNN's Find does, unless --option weight_gradient pins one.
    Call weightsFp32;
    bool weightsInFp32 = false;
    // The data gradient likewise (--option data_gradient): the FP32 primitive on dy and the weights rounded to bf16,
    // its result rounded to bf16 as the bf16 primitive's is (DCGAN's 4² layer: 5.5 ms against FP32's 3.7, session 26).
    Call dataFp32;
    bool dataInFp32 = false;
    bool hasBias = false; // conv, linear
    bool hasScale = false, hasShift = false; // batch norm
    int64_t count = 0; // batch norm: values per channel (N·D·H·W)
    double eps = 0;
    memory mean, variance, diffScale, diffShift, dxScratch; // batch norm (diffScale, dxScratch: prelu's too)
    bool dataRan = false; // batch norm, prelu: this pass's backward ran in backwardData
};

// Throws UnsupportedError (or dnnl::error) naming why oneDNN cannot train this layer; the session then runs it on the
// CPU's code.
// `products`: the convolutions' and linear layers' element type inside the primitive (f32, or bf16 under --math bf16:
// the reorders from and to the session's FP32 tensors round), their weight and bias gradients FP32 either way.
TrainPlan planTraining(
    const Layer& layer, const LayerShape& shape, const dnnl::engine& eng, memory::data_type products = kF32);

memory::data_type productType(MathMode math); // bf16 under --math bf16, else f32
std::string trainingMathDescription(MathMode math); // the metadata's "math"
// weightGradient (--option weight_gradient) and dataGradient (--option data_gradient): under --math bf16, "auto"
// times both primitives of each conv and linear layer's weight (data) gradient at prepare and keeps the faster
// (TrainPlan::weightsFp32, dataFp32); "bf16" or "fp32" pins one.
std::unique_ptr<HostLayerOps> makeTrainingOps(
    MathMode math, const std::string& weightGradient = "auto", const std::string& dataGradient = "auto");

} // namespace convscope::onednn
