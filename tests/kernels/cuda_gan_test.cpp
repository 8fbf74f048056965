// The DCGAN loop (compute/training/gan_run.h) on our kernels, cuda.implicit_gemm and cuda.direct, through the shared
// phased step (kernels/common/gpu_training_phased.cpp): two steps of the toy pair of tests/data/training/dcgan
// (tools/make_gan_reference.py, PyTorch in float64) give PyTorch's losses and both networks' parameters and batch-norm
// statistics within 1e-4 relative L2, as cudnn.auto's (cudnn_gan_test.cpp; the checks are gpu_gan_support.cpp's);
// and the phased step equals step() on both networks of the pair. In fp16 and bf16 (the CPU's mixed precision on our
// kernels: cuda_training_session.h) the same two steps stay within the half types' rounding of the reference, on
// cuda.implicit_gemm's FP32 kernels and on cuda.tensor_core's TF32 tiles, and a loss scale that overflows skips both
// networks' updates and halves the scale. Without a GPU every case prints "SKIPPED: <reason>".
#include "tests/kernels/gpu_training_support.h"
#include "tests/training/gan_reference.h"

#include <catch2/catch.hpp>

using namespace convscope;

TEST_CASE("cuda training: two DCGAN steps match PyTorch's losses and parameters", "[gpu][cuda][train][gan]")
{
    test::checkDcganReference("cuda", "implicit_gemm", 1e-4);
    test::checkDcganReference("cuda", "direct", 1e-4);
}

TEST_CASE("cuda training: the phased step equals step()", "[gpu][cuda][train][gan]")
{
    // The same deterministic kernels in the same order (split-K summed in order; a sum over one pass is 0 + g): the
    // two paths agree to rounding at most.
    for (const char* algorithm : { "implicit_gemm", "direct" }) {
        test::checkPhasedEqualsStep("cuda", algorithm, test::dcganCase("generator", 71), 2, 1e-6);
        test::checkPhasedEqualsStep("cuda", algorithm, test::dcganCase("discriminator", 72), 2, 1e-6);
    }
}

TEST_CASE("cuda training: the DCGAN loop in fp16 (one GradScaler for both optimizers) and bf16 stays within the half "
          "types' rounding of PyTorch's, on FP32 and on TF32 kernels",
    "[gpu][cuda][train][gan][mixed]")
{
    if (!test::backendOrSkip("cuda"))
        return;
    const test::DcganReference d = test::loadDcganReference();
    // The rounded products against the float64 reference, as the CPU's (1.09e-3 and 1.22e-2 there).
    for (const char* algorithm : { "implicit_gemm", "tensor_core" })
        test::checkDcganHalfModes(d, { "cuda", algorithm, false });
    test::checkDcganOverflowSkipsEveryStep(d,
        test::runDcganReference(
            d, { "cuda", "implicit_gemm", false }, 0, test::dcganHalfSession(MathMode::FP16, "1e30")));
}
