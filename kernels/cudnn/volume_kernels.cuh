// What cuDNN's Nd convolution descriptors cannot say about volumes, done by two small kernels of ours around the
// cuDNN calls (volume_plan.h says when each runs). Host-side launchers only; each checks its launch.
#pragma once

#include <cuda_runtime_api.h>

namespace convscope::cudnn {

// conv3d's pad step: [n, c, d, h, w] → [n, c, d+front+back, h+top+bottom, w+left+right] with zeros around.
struct Pad3d {
    int n, c, d, h, w;
    int front, back, top, bottom, left, right;
};
void padVolume(const Pad3d& g, const float* x, float* y, cudaStream_t stream);

// conv_transpose3d's crop step: y[n, c, z, y, x] = full[n, c, z + offD, y + offH, x + offW] (0 where that lies past
// the full output: planes output_padding adds beyond every tap) + bias[c] (bias may be null).
struct Crop3d {
    int n, c, fd, fh, fw; // the full transposed output
    int offD, offH, offW;
    int od, oh, ow; // the layer's output
};
void cropVolumeAddBias(const Crop3d& g, const float* full, const float* bias, float* y, cudaStream_t stream);

} // namespace convscope::cudnn
