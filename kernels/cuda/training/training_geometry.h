// The cuda training session's geometries (cuda_training_layers.cpp, cuda_training_products.cpp): a convolution's
// ConvGeometry for given sizes with another's taps, the transposed convolution of a conv2d (its backward-data), and a
// linear layer as a 1×1 convolution. Host code.
#pragma once

#include "kernels/cuda/conv2d.cuh"

namespace convscope::cuda {

inline ConvGeometry makeGeometry(int n, int c, int h, int w, int k, int p, int q, const ConvGeometry& taps)
{
    ConvGeometry g = taps; // r, s, strides, top/left padding, dilations, groups
    g.n = n, g.c = c, g.h = h, g.w = w, g.k = k, g.p = p, g.q = q;
    g.act = -1;
    g.igemmTile = 0, g.igemmSplits = 0, g.tinyLanes = 0, g.igemmPipe = 0; // the launcher picks tiles and split-K
    return g;
}
// The transposed convolution with conv2d g's taps: from g's output [n, k, p, q] to its input [n, c, h, w] (conv2d's
// backward-data; weight [k, c/groups, r, s] read as the transposed layout [c_t = k, k_t/groups = c/groups, r, s]).
inline ConvGeometry transposedOf(const ConvGeometry& g) { return makeGeometry(g.n, g.k, g.p, g.q, g.c, g.h, g.w, g); }
// 1×1 geometry of a linear layer [rows, in] → [rows, out].
inline ConvGeometry linearGeometry(int rows, int in, int out)
{
    ConvGeometry taps {};
    taps.r = taps.s = 1;
    taps.strideH = taps.strideW = 1;
    taps.dilH = taps.dilW = 1;
    taps.groups = 1;
    return makeGeometry(rows, in, 1, 1, out, 1, 1, taps);
}

} // namespace convscope::cuda
