// The DCGAN loop (compute/training/gan_run.h) on our kernels, cuda.implicit_gemm and cuda.direct, through the shared
// phased step (kernels/common/gpu_training_phased.cpp): two steps of the toy pair of tests/data/training/dcgan
// (tools/make_gan_reference.py, PyTorch in float64) give PyTorch's losses and both networks' parameters and batch-norm
// statistics within 1e-4 relative L2, as cudnn.auto's (cudnn_gan_test.cpp; the checks are gpu_gan_support.cpp's);
// and the phased step equals step() on both networks of the pair. Without a GPU every case prints "SKIPPED: <reason>".
#include "tests/kernels/gpu_training_support.h"

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
