// detail::SingleThreadedBlas (op_common.h): OpenBLAS on the calling thread for one scope.
#include "compute/cpu/op_common.h"

#include <cblas.h>

namespace convscope::cpu::detail {

SingleThreadedBlas::SingleThreadedBlas()
    : m_saved(openblas_get_num_threads())
{
    if (m_saved != 1)
        openblas_set_num_threads(1);
}

SingleThreadedBlas::~SingleThreadedBlas()
{
    if (m_saved != 1)
        openblas_set_num_threads(m_saved);
}

} // namespace convscope::cpu::detail
