// Mixed precision in the CPU training session (issue 33; --math fp16 / bf16 on cpu.direct and cpu.im2col_gemm), the
// semantics onednn.auto's bf16 training has (backends/onednn/onednn_training.cpp), which are PyTorch CPU autocast's
// lists: the convolutions and linear layers ("products") read their input, weight and output gradient rounded to the
// 16-bit type and write their output and input gradient rounded to it; their products are then exact in FP32 (11 or 8
// significant bits a factor), their sums the algorithm's (double in cpu.direct, FP32 in cpu.im2col_gemm), and their
// weight and bias gradients stay FP32. Every other layer, the loss, the parameters and the optimizer stay FP32.
#pragma once

#include "compute/backend.h"
#include "compute/layer_spec.h"
#include "compute/tensor.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <variant>

namespace convscope::cpu_training {

// Whether `math` rounds the products' tensors on the CPU (FP16, BF16; TF32 trains as FP32: the CPU has no TF32).
inline bool mixedProducts(MathMode math) { return math == MathMode::FP16 || math == MathMode::BF16; }

// The layer kinds whose tensors mixed precision rounds (autocast's lower-precision list among the kinds that train).
inline bool isProductLayer(const LayerSpec& spec)
{
    return std::holds_alternative<Conv2d>(spec) || std::holds_alternative<ConvTranspose2d>(spec)
        || std::holds_alternative<Conv3d>(spec) || std::holds_alternative<ConvTranspose3d>(spec)
        || std::holds_alternative<Linear>(spec);
}

// v rounded to nearest, ties to even, in `math`'s 16-bit type, as float: NaN stays NaN; BF16 keeps FP32's range (the
// high half of the bits); FP16 rounds past 65504 to ±inf (from 65520, the halfway point to 65536) and below 2^-14 to
// its subnormals, multiples of 2^-24. Bit operations and one add, no libgcc call (_Float16 casts without F16C are
// one), so the loops over a tensor vectorise; the tests hold FP16's to _Float16's over the whole float range.
inline float roundedTo(float v, MathMode math)
{
    if (!mixedProducts(math))
        return v;
    const uint32_t bits = std::bit_cast<uint32_t>(v);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude >= 0x7F800000u)
        return v; // ±inf, NaN
    if (math == MathMode::BF16) // 16 bits dropped; a carry into the exponent is the correct rounding (to ±inf too)
        return std::bit_cast<float>((bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u);
    const float a = std::bit_cast<float>(magnitude);
    if (a >= 65520.0f)
        return std::copysign(std::numeric_limits<float>::infinity(), v);
    if (a < 0x1p-14f) // FP32's own rounding to nearest even at 0.5's ulp, 2^-24: the subnormal grid
        return std::copysign((a + 0.5f) - 0.5f, v);
    return std::bit_cast<float>((bits + 0xFFFu + ((bits >> 13) & 1u)) & 0xFFFFE000u); // 13 bits dropped
}

// The tensor's values rounded (roundedTo), in place or into a new tensor; across the CPU's threads when large.
void roundInPlace(Tensor& t, MathMode math);
Tensor roundedCopy(const Tensor& t, MathMode math);
// t times `factor` (FP16's loss scale and its inverse), across the threads when large.
void scaleInPlace(Tensor& t, float factor);

// The metadata's "math" of a CPU training session (the CPU's own, onednn.auto's): "fp32"; tf32 trains as FP32 and says
// so; fp16 and bf16 as the mixed precision above, `layers` naming where the products run ("the convolutions and linear
// layers", "… on oneDNN") and `sums` how ("exact products, double sums"); `lossScale` > 0: FP16's GradScaler, from
// that scale; `model` what the semantics are (the GPU's cuda session says they are the CPU's).
std::string mixedTrainingMath(MathMode math, const std::string& layers, const std::string& sums, double lossScale = 0,
    const std::string& model = "as PyTorch's CPU autocast");

} // namespace convscope::cpu_training
