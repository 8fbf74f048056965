// cuda.tensor_core's kernels for __nv_bfloat16 storage (bfp16 math): conv2d_tensor_core_kernel.cuh instantiated for one
// type, so the three types compile in parallel.
#include "kernels/cuda/conv2d_tensor_core_kernel.cuh"

namespace convscope::cuda::tc {

CONVSCOPE_TENSOR_CORE_INSTANTIATE(__nv_bfloat16)

} // namespace convscope::cuda::tc
