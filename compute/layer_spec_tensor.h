// The general tensor kinds of issue 30 that read a tensor along axes the layer names: matmul (torch.matmul of two
// activations) and gather (torch.index_select / ONNX Gather with constant indices). Included by layer_spec.h,
// which puts them in the LayerSpec variant; their rules are in compute/matmul.h and compute/gather.h.
#pragma once

#include <cstdint>
#include <vector>

namespace convscope {

// torch.matmul(a, b): of the layer's two inputs in order, or of its one input and the layer's constant — `constant`'s
// values of dims `constant_shape` ([constant.size()] when not given), on the left (constant_first: c · x) or the right
// (x · c). Each operand of rank 1 to 6. A 1-D first operand [K] is read as [1, K] and a 1-D second operand [K] as
// [K, 1], and the 1 they add is removed from the output afterwards; the last two axes are the matrices ([M, K] ·
// [K, N]); the axes before them are batch axes, broadcast by NumPy's rule. Output: broadcast(batch axes) + [M] (unless
// a is 1-D) + [N] (unless b is 1-D). ONNX MatMul (attention's Q·Kᵀ and softmax·V; a batched constant operand).
struct Matmul {
    std::vector<float> constant; // empty: two inputs
    std::vector<int64_t> constant_shape;
    bool constant_first = false;
    bool operator==(const Matmul&) const = default;
};

// ONNX Gather (axis, constant indices) / torch.index_select(x, axis, indices) / x[:, i]: output = data.shape[:axis] +
// indices_shape + data.shape[axis + 1:], out[.., j.., ..] = data[.., indices[j..], ..]. `indices_shape` is the
// indices' own shape: [] for one scalar index (the axis is removed, as x[:, 2] does), [k] for a list (the default: the
// file's "indices_shape" left out means a list of indices.size()), or more dims. A negative index counts from the end
// (−1 the last); an index outside [−size, size) is an error that names the layer and the numbers. Repeats are allowed.
struct Gather {
    int64_t axis = 0; // negative: counted from the end
    std::vector<int64_t> indices { 0 };
    std::vector<int64_t> indices_shape { 1 };
    bool operator==(const Gather&) const = default;
};

} // namespace convscope
