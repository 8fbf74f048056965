// Winograd's transform matrices and the small unrolled matrix products that apply them (Lavin & Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2016): F(2×2, 3×3) and F(4×4, 3×3) for conv2d's forward
// (conv2d_winograd.cu), and F(3×3, 2×2) for its weight gradient, which is F(2×2, 3×3)'s matrices with the roles
// swapped (training/conv2d_winograd_wgrad.cu says how).
#pragma once

#include "kernels/cuda/conv2d.cuh"

#include <cuda_runtime.h>

namespace convscope::cuda::winograd {

// The transform matrices, Lavin & Gray's (interpolation points 0, ±1 and, for F(4×4), ±2). `at(i, k)` is
// called with constants only (every loop over them is unrolled), so the tables fold away and zero
// coefficients cost nothing.
template <int M> struct Winograd;
template <> struct Winograd<2> {
    static constexpr int N = 4;
    struct BT {
        __device__ static float at(int i, int k)
        {
            constexpr float t[4][4] = { { 1, 0, -1, 0 }, { 0, 1, 1, 0 }, { 0, -1, 1, 0 }, { 0, 1, 0, -1 } };
            return t[i][k];
        }
    };
    struct G {
        __device__ static float at(int i, int k)
        {
            constexpr float t[4][3] = { { 1, 0, 0 }, { 0.5f, 0.5f, 0.5f }, { 0.5f, -0.5f, 0.5f }, { 0, 0, 1 } };
            return t[i][k];
        }
    };
    struct AT {
        __device__ static float at(int i, int k)
        {
            constexpr float t[2][4] = { { 1, 1, 1, 0 }, { 0, 1, -1, -1 } };
            return t[i][k];
        }
    };
};
template <> struct Winograd<4> {
    static constexpr int N = 6;
    struct BT {
        __device__ static float at(int i, int k)
        {
            constexpr float t[6][6] = { { 4, 0, -5, 0, 1, 0 }, { 0, -4, -4, 1, 1, 0 }, { 0, 4, -4, -1, 1, 0 },
                { 0, -2, -1, 2, 1, 0 }, { 0, 2, -1, -2, 1, 0 }, { 0, 4, 0, -5, 0, 1 } };
            return t[i][k];
        }
    };
    struct G {
        __device__ static float at(int i, int k)
        {
            constexpr float t[6][3]
                = { { 1.0f / 4, 0, 0 }, { -1.0f / 6, -1.0f / 6, -1.0f / 6 }, { -1.0f / 6, 1.0f / 6, -1.0f / 6 },
                      { 1.0f / 24, 1.0f / 12, 1.0f / 6 }, { 1.0f / 24, -1.0f / 12, 1.0f / 6 }, { 0, 0, 1 } };
            return t[i][k];
        }
    };
    struct AT {
        __device__ static float at(int i, int k)
        {
            constexpr float t[4][6]
                = { { 1, 1, 1, 1, 1, 0 }, { 0, 1, -1, 2, -2, 0 }, { 0, 1, 1, 4, 4, 0 }, { 0, 1, -1, 8, -8, 1 } };
            return t[i][k];
        }
    };
};

// out = Coef · x (R×K times K×C), then out = x · Coef^T (R×K times (C×K)^T): the two halves of Z^T x Z.
template <class Coef, int R, int K, int C>
__device__ __forceinline__ void leftMul(const float (&x)[K][C], float (&out)[R][C])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
        for (int j = 0; j < C; ++j) {
            float v = 0.0f;
#pragma unroll
            for (int k = 0; k < K; ++k)
                if (Coef::at(i, k) != 0.0f)
                    v = fmaf(Coef::at(i, k), x[k][j], v);
            out[i][j] = v;
        }
}
template <class Coef, int R, int K, int C>
__device__ __forceinline__ void rightMulT(const float (&x)[R][K], float (&out)[R][C])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
        for (int j = 0; j < C; ++j) {
            float v = 0.0f;
#pragma unroll
            for (int k = 0; k < K; ++k)
                if (Coef::at(j, k) != 0.0f)
                    v = fmaf(Coef::at(j, k), x[i][k], v);
            out[i][j] = v;
        }
}

// V = B^T d B for every (input channel, output tile) of g: the n×n patch d of tile t (T = N·tilesH·tilesW tiles of m×m
// outputs, the patch at (row·m − padTop, col·m − padLeft), zero outside the input), stored [n²][C][T].
template <int M>
__global__ void inputTransformKernel(
    ConvGeometry g, int tilesH, int tilesW, int tiles, const float* __restrict__ x, float* __restrict__ v)
{
    using W = Winograd<M>;
    constexpr int N = W::N;
    const long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; // (c, tile), tile fastest
    if (idx >= static_cast<long long>(g.c) * tiles)
        return;
    const int c = static_cast<int>(idx / tiles), t = static_cast<int>(idx % tiles);
    const int n = t / (tilesH * tilesW), rem = t % (tilesH * tilesW);
    const int h0 = (rem / tilesW) * M - g.padTop, w0 = (rem % tilesW) * M - g.padLeft;
    const float* xp = x + (static_cast<long long>(n) * g.c + c) * g.h * g.w;
    float d[N][N];
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < N; ++j) {
            const int ih = h0 + i, iw = w0 + j;
            d[i][j] = static_cast<unsigned>(ih) < static_cast<unsigned>(g.h)
                    && static_cast<unsigned>(iw) < static_cast<unsigned>(g.w)
                ? __ldg(xp + static_cast<long long>(ih) * g.w + iw)
                : 0.0f;
        }
    float b[N][N], r[N][N];
    leftMul<typename W::BT>(d, b);
    rightMulT<typename W::BT>(b, r);
    const long long plane = static_cast<long long>(g.c) * tiles;
#pragma unroll
    for (int i = 0; i < N * N; ++i)
        v[i * plane + idx] = r[i / N][i % N];
}

} // namespace convscope::cuda::winograd
