// The plan of one layer on oneDNN: the primitive that runs it and its parameters in PyTorch's layouts, with the
// descriptors the backend (onednn_backend.cpp) shares. The mapping of every layer kind is in onednn_plan.cpp.
#pragma once

#include "compute/network.h"
#include "compute/shape_inference.h"
#include "compute/tensor.h"

#include <dnnl.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace convscope::onednn {

using dnnl::memory;
using Tag = memory::format_tag;
using Dims = memory::dims;
constexpr auto kF32 = memory::data_type::f32;
constexpr auto kInference = dnnl::prop_kind::forward_inference;

// Plain descriptors of type `dt`. nchw() folds a volume's D into H ([N, C, D·H, W]), so element-wise, channel-wise
// and whole-plane layers treat volumes as images; ncdhw() is the window ops' volume layout.
memory::desc nchw(const Shape& s, memory::data_type dt);
memory::desc ncdhw(const Shape& s, memory::data_type dt, Tag tag = Tag::ncdhw);
memory::desc anyLayout(const Shape& s, memory::data_type dt); // [N, C, H, W], oneDNN's choice of layout
memory::desc vector(int64_t c); // an FP32 per-channel vector (bias, statistics)
Dims plainStrides(const Dims& dims); // PyTorch's contiguous strides of `dims`, last axis fastest
// The padding after the last window that gives exactly `out` windows under oneDNN's size rule (onednn_plan.cpp).
int64_t rightPad(int64_t in, int64_t out, int64_t stride, int64_t extent, int64_t left, int64_t given);

// What one layer runs: the primitive descriptor and its parameters in PyTorch's layouts.
struct Plan {
    std::optional<dnnl::primitive_desc> pd;
    bool flatten = false; // a copy of the one input (flatten, reshape, identity, dropout)
    // Several NCHW inputs, passed as DNNL_ARG_SRC_0 / _1 (binary) or DNNL_ARG_MULTIPLE_SRC + k (sum, concat);
    // `swapped`: the binary primitive's src0 is the layer's second input (so a broadcast input is src1).
    bool multi = false, binary = false, swapped = false;
    std::optional<dnnl::primitive> multiPrimitive; // multi-input layers (sum and concat have no primitive_desc)
    // The inputs' and the output's descriptors of a multi-input primitive when they are not nchw() of the shapes:
    // concat on any axis ([outer, size, inner] views) and transpose (a reorder from the permuted strides).
    std::vector<memory::desc> multiSrcs;
    std::optional<memory::desc> multiDst;
    std::string multiImpl;
    std::vector<int> multiArgs; // the arg id of each input in order where it is not SRC_k (matmul: SRC, WEIGHTS)
    bool flatSrc = false; // linear: the source is [rows, in_features] (compute/linear_geometry.h)
    bool volume = false; // conv3d, conv_transpose3d, 3-D pools: the user layout is NCDHW
    std::optional<memory::desc> rowsDesc; // the norms: input and output seen as [rows, rowLength] (onednn_plan_norm)
    std::vector<std::pair<int, memory::desc>> params; // arg id, user (PyTorch) layout
    std::vector<std::shared_ptr<const Tensor>> paramData; // same order; null when only planning
    // Primitives run after the main one, in place on the layer's output seen as `view` (their SRC_0 and DST):
    // group_norm / instance_norm's per-channel weight and bias after the layer normalization (onednn_plan_norm.cpp).
    struct InPlace {
        dnnl::primitive primitive;
        memory::desc view;
        std::vector<std::pair<int, memory::desc>> params; // arg id, user (PyTorch, FP32) layout
        std::vector<std::shared_ptr<const Tensor>> paramData; // same order; null when only planning
        std::string note; // what it runs, for the layer note
    };
    std::vector<InPlace> after;
    // Reorders from views of the one input to views of the output, in order (gather, onednn_plan_tensor.cpp): the
    // whole layer, no other primitive.
    struct Copy {
        memory::desc from, to;
        dnnl::primitive primitive;
    };
    std::vector<Copy> copies;
    std::string copiesNote;
    // A constant operand of a multi-input primitive (matmul and binary by a constant): its arg id, its descriptor
    // (the activations' type or FP32), and its FP32 values (the spec's own, valid while the layer is; null: the
    // layer's weight tensor), converted once in prepare().
    struct Constant {
        int arg = 0;
        memory::desc desc;
        const std::vector<float>* values = nullptr;
    };
    std::optional<Constant> constant;
};

// softmax, log_softmax and reduce (onednn_reduce.cpp): their primitive as a one-input step of the multi-input path.
void planAlongAxes(
    Plan& plan, const LayerSpec& spec, const LayerShape& shape, const dnnl::engine& eng, memory::data_type act);

// Builds the plan of a layer (`layer` null: only asks whether oneDNN can run it, no parameters) with activations of
// type `act`; throws UnsupportedError (PyTorch semantics oneDNN cannot express) or dnnl::error (oneDNN has no
// implementation).
Plan planLayer(
    const Layer* layer, const LayerSpec& spec, const LayerShape& shape, const dnnl::engine& eng, memory::data_type act);

// layer_norm as layer_normalization_forward; group_norm / instance_norm as the same without scale and shift, then (with
// affine) one binary_mul by the per-channel weight with a binary_add post-op of the bias (onednn_plan_norm.cpp).
void planNormalization(const LayerSpec& spec, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng,
    Plan& plan, const Layer* layer);
// onednn_plan_tensor.cpp: matmul on oneDNN's matmul primitive; gather (runs of evenly spaced indices) and slice as
// reorders of strided views.
void planTensorKind(const Matmul&, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan);
void planTensorKind(const Gather&, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan);
void planTensorKind(const Slice&, const LayerShape& shape, memory::data_type act, const dnnl::engine& eng, Plan& plan);

} // namespace convscope::onednn
