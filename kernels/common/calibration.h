// The GPU's ceilings for the roofline view (Backend::calibrate): measured on the device in about a second, so
// the window shows what this GPU reaches, not a datasheet figure.
//   bandwidth  a 1 GiB device-to-device copy (cudaMemcpyAsync), best of 5, read + write counted;
//   compute    (cuda module) a kernel of independent FMA chains in registers on every multiprocessor, best of 5:
//              the FP32 FMA peak a hand-written kernel could reach. The cudnn module measures cuBLAS SGEMM instead
//              (kernels/cudnn), the vendor's own best at a real matrix product.
#pragma once

#include <string>

namespace convscope::gpu {

struct Measured {
    double value = 0; // GB/s or GFLOP/s
    std::string method;
};

Measured measureCopyBandwidth();
Measured measureFmaPeak();

} // namespace convscope::gpu
