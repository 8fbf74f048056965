// The activation kernel of an activation layer (elementwise.cuh's ActivationKind and its one scalar parameter):
// shared by the FP32 dispatch and the storage-format dispatch of the cuda backend. Every activation kind is named,
// and any other kind does not compile.
#pragma once

#include "compute/elementwise_math.h"
#include "compute/layer_kinds.h"
#include "compute/layer_spec.h"
#include "kernels/cuda/elementwise.cuh"

#include <type_traits>

namespace convscope::cuda {

// The activation-family kinds (compute/layer_kinds.h) that run activation.cu's kernel: all but the three with
// kernels of their own (hardtanh and prelu in parametric_activation.cuh, softmax, and the tensor-maths kinds in
// elementwise_math.cuh). A new activation kind is one
// of them by its family, and activationKindOf below refuses to compile until it is mapped.
template <typename T>
inline constexpr bool hasActivationKernel = layerKindOf<T>().family == KindFamily::Activation
    && !std::is_same_v<T,
        Hardtanh> && !std::is_same_v<T, PReLU> && !isSoftmaxKind<T> && !isElementwiseMathKind<T>; // gelu,
                                                                                                  // softplus,
                                                                                                  // mish,
                                                                                                  // unary:
                                                                                                  // elementwise_math.cu

template <typename T> inline ActivationKind activationKindOf(const T& l, float* param)
{
    *param = 0.0f;
    if constexpr (std::is_same_v<T, ReLU>)
        return ActivationKind::ReLU;
    else if constexpr (std::is_same_v<T, LeakyReLU>) {
        *param = static_cast<float>(l.negative_slope);
        return ActivationKind::LeakyReLU;
    } else if constexpr (std::is_same_v<T, Sigmoid>)
        return ActivationKind::Sigmoid;
    else if constexpr (std::is_same_v<T, Tanh>)
        return ActivationKind::Tanh;
    else if constexpr (std::is_same_v<T, ELU>) {
        *param = static_cast<float>(l.alpha);
        return ActivationKind::ELU;
    } else if constexpr (std::is_same_v<T, ReLU6>)
        return ActivationKind::ReLU6;
    else if constexpr (std::is_same_v<T, Hardswish>)
        return ActivationKind::Hardswish;
    else if constexpr (std::is_same_v<T, Hardsigmoid>)
        return ActivationKind::Hardsigmoid;
    else if constexpr (std::is_same_v<T, SiLU>)
        return ActivationKind::SiLU;
    else
        static_assert(dependent_false<T>, "cuda backend: not an activation kind");
}

} // namespace convscope::cuda
