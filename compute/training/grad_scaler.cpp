// GradScaler's update rule (grad_scaler.h): torch._amp_update_scale_ with the default factors and interval.
#include "compute/training/grad_scaler.h"

#include "compute/error.h"

#include <cmath>
#include <exception>

namespace convscope {

double GradScaler::initialScaleFrom(const std::map<std::string, std::string>& extra)
{
    const auto it = extra.find("loss_scale");
    if (it == extra.end())
        return kInitialScale;
    double scale = 0;
    try {
        size_t used = 0;
        scale = std::stod(it->second, &used);
        if (used != it->second.size())
            scale = 0;
    } catch (const std::exception&) {
        scale = 0;
    }
    if (!(scale > 0) || !std::isfinite(scale))
        throw InputError("loss_scale=" + it->second + ": expected a positive number (FP16's initial loss scale)");
    return scale;
}

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
