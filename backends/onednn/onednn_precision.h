// The precision an onednn session computes in (`--math`): what it stores between layers, what it refuses on a CPU
// that cannot compute a half-precision format natively, and how a result names what ran.
//
//   mode  activations  conv/deconv/linear weights  biases, BN statistics, PReLU slopes  sums
//   fp32  f32          f32                         f32                                  f32
//   tf32  f32 (the CPU has no TF32: it runs as fp32, and its metadata says so)
//   bf16  bf16         bf16 (converted once)       f32                                  f32 (inside oneDNN)
//   fp16  f16          f16                         f32                                  f32
//
// oneDNN would run bf16 on any AVX-512 CPU by emulating it (slower than f32), so a bf16 session needs the CPU's
// own BF16 units (AVX512-BF16, or AMX-BF16), and fp16 needs AVX512-FP16 or AMX-FP16 and a oneDNN with f16 kernels:
// Debian's oneDNN 2.6 converts f16 in reorders only, so fp16 is refused there with that reason.
//
// Speed: without AMX, bf16 halves the memory traffic but not the arithmetic. On the Xeon these figures come from
// (AVX512-BF16, no AMX, 2 threads), a loop of independent vdpbf16ps (32 multiply-adds each) reached 46 G
// multiply-adds/s on one core against 94 for FP32 FMAs (16 each: two issue per cycle, one vdpbf16ps every other
// cycle), and oneDNN's bf16 convolutions ran at about 0.55x the speed of its FP32 ones on the unet-encoder suite
// (0.3x to 1.2x per layer across runs on a shared machine). AMX-BF16's tiles are where BF16 is faster on a CPU.
#pragma once

#include "compute/backend.h"

#include <dnnl.hpp>

#include <string>

namespace convscope::onednn {

std::string isaName(); // oneDNN's effective instruction set ("avx512_core_bf16")
dnnl::memory::data_type storageType(MathMode m); // f32 for fp32 and tf32, bf16, f16
// Why this CPU and this oneDNN cannot run `m` natively ("onednn bf16 needs AVX512-BF16 or AMX; this CPU has ...");
// empty when they can (always for fp32 and tf32).
std::string whyNotNative(MathMode m);
// metadata()["math"]: "bf16 storage, bf16 products, fp32 accumulation (oneDNN, avx512_core_bf16)".
std::string mathDescription(MathMode m);
// info()'s line for a half-precision format: "native (AVX512-BF16; oneDNN avx512_core_bf16)" or "no: <why>".
std::string halfSupport(MathMode m);

} // namespace convscope::onednn
