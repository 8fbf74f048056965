// One training step of each case in tests/data/training (written by tools/make_training_references.py with PyTorch's
// autograd and torch.optim in float64) on cpu.direct and cpu.im2col_gemm: the input gradient, every parameter's
// gradient, and the parameters and batch-norm running statistics after the optimizer's step, within 1e-5 relative L2
// (torch_reference_cases.h).
// The cases cover conv2d (groups, dilation, stride, no bias), conv_transpose2d, batch norm (affine and not), every
// activation, prelu, the pools (ceil_mode, count_include_pad, divisor_override, dilation), global pooling, add, mul,
// concat, the three pad modes, softmax, linear, the three losses, SGD with momentum and weight decay, Adam, and
// a ResNet basic block with its downsampling shortcut, the 3-D kinds, layer_norm, group_norm and instance_norm (affine
// and not, layer_norm without bias), and LeNet-5 (trained) on its ten test digits.
#include "tests/training/torch_reference_cases.h"

using namespace convscope;
using namespace convscope::test;

TEST_CASE("one training step matches PyTorch's gradients and updated parameters", "[training][torch]")
{
    const auto cpu = BackendRegistry::instance().find("cpu");
    REQUIRE(cpu);
    for (const char* algorithm : { "direct", "im2col_gemm" })
        CHECK(checkTorchReferenceCases(*cpu, algorithm) >= 8);
}
