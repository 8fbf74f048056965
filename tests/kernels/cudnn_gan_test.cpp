// The DCGAN loop (compute/training/gan_run.h) on cudnn.auto through the session's phased step
// (kernels/common/gpu_training_phased.cpp): two steps of the toy pair of tests/data/training/dcgan
// (tools/make_gan_reference.py, PyTorch in float64) give PyTorch's losses and both networks' parameters and batch-norm
// statistics, within 1e-4 relative L2; and the phased step on the GPU equals its step() on both networks of the pair.
// The checks are shared with cuda_gan_test.cpp (gpu_gan_support.cpp). In mixed precision the same two steps stay
// within the half types' rounding of the reference (fp16 with the loop's one GradScaler), and a loss scale that
// overflows skips both networks' updates and halves the scale. Without a usable cuDNN every case prints
// "SKIPPED: <reason>".
#include "compute/network_json.h"
#include "tests/kernels/gpu_training_support.h"
#include "tests/training/gan_reference.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <tuple>
#include <utility>

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

TEST_CASE("cudnn training: the DCGAN loop in fp16 (one GradScaler for both optimizers) and bf16 stays within the "
          "half types' rounding of PyTorch's",
    "[gpu][cudnn][train][gan][mixed]")
{
    if (!test::backendOrSkip("cudnn"))
        return;
    // Half activations and gradients against the float64 reference (FP32 masters, Adam). Measured on the H200
    // (2026-11-29): the worst tensor 8.5e-4 from PyTorch's in fp16, 1.2e-2 in bf16.
    test::checkDcganHalfModes(test::loadDcganReference(), { "cudnn", "auto", false });
}

TEST_CASE("cudnn training: the DCGAN loop's GradScaler skips the updates whose gradients overflow and halves the scale",
    "[gpu][cudnn][train][gan][mixed]")
{
    if (!test::backendOrSkip("cudnn"))
        return;
    const test::DcganReference d = test::loadDcganReference();
    test::checkDcganOverflowSkipsEveryStep(
        d, test::runDcganReference(d, { "cudnn", "auto", false }, 0, test::dcganHalfSession(MathMode::FP16, "1e30")));
}
