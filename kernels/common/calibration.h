// The GPU's ceilings for the roofline view (Backend::calibrate): measured on the device in about a second, so
// the window shows what this GPU reaches, not a datasheet figure.
//   bandwidth  a 1 GiB device-to-device copy (cudaMemcpyAsync), best of 5, read + write counted;
//   compute    (cuda module) a kernel of independent FMA chains in registers on every multiprocessor, best of 5:
//              the FP32 FMA peak a hand-written kernel could reach. The cudnn module measures cuBLAS SGEMM instead
//              (kernels/cudnn), the vendor's own best at a real matrix product.
//   Tensor Cores (both modules) cuBLAS GEMMs in TF32, FP16 and BF16 (DeviceCeilings::mathGflops): the ceiling of
//              a run in that math mode, which our Tensor Core kernel and cuDNN's are compared against.
#pragma once

#include "compute/backend.h"

#include <cublas_v2.h>

#include <map>
#include <string>

namespace convscope::gpu {

struct Measured {
    double value = 0; // GB/s or GFLOP/s
    std::string method;
};

Measured measureCopyBandwidth();
Measured measureFmaPeak();

// cuBLAS GEMM rates by math mode name, 8192³ on uniform random operands in [-1, 1) (zeros would let the clocks
// run higher than real data allows), best of 3 after a warm-up, FP32 accumulation throughout:
//   "tf32"  FP32 operands and output, CUBLAS_COMPUTE_32F_FAST_TF32;
//   "fp16"  CUDA_R_16F operands and output, CUBLAS_COMPUTE_32F;
//   "bf16"  CUDA_R_16BF operands and output, CUBLAS_COMPUTE_32F.
// Runs on `handle` (its stream and math mode are restored afterwards). Each method starts "cuBLAS BF16 GEMM
// 8192³," so a view can quote the part before the first comma. About 25 ms of GEMMs and 768 MiB of device memory.
std::map<std::string, Measured> measureTensorCoreGemms(cublasHandle_t handle);
// The same on a handle of its own (the cuda module has no cuBLAS handle of its own otherwise), written into
// `ceilings`' mathGflops and mathMethods.
// The ceilings of a device from its measured compute rate and copy bandwidth (no Tensor Core figures yet).
DeviceCeilings deviceCeilings(const Measured& compute, const Measured& copy);
// "13.1.0": the cuBLAS this process loaded.
std::string cublasVersionString();
void addTensorCoreCeilings(DeviceCeilings& ceilings);
void addTensorCoreCeilings(DeviceCeilings& ceilings, cublasHandle_t handle);

} // namespace convscope::gpu
