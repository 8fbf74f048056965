// GPU faults, each driven on purpose through the fault-injection switch (kernels/common/fault_injection.h,
// SessionOptions extra "fault_inject"): out of memory, an unsupported configuration, a failed launch and a
// poisoned context are each reported for the selection that hit them, while the other selections finish with
// correct results and the process stays up. Without a usable GPU every case prints "SKIPPED: <reason>".
//
// The poison case leaves the CUDA context unusable for the rest of the process, so it is the last case of the
// last file (CTest runs every case in its own process anyway), and tools/gpu-check.sh leaves [fault] out of
// the compute-sanitizer runs (memcheck would rightly report the injected illegal address).
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

using namespace convscope;

namespace {

Network faultNet()
{
    Conv2d c;
    c.out_channels = 8;
    c.kernel_size = { 3, 3 };
    c.padding = { Padding2d::Mode::Explicit, 1, 1, 1, 1 };
    Network net = test::oneLayer(Shape::nchw(2, 3, 16, 16), c);
    net.layers.push_back(Layer { "relu", ReLU {}, {}, {}, {}, nullptr, nullptr, nullptr, nullptr });
    return net;
}

// Runs cpu.direct, cuda.direct and cuda.tiled with `fault` injected into cuda.tiled only.
RunResult runWithFault(const std::string& fault)
{
    Network net = faultNet();
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    test::randomParameters(net, shapes, 11);
    const Tensor input = test::randomTensor(shapes.input, 12);
    ProfileOptions opt;
    opt.selections = { { "cpu", "direct" }, { "cuda", "tiled" }, { "cuda", "direct" } };
    opt.warmup = 1;
    opt.repeat = 2;
    opt.session.extra["fault_inject"] = fault + "@cuda.tiled";
    return profile(std::move(net), input, opt);
}

void requireOthersFinished(const RunResult& r, bool gpuToo)
{
    const SelectionResult* cpu = r.find({ "cpu", "direct" });
    REQUIRE(cpu);
    CHECK(cpu->ok);
    if (gpuToo) {
        const SelectionResult* direct = r.find({ "cuda", "direct" });
        REQUIRE(direct);
        INFO(direct->failure);
        REQUIRE(direct->ok);
        for (const auto& l : direct->layers) {
            REQUIRE(l.error.valid);
            CHECK(l.error.relL2 <= 1e-5);
        }
    }
}

} // namespace

TEST_CASE("fault injection: out of device memory is reported for its selection only", "[gpu][fault]")
{
    if (!test::backendOrSkip("cuda"))
        return;
    const RunResult r = runWithFault("oom");
    const SelectionResult* tiled = r.find({ "cuda", "tiled" });
    REQUIRE(tiled);
    CHECK_FALSE(tiled->ok);
    CHECK_FALSE(tiled->unsupported);
    CHECK_THAT(tiled->failure, Catch::Contains("out of device memory") && Catch::Contains("cuda.tiled"));
    requireOthersFinished(r, true);
    CHECK(BackendRegistry::instance().find("cuda")->availability().available);
}

TEST_CASE("fault injection: an unsupported configuration is reported as unsupported", "[gpu][fault]")
{
    if (!test::backendOrSkip("cuda"))
        return;
    const RunResult r = runWithFault("unsupported");
    const SelectionResult* tiled = r.find({ "cuda", "tiled" });
    REQUIRE(tiled);
    CHECK_FALSE(tiled->ok);
    CHECK(tiled->unsupported);
    CHECK_THAT(tiled->failure, Catch::Contains("unsupported"));
    requireOthersFinished(r, true);
}

TEST_CASE("fault injection: a failed launch fails its selection and leaves the device usable", "[gpu][fault]")
{
    if (!test::backendOrSkip("cuda"))
        return;
    const RunResult r = runWithFault("launch");
    const SelectionResult* tiled = r.find({ "cuda", "tiled" });
    REQUIRE(tiled);
    CHECK_FALSE(tiled->ok);
    // CUDA 13 on the H200 answers an oversized block with cudaErrorInvalidValue; older runtimes with
    // cudaErrorInvalidConfiguration. Either is a refused launch, not a device fault.
    CHECK_THAT(tiled->failure,
        Catch::Contains("launch")
            && (Catch::Contains("cudaErrorInvalidConfiguration") || Catch::Contains("cudaErrorInvalidValue")));
    requireOthersFinished(r, true);
    // Not sticky: the backend is still available and a clean run afterwards succeeds.
    CHECK(BackendRegistry::instance().find("cuda")->availability().available);
    Network net = faultNet();
    const ShapeReport shapes = inferShapes(net);
    test::randomParameters(net, shapes, 3);
    ProfileOptions opt;
    opt.selections = { { "cuda", "tiled" } };
    opt.warmup = 0;
    opt.repeat = 1;
    const RunResult again = profile(net, test::randomTensor(shapes.input, 4), opt);
    CHECK(again.selections[0].ok);
}

TEST_CASE("fault injection: an unknown kind is refused with the kinds it takes", "[gpu][fault]")
{
    if (!test::backendOrSkip("cuda"))
        return;
    const RunResult r = runWithFault("meltdown");
    const SelectionResult* tiled = r.find({ "cuda", "tiled" });
    REQUIRE(tiled);
    CHECK_FALSE(tiled->ok);
    CHECK_THAT(tiled->failure, Catch::Contains("unknown kind") && Catch::Contains("poison"));
}

// Last: the context stays unusable for the rest of this process.
TEST_CASE("fault injection: a poisoned context fails the GPU selections, the CPU finishes, the program stays up",
    "[gpu][fault][poison]")
{
    if (!test::backendOrSkip("cuda"))
        return;
    const RunResult r = runWithFault("poison");
    const SelectionResult* tiled = r.find({ "cuda", "tiled" });
    REQUIRE(tiled);
    CHECK_FALSE(tiled->ok);
    CHECK_THAT(tiled->failure, Catch::Contains("cudaErrorIllegalAddress") && Catch::Contains("unusable"));
    // cuda.direct shares the context: it must fail with the reason, not crash or hang.
    const SelectionResult* direct = r.find({ "cuda", "direct" });
    REQUIRE(direct);
    CHECK_FALSE(direct->ok);
    CHECK_THAT(direct->failure, Catch::Contains("unusable"));
    requireOthersFinished(r, false);
    // The backend now says why it is unavailable; the CPU keeps working in the same process.
    const Availability a = BackendRegistry::instance().find("cuda")->availability();
    CHECK_FALSE(a.available);
    CHECK_THAT(a.reason, Catch::Contains("restart ConvScope"));
    Network net = faultNet();
    ProfileOptions opt;
    opt.selections = { { "cpu", "im2col_gemm" }, { "cuda", "direct" } };
    opt.warmup = 0;
    opt.repeat = 1;
    const RunResult after = profile(net, test::randomTensor(net.input.shape(), 5), opt);
    CHECK(after.selections[0].ok);
    CHECK_FALSE(after.selections[1].ok);
    CHECK(after.selections[1].unsupported);
}
