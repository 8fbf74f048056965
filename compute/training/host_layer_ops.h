// A CPU library's own training ops for some layers of a host training session (issue 33): the onednn backend's
// session (backends/onednn/onednn_training.cpp) is the CPU session's bookkeeping — parameters, buffers, the loss, the
// optimizer, the phased step, the timing of each layer's forward, backward-data, backward-weights and update apart,
// the finiteness checks — with the layers that `HostLayerOps` owns run on the library's primitives and every other
// layer on the CPU's own forward and backward (cpu.im2col_gemm's code) on the same host tensors. The memory is host
// memory either way: nothing is copied between the two.
#pragma once

#include "compute/training/training.h"

#include <map>
#include <memory>
#include <string>

namespace convscope {

// One layer's tensors in the session: its parameters and running statistics (null where the layer has none), and
// the gradients of its trainable parameters (null where a parameter is not trained: batch norm without affine).
struct HostLayerParams {
    Tensor *weight = nullptr, *bias = nullptr, *mean = nullptr, *var = nullptr;
    Tensor *gradWeight = nullptr, *gradBias = nullptr;
};

class HostLayerOps {
public:
    virtual ~HostLayerOps() = default;
    // Untimed, once per prepare of the session (after cpuTrainingRefusal passed): builds what each owned layer runs.
    // Throws UnsupportedError naming the layer for a layer this library must run and cannot train.
    virtual void prepare(const Network& net, const ShapeReport& shapes, const TrainingOptions& options) = 0;
    virtual bool owns(size_t layer) const = 0;
    // The training-mode forward of owned layer i (one input): y from x, with what the backward needs kept (batch
    // norm's batch statistics, max pooling's argmax); batch norm also moves p.mean / p.var as PyTorch does.
    virtual void forward(size_t i, const Tensor& x, const HostLayerParams& p, Tensor& y) = 0;
    // gx = ∂L/∂x from gy = ∂L/∂y (x and y: this step's forward input and output). Every element of gx is written.
    virtual void backwardData(
        size_t i, const Tensor& x, const Tensor& y, const Tensor& gy, const HostLayerParams& p, Tensor& gx)
        = 0;
    // p.gradWeight (and p.gradBias) from gy and x, overwritten.
    virtual void backwardWeights(size_t i, const Tensor& x, const Tensor& gy, const HostLayerParams& p) = 0;
    // The session's metadata: the library's version, and what each layer runs ("layer 3 c1" → a note).
    virtual std::map<std::string, std::string> metadata() const = 0;
};

// The host training session with `ops` (see above); `label` names the selection in messages, NVTX ranges and the
// metadata's "algorithm" ("onednn.auto"). The layers `ops` does not own run cpu.im2col_gemm's training code.
std::unique_ptr<TrainingSession> makeHostTrainingSession(
    const std::string& label, const SessionOptions& options, std::unique_ptr<HostLayerOps> ops);

} // namespace convscope
