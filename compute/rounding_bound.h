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
// Layers without a reduction (activations, max pooling, concat) only round their output (s); averages and
// softmax reduce positive terms (κ = 1). The error of a layer's inputs passes through it without growing — a layer
// with zero-mean weights is close to an isometry up to scale — so a layer's bound is its own share plus the largest
// bound among its inputs, starting from the input's conversion (s). FP32 runs get 0 (no bound is stated: their
// differences are the algorithms' own, e.g. Winograd's transforms). A trained network whose sums cancel strongly can
// exceed the bound on some layer; the bound says what rounding alone costs when nothing cancels more than chance.
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
// One bound per layer (relative L2 against FP32); all 0 in FP32.
std::vector<double> roundingBounds(MathMode mode, const Network& net, const ShapeReport& shapes);

} // namespace convscope
