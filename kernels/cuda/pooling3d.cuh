// Window pooling over volumes on the GPU (maxpool3d.cu, avgpool3d.cu). Global average pooling and batch norm over a
// volume need no kernel of their own: they only see D·H·W as one plane (global_avgpool2d.cu, batchnorm2d.cu).
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cuda {

// Input [n, c, d, h, w], output [n, c, od, oh, ow]; padding resolved (front, back, top, bottom, left, right).
struct Pool3dGeometry {
    int n, c, d, h, w, od, oh, ow;
    int kd, kh, kw, sd, sh, sw;
    int padFront, padBack, padTop, padBottom, padLeft, padRight;
    int dd, dh, dw; // maxpool only
    bool countIncludePad; // avgpool only
    int divisorOverride; // avgpool only; 0 = none
};

void maxPool3d(const Pool3dGeometry& g, const float* x, float* y, cudaStream_t st);
void avgPool3d(const Pool3dGeometry& g, const float* x, float* y, cudaStream_t st);

} // namespace convscope::cuda
