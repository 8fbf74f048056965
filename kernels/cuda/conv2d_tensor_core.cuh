// conv2d on Tensor Cores (cuda.tensor_core, issue 20): an implicit GEMM on wgmma (sm_90a, compute capability 9.0) or
// mma.sync (every other GPU, and layers wgmma does not take) for the tf32, fp16 and bf16 math modes, reading and
// writing the session's channels-last storage (compute/storage_format.h). The kernels and the reasons for their shapes
// are in conv2d_tensor_core.cu and conv2d_tensor_core_wgmma.cu. Host-side launchers only, so cuda_backend.cpp can
// include this.
#pragma once

#include "compute/storage_format.h"
#include "kernels/cuda/conv2d.cuh"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <string>

namespace convscope::cuda {

// Empty when the Tensor Core kernel runs this layer (one group); else why not (the layer then runs stored_conv.cuh's
// channels-last direct kernel in the storage format, FP32 sums).
std::string conv2dTensorCoreRefusal(const ConvGeometry& g);

// What the session's options force (for measuring what a kernel or a shape buys; 0 everywhere: the launcher's choice):
//   --option tc_kernel=tma|wgmma|mma   the sm_90a warpgroup-MMA kernel fed by TMA (conv2d_tensor_core_tma_wgmma.cu;
//                                   the default where it takes the layer), the same fed by cp.async
//                                   (conv2d_tensor_core_wgmma.cu; the default where TMA does not take it and C is a
//                                   multiple of the 16-byte piece), or the mma.sync one (every other GPU and layer);
//   --option tc_tile=128x64|128x128|128x128w8|256x64 (mma.sync) | wg128x64|wg128x128|wg128x256|… (wgmma, cp.async) |
//                    tma128x64|tma128x128|tma128x128r64|tma128x128w|… (wgmma, TMA; …w: one input window a kernel row);
//   --option tc_kbytes=64|128       mma.sync's k-tile row (wgmma's is 128 bytes).
// The parser throws InputError naming the choices, and on a wgmma tile with tc_kernel=mma (or the reverse).
struct TensorCoreOptions {
    int tile = 0; // index + 1 into the tile table
    int kBytes = 0;
    int kernel = 0; // 0: the launcher's choice, 1: mma.sync, 2: wgmma, 3: wgmma fed by TMA
    // --option tc_probe=loads|math|no_epilogue|math_no_epilogue (TMA kernel only, for finding its bound): only the
    // copies run (no products), only the products (on whatever shared memory holds, no copies), or either of the two
    // without the epilogue (bit 4: nothing stored). The output is not computed; the layer note says so.
    int probe = 0;
    // --option tc_wait=suspend|spin (TMA kernel): wait on its mbarriers by try_wait, which may suspend the thread
    // (the default), or by test_wait in a loop.
    int spin = 0;
    // --option tc_release=late|early (TMA kernel): a consumer gives k-tile t's stage back after it issued t + 1's
    // products and t's retired (late, wgmma.wait_group 1), or as soon as t's products retired (early, wait_group 0:
    // one stage more in flight, no products queued behind the running ones). 0: the launcher's choice, early where
    // two blocks share a multiprocessor (the other block's products fill the gap; docs/PERFORMANCE.md "Version 6").
    int release = 0; // 0 the launcher's choice, 1 late, 2 early
    // --option tc_split=N (1 to 16; not the stem, nor the window tiles): split the reduction in N parts instead of by
    // the rule (splitReduction in conv2d_tensor_core_plan.h), to measure the rule against.
    int splits = 0;
};
TensorCoreOptions conv2dTensorCoreParseOptions(const std::map<std::string, std::string>& extra);
// The device the plan is for: its multiprocessors (grid fill, split-K) and compute capability (major·10 + minor).
struct TensorCoreDevice {
    int smCount;
    int computeCapability;
};

// The layer's scratch: the weights packed for the kernel ([K][R·S·C padded], in the storage type; TF32-rounded in
// tf32 mode) and, when the grid would under-fill the device, the FP32 partial sums of the split reduction.
size_t conv2dTensorCoreScratchBytes(
    const ConvGeometry& g, DType type, const TensorCoreOptions& o, const TensorCoreDevice& d);
// Packs `w` ([K, C, R, S] in the storage type, on the device) into the scratch. Once per layer.
void conv2dTensorCorePrepare(const ConvGeometry& g, DType type, const TensorCoreOptions& o, const TensorCoreDevice& d,
    const void* w, void* scratch, cudaStream_t st);
// Which kernel, tile and split the launcher picks ("fp16 wgmma m64n256k16, 128x256 tiles of 2 warpgroups, ...");
// `fusedResidual`: the layer adds a skip in its epilogue (the note says how the skip is read).
std::string conv2dTensorCoreNote(const ConvGeometry& g, DType type, const TensorCoreOptions& o,
    const TensorCoreDevice& d, bool fusedResidual = false);
// x: [N, H, W, C] and y: [N, P, Q, K] in `type` (channels-last); bias FP32 (or null); scratch as prepared.
void conv2dTensorCore(const ConvGeometry& g, DType type, const TensorCoreOptions& o, const TensorCoreDevice& d,
    const void* x, const float* bias, void* y, void* scratch, cudaStream_t st);

} // namespace convscope::cuda
