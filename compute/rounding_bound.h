// What a math mode's rounding may do to each layer's output, as a bound on the relative L2 error against the FP32
// reference (ErrorMetrics::relL2), stated with every result of a tf32/fp16/bf16 run and checked by the
// cross-backend test on the same sweep as FP32.
//
// A layer that reduces K products of operands rounded to a format of unit roundoff u (2^-11 for TF32 and FP16,
// 2^-8 for BF16), summed in FP32 (unit roundoff 2^-24) and stored in a format of unit roundoff s, has, element by
// element (Higham, "Accuracy and Stability of Numerical Algorithms", §3.1),
//     |ŷ − y| ≤ (2u + γ_K) · Σ|w·x| + s·|y|,   γ_K = K·2^-24 / (1 − K·2^-24).
// Over a whole tensor, ‖Σ|w·x|‖₂ ≤ √K · ‖y‖₂ when the weights are zero-mean (the products then add like a random
// walk), which gives the layer's own share
//     local = (2u + γ_K) · √K + s.
// Layers without products only round their output (s); averages and softmax sum positive terms (γ_K + s).
//
// The error already in a layer's inputs passes through it scaled by a gain g:
//     bound(layer) = local + g · max(bound(inputs)),
// with g = 1 for the kinds that keep each element's relative error (ReLU and its clipped and leaky kin, PReLU, max
// pooling, concat, pad, views: they pass or drop elements, so errors that are spread like the values stay so; on n
// output elements g = 1 + 3/√n, capped by the worst case below, for the spread of the kept elements' share), and
// otherwise, for an input error δx with ‖δx‖ ≤ ε‖x‖, ‖δy‖ ≤ L‖δx‖ ≤ ε·L·‖x‖, so g = L·‖x‖/‖y‖ with L the layer's
// Lipschitz constant in the L2 norm (1 tanh, ELU; ¼ sigmoid; 1.5 hardswish; ½ softmax; max|γ|/√(σ²+ε) batch norm;
// √(overlaps/k) for an average over k elements that overlap `overlaps` times, 1/√(H·W) for a global average; the sum
// of the inputs' norms for add) and the two norms measured on the FP32 reference run (ReferenceNorms) — that is what
// makes a sigmoid of large inputs, whose outputs are small, show its true sensitivity. A convolution or linear layer
// with zero-mean weights is close to an isometry up to scale, so its gain is taken as 1. Those two — errors spread like
// the values, and the isometry — are the assumptions; everything else is measured. The network's input starts with s
// (its conversion).
// FP32 runs get 0: no bound is stated; their differences are the algorithms' own (e.g. Winograd's transforms).
#pragma once

#include "compute/backend.h"
#include "compute/network.h"
#include "compute/shape_inference.h"

#include <cstdint>
#include <vector>

namespace convscope {

// Unit roundoff of the products' operands and of the stored tensors in `mode`.
double operandRoundoff(MathMode mode);
double storageRoundoff(MathMode mode);
// K: the number of products (or terms) summed for one output element of this layer; 1 for none.
int64_t reductionLength(const LayerSpec& spec, const LayerShape& shape);
// ‖x‖₂ and max|x| of the network's input and of every layer's output in the FP32 reference run.
struct TensorNorm {
    double l2 = 0, maxAbs = 0;
};
TensorNorm tensorNorm(const Tensor& t);
struct ReferenceNorms {
    TensorNorm input;
    std::vector<TensorNorm> outputs;
};
// One bound per layer (relative L2 against FP32); all 0 in FP32. `net` has materialised parameters where a gain
// needs them (batch norm's scale, PReLU's slopes); without them that gain is taken as 1.
std::vector<double> roundingBounds(
    MathMode mode, const Network& net, const ShapeReport& shapes, const ReferenceNorms& norms);

} // namespace convscope
