// How a GPU session stores its tensors for a math mode. FP32 keeps today's layout (NCHW, FP32). The Tensor Core
// modes store every activation channels-last (NHWC, or NDHWC for volumes), which is the layout Tensor Core
// convolutions read in contiguous 16-byte chunks (cuDNN's and ours alike), so no layer pays a transpose:
//
//   mode  storage  layout         convolution/GEMM operands    sums
//   fp32  FP32     NCHW           FP32                         FP32
//   tf32  FP32     channels-last  rounded to TF32 (10-bit)     FP32
//   fp16  FP16     channels-last  FP16                         FP32
//   bf16  BF16     channels-last  BF16                         FP32
//
// The input is converted once, on the device, as part of the timed host-to-device step; layer outputs are converted
// back to FP32 NCHW when they are fetched. Parameters other than the GEMM operands (biases, batch-norm statistics,
// PReLU slopes) stay FP32. A 2-D tensor ([N, F]) is the same in both layouts.
#pragma once

#include "compute/backend.h"

#include <cstddef>
#include <string>

namespace convscope {

enum class DType { F32, F16, BF16 };

inline size_t dtypeBytes(DType t) { return t == DType::F32 ? 4 : 2; }
inline const char* dtypeName(DType t) { return t == DType::F32 ? "fp32" : t == DType::F16 ? "fp16" : "bf16"; }

struct StorageFormat {
    DType dtype = DType::F32;
    bool channelsLast = false;
    bool plainFp32() const { return dtype == DType::F32 && !channelsLast; }
    std::string str() const { return std::string(dtypeName(dtype)) + (channelsLast ? " channels-last" : " NCHW"); }
    bool operator==(const StorageFormat&) const = default;
};

inline StorageFormat gpuStorageFor(MathMode m)
{
    switch (m) {
    case MathMode::TF32:
        return { DType::F32, true };
    case MathMode::FP16:
        return { DType::F16, true };
    case MathMode::BF16:
        return { DType::BF16, true };
    case MathMode::FP32:
        break;
    }
    return {};
}

} // namespace convscope
