// torch.amp.GradScaler's loss scale and its update rule, with PyTorch's defaults: the scale halves at a step whose
// gradients overflowed FP16 (backoff_factor 0.5; that step's optimizer updates are skipped) and doubles after 2000
// steps in a row without one (growth_factor 2, growth_interval 2000). One scaler may span several optimizers, as in
// PyTorch's recipe for a GAN (one GradScaler, scaler.step(opt_d), scaler.step(opt_g), one scaler.update() a step): the
// step overflowed when any of them found a gradient that is not finite. Used by the training sessions' step() in FP16
// (the GPU sessions', kernels/common/gpu_training_session.h, and the CPU's, cpu_training_internal.h) and by the DCGAN
// loop's phased steps (gan_run.cpp).
#pragma once

#include <map>
#include <string>

namespace convscope {

class GradScaler {
public:
    static constexpr double kInitialScale = 65536; // GradScaler's init_scale
    static constexpr int kGrowthInterval = 2000;

    explicit GradScaler(double initialScale = kInitialScale) { reset(initialScale); }

    // The initial scale a session's options ask for: --option loss_scale=S (GradScaler's init_scale), else
    // kInitialScale. Throws InputError when S is not a positive finite number.
    static double initialScaleFrom(const std::map<std::string, std::string>& extra);

    double scale() const { return m_scale; }
    // After a step: `overflowed` when a gradient of any optimizer the step ran was not finite (scaler.update()).
    void update(bool overflowed);
    // As a new scaler starting from `initialScale`.
    void reset(double initialScale)
    {
        m_scale = initialScale;
        m_cleanSteps = 0;
    }

private:
    double m_scale = kInitialScale;
    int m_cleanSteps = 0; // steps since the scale last changed, none of which overflowed
};

} // namespace convscope
