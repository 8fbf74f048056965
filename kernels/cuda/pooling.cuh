// Window and global pooling on the GPU (maxpool2d.cu, avgpool2d.cu, global_avgpool2d.cu).
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// Input [n, c, h, w], output [n, c, p, q]; padding resolved (top, bottom, left, right).
struct PoolGeometry {
    int n, c, h, w, p, q;
    int kh, kw, strideH, strideW;
    int padTop, padBottom, padLeft, padRight;
    int dilH, dilW; // maxpool only
    bool countIncludePad; // avgpool only
    int divisorOverride; // avgpool only; 0 = none
};

void maxPool2d(const PoolGeometry& g, const float* x, float* y, cudaStream_t st);
void avgPool2d(const PoolGeometry& g, const float* x, float* y, cudaStream_t st);
// [n, c, h, w] -> [n, c, 1, 1]
void globalAvgPool2d(int planes, int planeSize, const float* x, float* y, cudaStream_t st);

} // namespace convscope::cuda
