// What cuDNN's Nd convolution descriptors cannot say about volumes, done by two small kernels of ours around the
// cuDNN calls (volume_plan.h says when each runs): the pad step and the crop step, on FP32 NCDHW tensors (a layer on
// FP32 data) or on channels-last tensors of a session's storage type (a native layer, compute/storage_format.h; a
// 2-D tensor is the same with depth 1, so conv_transpose2d's native crop and conv2d's native pad step use them too).
// Host-side launchers only; each checks its launch.
#pragma once

#include "compute/storage_format.h"

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

// The same two steps on channels-last tensors ([n, d, h, w, c]) of `type`: the pad only moves values (in the widest
// unit the channel run and pointers allow); the crop adds the FP32 bias in FP32 and rounds once to `type`.
void padVolumeChannelsLast(const Pad3d& g, DType type, const void* x, void* y, cudaStream_t stream);
void cropVolumeChannelsLastAddBias(
    const Crop3d& g, DType type, const void* full, const float* bias, void* y, cudaStream_t stream);

} // namespace convscope::cudnn
