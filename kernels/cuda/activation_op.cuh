// The activation functions on the device, PyTorch's definitions: shared by the activation layers
// (activation.cu) and the convolution epilogues that apply a fused activation (compute/fusion.h).
#pragma once

#include "kernels/common/storage_types.cuh"
#include "kernels/cuda/elementwise.cuh"

#include <cuda_runtime.h>

namespace convscope::cuda {

template <ActivationKind> inline constexpr bool kUnhandledActivation = false;

// __host__ __device__ only so that the host compiler checks the dispatches below; the host never calls them.
template <ActivationKind K> __host__ __device__ __forceinline__ float applyActivation(float v, float param)
{
    if constexpr (K == ActivationKind::ReLU)
        return v > 0.0f ? v : (isnan(v) ? v : 0.0f);
    else if constexpr (K == ActivationKind::LeakyReLU)
        return v > 0.0f ? v : v * param;
    else if constexpr (K == ActivationKind::Sigmoid)
        return 1.0f / (1.0f + expf(-v));
    else if constexpr (K == ActivationKind::Tanh)
        return tanhf(v);
    else if constexpr (K == ActivationKind::ELU)
        return v > 0.0f ? v : param * expm1f(v);
    else if constexpr (K == ActivationKind::ReLU6) // hardtanh(x, 0, 6): NaN stays NaN
        return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
    else if constexpr (K == ActivationKind::Hardswish)
        return v <= -3.0f ? 0.0f : (v >= 3.0f ? v : v * (v + 3.0f) / 6.0f);
    else if constexpr (K == ActivationKind::Hardsigmoid)
        return v <= -3.0f ? 0.0f : (v >= 3.0f ? 1.0f : v / 6.0f + 0.5f);
    else if constexpr (K == ActivationKind::SiLU)
        return v / (1.0f + expf(-v));
    else
        static_assert(kUnhandledActivation<K>, "applyActivation: a new ActivationKind needs its formula here");
}

// The fused activations that need a transcendental function, out of line: an epilogue inlines `epilogue` at every
// output of its tile, and with these inlined too each Tensor Core kernel was tens of thousands of instructions (a
// jump table and every case's code per output: instruction-fetch stalls, ncu). A layer with one of them pays a call
// per output instead. (Defined here: the module compiles without relocatable device code, so every translation unit
// has its copy.) Every kind is named: the switch has no default, so the host compiler's -Wswitch (an error) refuses
// a kind it misses, which is why this is __host__ __device__. Only sigmoid, tanh and ELU arrive here from `epilogue`.
inline __host__ __device__ __noinline__ float epilogueTranscendental(int kind, float param, float v)
{
    switch (ActivationKind(kind)) {
    case ActivationKind::ReLU:
        return applyActivation<ActivationKind::ReLU>(v, param);
    case ActivationKind::LeakyReLU:
        return applyActivation<ActivationKind::LeakyReLU>(v, param);
    case ActivationKind::Sigmoid:
        return applyActivation<ActivationKind::Sigmoid>(v, param);
    case ActivationKind::Tanh:
        return applyActivation<ActivationKind::Tanh>(v, param);
    case ActivationKind::ELU:
        return applyActivation<ActivationKind::ELU>(v, param);
    case ActivationKind::ReLU6:
        return applyActivation<ActivationKind::ReLU6>(v, param);
    case ActivationKind::Hardswish:
        return applyActivation<ActivationKind::Hardswish>(v, param);
    case ActivationKind::Hardsigmoid:
        return applyActivation<ActivationKind::Hardsigmoid>(v, param);
    case ActivationKind::SiLU:
        return applyActivation<ActivationKind::SiLU>(v, param);
    }
    return v;
}

// A convolution's epilogue: `kind` is ConvGeometry::act (−1: none). The branch is uniform across the grid.
__device__ __forceinline__ float epilogue(int kind, float param, float v)
{
    if (kind < 0)
        return v;
    if (kind == int(ActivationKind::ReLU))
        return applyActivation<ActivationKind::ReLU>(v, param);
    if (kind == int(ActivationKind::LeakyReLU))
        return applyActivation<ActivationKind::LeakyReLU>(v, param);
    return epilogueTranscendental(kind, param, v);
}

// A tile epilogue's activation, chosen once per tile instead of per output: `epilogue`'s tests and its call (which
// the compiler cannot move out of a loop) cost about 8 instructions an output, most of a 16-bit epilogue's
// instructions (ncu, docs/PERFORMANCE.md, session 31). No activation and ReLU compile to their own instructions; the
// other kinds go through `epilogue`. `Kind`: −1, int(ActivationKind::ReLU) or kAnyActivation.
constexpr int kAnyActivation = 1000;
template <int Kind> struct TileActivation {
    int kind;
    float param;
    static constexpr bool kNone = Kind < 0, kReLU = Kind == int(ActivationKind::ReLU);
    __device__ __forceinline__ float operator()(float v) const
    {
        if constexpr (kNone)
            return v;
        else if constexpr (kReLU) { // max(v, 0) keeping NaN: applyActivation<ReLU> in one instruction
            float r;
            asm("max.NaN.f32 %0, %1, 0f00000000;\n" : "=f"(r) : "f"(v));
            return r;
        } else
            return epilogue(kind, param, v);
    }
};
// Calls f(TileActivation<…>) for activation `kind` (−1: none) with `param`.
template <typename F> __device__ __forceinline__ void withTileActivation(int kind, float param, F&& f)
{
    if (kind < 0)
        f(TileActivation<-1> { kind, param });
    else if (kind == int(ActivationKind::ReLU))
        f(TileActivation<int(ActivationKind::ReLU)> { kind, param });
    else
        f(TileActivation<kAnyActivation> { kind, param });
}

// A fused residual add (compute/fusion.h, ConvGeometry::residual): element i of the skip tensor, which is stored like
// the convolution's output (T, same layout and index), as FP32; 0 without a skip (the branch is uniform across the
// grid). An epilogue computes act((sum + bias) + skip): the unfused add's operands, in its order.
template <typename T = float> __device__ __forceinline__ float skipAt(const void* skip, size_t i)
{
    return skip ? gpu::toFloat(static_cast<const T*>(skip)[i]) : 0.0f;
}

} // namespace convscope::cuda
