// The built-in CPU backend "cpu": algorithms "direct" (the readable reference loops) and "im2col_gemm"
// (im2col / col2im + OpenBLAS sgemm for convolutions, threaded loops for the rest).
#pragma once

#include "compute/backend.h"

#include <memory>

namespace convscope {

std::shared_ptr<Backend> makeCpuBackend();
// The CPU's roofline ceilings (cpu_calibrate.cpp): OpenBLAS sgemm and a large memcpy, under a second.
DeviceCeilings calibrateCpu();

} // namespace convscope
