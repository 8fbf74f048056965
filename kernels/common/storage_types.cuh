// Device-side element types of the storage formats (compute/storage_format.h): loads that widen to FP32 and stores
// that round from FP32 (round to nearest even), so a kernel templated on the storage type does its math in FP32.
// `withStorageType(dtype, f)` calls f with a value of the C++ type (float, __half, __nv_bfloat16) for a DType.
#pragma once

#include "compute/error.h"
#include "compute/storage_format.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace convscope::gpu {

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(__half v) { return __half2float(v); }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T fromFloat(float v);
template <> __device__ __forceinline__ float fromFloat<float>(float v) { return v; }
template <> __device__ __forceinline__ __half fromFloat<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

template <typename F> decltype(auto) withStorageType(DType t, F&& f)
{
    switch (t) {
    case DType::F16:
        return f(__half {});
    case DType::BF16:
        return f(__nv_bfloat16 {});
    case DType::F32:
        break;
    }
    return f(float {});
}

} // namespace convscope::gpu
