// Helpers shared by the test suites: random tensors, poisoning, paths to test data and examples.
#pragma once

#include "compute/network.h"
#include "compute/profiler.h"
#include "compute/tensor.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace convscope::test {

// Fresh uniform(-1, 1) data from a seed.
Tensor randomTensor(const Shape& shape, uint64_t seed);
// Fills with NaN so an element a kernel forgot to write fails the comparison.
void poison(Tensor& t);
// One pass on each of `selections` in turn, no warm-up, every layer's output kept, no reference: the options
// of the tests that compare outputs rather than time them.
ProfileOptions onePassOptions(std::vector<Selection> selections);
// `net` run once on `selection` (onePassOptions): its last layer's output (REQUIREs that the run succeeded, naming the
// failure).
Tensor onePassOutput(const Network& net, const Tensor& input, const std::string& selection = "cpu.direct");
std::filesystem::path dataDir(); // tests/data
std::filesystem::path examplesDir(); // resources/networks
std::filesystem::path cliPath(); // the built convscope-cli
// A loopback TCP port nobody listens at now (bound to 0, read back, closed): the rendezvous tests' MASTER_PORT.
int freeLoopbackPort();
// conv → batchnorm → act → maxpool → conv (no bias, stride 2×1) → batchnorm (no affine) → conv 1×1 → act, with
// asymmetric padding on the first conv: two conv+bn(+act) groups and a conv+act group for the fusion tests.
// Layers whose own output survives fusion: 2, 3, 5, 7.
// A conv2d spec with stride 1: PyTorch's defaults but for the fields given.
Conv2d conv2dSpec(
    int64_t out, Pair kernel, Padding2d pad, Pair dilation = { 1, 1 }, int64_t groups = 1, bool bias = true);
// Explicit (asymmetric) paddings: top, bottom, left, right; front, back, top, bottom, left, right.
Padding2d explicitPadding(int64_t top, int64_t bottom, int64_t left, int64_t right);
Padding3d explicitPadding3d(int64_t front, int64_t back, int64_t top, int64_t bottom, int64_t left, int64_t right);
// A conv3d and a conv_transpose2d spec: PyTorch's defaults but for the fields given.
Conv3d conv3dSpec(int64_t out, Triple kernel, Triple stride = { 1, 1, 1 }, Padding3d pad = {},
    Triple dilation = { 1, 1, 1 }, int64_t groups = 1);
ConvTranspose2d convTranspose2dSpec(
    int64_t out, Pair kernel, Pair stride, Padding2d pad, Pair outputPadding, Pair dilation, int64_t groups = 1);
Network fusableNetwork(const LayerSpec& activation, int64_t batch = 2, int64_t height = 11, int64_t width = 9);

// The relative L2 error of a conv2d output against sums in double at `samples` output positions drawn from a seed
// (every image and channel is eligible): the reference for layers too large for cpu.direct in a test, such as
// 64→64 channels at 256² with a 31×31 kernel (516 GFLOP).
double sampledConv2dRelL2(const Tensor& out, const Tensor& in, const Tensor& weight, const Tensor* bias,
    const Conv2d& spec, const Padding2d& pad, int samples, uint64_t seed);

// A small network case of a sweep: "network name: what it checks" and the network.
struct NetworkCase {
    std::string name;
    Network net;
};

// A small network under construction for the sweeps: layers by name, inputs by name, seeded weights, batch-norm
// statistics random (a trained network's, not the identity). Each suite passes its own input salt and weight seed base,
// so it keeps the data its tolerances were checked on.
struct NetworkBuilder {
    Network net;
    uint64_t seedBase;
    NetworkBuilder(const std::string& name, int64_t n, int64_t c, int64_t h, int64_t w, bool flat, int64_t inputSalt,
        uint64_t seedBase);
    NetworkBuilder& add(const std::string& name, LayerSpec spec, std::vector<std::string> inputs = {});
    // A 1×1 convolution (1×1×1 on volumes: spread3) with weights in ±4: values well past the activations' bends (±3,
    // 6) on both sides.
    NetworkBuilder& spread(const std::string& name, int64_t channels, std::vector<std::string> inputs = {});
    NetworkBuilder& spread3(const std::string& name, int64_t channels);
    // A volume input [n, c, d, h, w].
    NetworkBuilder& depth(int64_t d);
    // An input of any rank (InputSpec::ofDims), the same random source.
    NetworkBuilder& dims(const std::vector<int64_t>& d);
    NetworkCase done(const std::string& what) const { return { net.name + ": " + what, net }; }
};

// The cross-backend test's filters, as ggml's test-backend-ops -o and -b: layer kinds ("conv2d,maxpool2d", or "graph"
// for the whole-network cases) and backends or backend.algorithm ("cuda", "cpu.im2col_gemm,onednn"), comma-separated;
// empty selects everything. Set by the test main's --op and --backend options (Catch2 owns -o and -b), else read from
// CONVSCOPE_TEST_OP and CONVSCOPE_TEST_BACKEND, which also reach a test that CTest runs.
void setCaseFilter(const std::string& ops, const std::string& backends);
bool opSelected(const std::string& kind);
bool backendSelected(const std::string& backend); // the backend or one of its algorithms is named
bool algorithmSelected(const std::string& backend, const std::string& algorithm);

// A fresh temporary folder removed at destruction.
struct TempDir {
    TempDir();
    ~TempDir();
    std::filesystem::path path;
};

} // namespace convscope::test
