// The normalization kinds of issue 30 — layer_norm (torch.nn.LayerNorm), group_norm (torch.nn.GroupNorm) and
// instance_norm (torch.nn.InstanceNorm1d/2d/3d without running statistics) — as one plan every backend runs: the
// input, contiguous, is `rows` rows of `rowLength` elements; each row is normalised by its own mean and biased
// variance, y = (x − mean) / √(var + eps) · weight[p] + bias[p], where the parameter p of element j of row r is
// (r mod groups) · (rowLength / inner) + j / inner:
//   layer_norm:    rows = the leading elements, rowLength = ∏ normalized_shape, groups = inner = 1 (p = j)
//   group_norm:    rows = N · G, rowLength = C/G · S (S = positions), groups = G, inner = S (p = the channel)
//   instance_norm: rows = N · C, rowLength = S, groups = C, inner = S (p = the channel)
// Weight and bias are always materialised (1 and 0 where PyTorch has none: affine false, bias false), so every
// backend runs one formula.
#pragma once

#include "compute/layer_spec.h"
#include "compute/shape.h"
#include "compute/shape_inference.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace convscope {

template <typename T>
inline constexpr bool isNormKind
    = std::is_same_v<T, LayerNorm> || std::is_same_v<T, GroupNorm> || std::is_same_v<T, InstanceNorm>;
bool isNormLayer(const LayerSpec& spec);

struct NormPlan {
    int64_t rows = 0, rowLength = 0;
    int64_t groups = 1, inner = 1;
    double eps = 1e-5;
    int64_t paramIndex(int64_t r, int64_t j) const { return (r % groups) * (rowLength / inner) + j / inner; }
};

// The plan of a norm layer on its input (shape inference has checked it; throws InputError on a non-norm spec or a
// shape it does not fit).
NormPlan normPlan(const LayerSpec& spec, const Shape& in);
// PyTorch's weight (and bias) dims: normalized_shape for layer_norm, [C] for group_norm and instance_norm.
std::vector<int64_t> normParameterDims(const LayerSpec& spec, const Shape& in);
// Does PyTorch's module have a weight / a bias (elementwise_affine, affine; layer_norm's bias flag)?
bool normHasWeight(const LayerSpec& spec);
bool normHasBias(const LayerSpec& spec);

// Shape inference of the three kinds (shape_inference.cpp's dispatch): the output is the input's shape; errors name
// the numbers (normalized_shape against the input's trailing dims, num_groups against C, a negative eps).
LayerShape inferNormalization(const LayerSpec& spec, const Shape& in);

} // namespace convscope
