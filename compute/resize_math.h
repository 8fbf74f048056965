// The arithmetic of the resize kind (compute/layer_spec.h's Resize), written once for the CPU ops and the CUDA kernels
// (the functions are __host__ __device__ under nvcc): where output index x of a spatial axis reads the input, and with
// which weights. ONNX Resize's reference (onnx/reference/ops/op_resize.py) defines it: the coordinate transformation
// gives the source coordinate in double; nearest rounds it by nearest_mode, linear takes the two neighbours
// ⌊x⌋, ⌊x⌋+1 with weights 1 − r, r, cubic the four ⌊x⌋−1 .. ⌊x⌋+2 with Keys' coefficients of r = x − ⌊x⌋; an index
// outside the input reads the edge (ONNX pads with the edge value) unless exclude_outside drops it and the weights are
// renormalised. A volume resizes D, H and W; an image H and W (its plan's D axis is the identity).
#pragma once

#include <cmath>
#include <cstdint>

// Its own macro, not kernels/common/host_device.h's CONVSCOPE_HD (which force-inlines and which compute/ does not
// see): these keep nvcc's own inlining, with which the GPU resize's bits were checked.
#if defined(__CUDACC__)
#define CONVSCOPE_RESIZE_HD __host__ __device__
#else
#define CONVSCOPE_RESIZE_HD
#endif

namespace convscope {

// Plain numbers, so a kernel can take the plan by value. The enums' values are Resize's (layer_spec.h), cast.
struct ResizeAxis {
    int64_t in = 1, out = 1;
    double scale = 1; // the scale the coordinates use: scale_factor when given, else out / in
};

struct ResizePlan {
    int mode = 0; // Resize::Mode: 0 nearest, 1 linear, 2 cubic
    int coordinates = 0; // Resize::Coordinates
    int nearestMode = 0; // Resize::NearestMode
    double cubicA = -0.75;
    bool excludeOutside = false;
    ResizeAxis axis[3]; // D, H, W (D is {1, 1, 1} for an image)
};

inline constexpr int kResizeMaxTaps = 4;

// The source coordinate of output index x along one axis (ONNX's coordinate_transformation_mode).
CONVSCOPE_RESIZE_HD inline double resizeSourceCoordinate(int coordinates, const ResizeAxis& a, int64_t x)
{
    const double xd = double(x), s = a.scale;
    switch (coordinates) {
    case 0: // half_pixel
        return (xd + 0.5) / s - 0.5;
    case 1: // pytorch_half_pixel
        return a.out > 1 ? (xd + 0.5) / s - 0.5 : -0.5;
    case 2: // align_corners
        return a.out > 1 ? xd * double(a.in - 1) / double(a.out - 1) : 0.0;
    case 3: // asymmetric
        return xd / s;
    case 4: { // half_pixel_symmetric
        const double adjustment = double(a.out) / (s * double(a.in));
        const double offset = double(a.in) / 2 * (1 - adjustment);
        return offset + (xd + 0.5) / s - 0.5;
    }
    default: // 5: tf_half_pixel_for_nn
        return (xd + 0.5) / s;
    }
}

CONVSCOPE_RESIZE_HD inline int64_t resizeClamp(int64_t i, int64_t n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

// Keys' cubic convolution kernel with parameter A at distance t ≥ 0.
CONVSCOPE_RESIZE_HD inline double resizeCubicWeight(double t, double A)
{
    if (t <= 1)
        return ((A + 2) * t - (A + 3)) * t * t + 1;
    if (t < 2)
        return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
    return 0;
}

// The taps of output index x along axis a: up to kResizeMaxTaps input indices (clamped into the input) and their
// weights; returns how many.
CONVSCOPE_RESIZE_HD inline int resizeTaps(const ResizePlan& p, const ResizeAxis& a, int64_t x, int64_t* idx, float* w)
{
    if (a.in == 1) {
        idx[0] = 0; // one input element (an image's D axis): every mode reads it with weight 1
        w[0] = 1;
        return 1;
    }
    const double c = resizeSourceCoordinate(p.coordinates, a, x);
    const double f = floor(c);
    const int64_t i0 = int64_t(f);
    const double r = c - f;
    if (p.mode == 0) { // nearest
        int64_t i = i0;
        if (r != 0) {
            switch (p.nearestMode) {
            case 0: // round_prefer_floor
                i = r <= 0.5 ? i0 : i0 + 1;
                break;
            case 1: // round_prefer_ceil
                i = r < 0.5 ? i0 : i0 + 1;
                break;
            case 2: // floor
                break;
            default: // ceil
                i = i0 + 1;
                break;
            }
        }
        idx[0] = resizeClamp(i, a.in);
        w[0] = 1;
        return 1;
    }
    if (p.mode == 1) { // linear
        idx[0] = resizeClamp(i0, a.in);
        idx[1] = resizeClamp(i0 + 1, a.in);
        w[0] = float(1 - r);
        w[1] = float(r);
        return 2;
    }
    double wd[4], sum = 0;
    for (int k = 0; k < 4; ++k) {
        const int64_t i = i0 - 1 + k;
        const double t = fabs(r - double(k - 1));
        wd[k] = (p.excludeOutside && (i < 0 || i >= a.in)) ? 0.0 : resizeCubicWeight(t, p.cubicA);
        sum += wd[k];
        idx[k] = resizeClamp(i, a.in);
    }
    for (int k = 0; k < 4; ++k)
        w[k] = float(p.excludeOutside && sum != 0 ? wd[k] / sum : wd[k]);
    return 4;
}

} // namespace convscope
