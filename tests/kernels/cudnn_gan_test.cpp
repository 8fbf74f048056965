// The DCGAN loop (compute/training/gan_run.h) on cudnn.auto through the session's phased step
// (kernels/common/gpu_training_phased.cpp): two steps of the toy pair of tests/data/training/dcgan
// (tools/make_gan_reference.py, PyTorch in float64) give PyTorch's losses and both networks' parameters and batch-norm
// statistics, within 1e-4 relative L2; and the phased step on the GPU equals its step() on both networks of the pair.
// The checks are shared with cuda_gan_test.cpp (gpu_gan_support.cpp). Without a usable cuDNN every case prints
// "SKIPPED: <reason>".
#include "tests/kernels/gpu_training_support.h"

#include <catch2/catch.hpp>

using namespace convscope;

TEST_CASE("cudnn training: two DCGAN steps match PyTorch's losses and parameters", "[gpu][cudnn][train][gan]")
{
    test::checkDcganReference("cudnn", "auto", 1e-4);
}

TEST_CASE("cudnn training: the phased step equals step()", "[gpu][cudnn][train][gan]")
{
    // Two sessions may take different algorithms from cudnnFind (its timings), whose FP32 rounding differs by ~1e-6
    // in the first step's gradients and more after Adam's updates: the bound of the cpu.direct comparison.
    test::checkPhasedEqualsStep("cudnn", "auto", test::dcganCase("generator", 71), 2, 3e-3);
    test::checkPhasedEqualsStep("cudnn", "auto", test::dcganCase("discriminator", 72), 2, 3e-3);
}
