// GradScaler's update rule (grad_scaler.h): torch._amp_update_scale_ with the default factors and interval.
#include "compute/training/grad_scaler.h"

namespace convscope {

void GradScaler::update(bool overflowed)
{
    if (overflowed) {
        m_scale *= 0.5;
        m_cleanSteps = 0;
    } else if (++m_cleanSteps == kGrowthInterval) {
        m_scale *= 2;
        m_cleanSteps = 0;
    }
}

} // namespace convscope
