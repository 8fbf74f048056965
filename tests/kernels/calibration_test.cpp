// Backend::calibrate on the GPU modules: the roofline's ceilings come from real measurements on the device and
// say how they were taken. Bounds are loose (any GPU from the last decade fits), never a hard-coded H200 figure.
#include "tests/kernels/gpu_test_support.h"

#include <catch2/catch.hpp>

using namespace convscope;

TEST_CASE("the GPU modules measure their roofline ceilings", "[gpu][calibrate]")
{
    for (const char* name : { "cuda", "cudnn" }) {
        auto backend = test::backendOrSkip(name);
        if (!backend)
            continue;
        const auto c = backend->calibrate(SessionOptions {});
        INFO(name);
        REQUIRE(c);
        CHECK_FALSE(c->device.empty());
        CHECK(c->peakGflops > 1000); // > 1 TFLOP/s FP32
        CHECK(c->peakGflops < 1e6);
        CHECK(c->bandwidthGBs > 100);
        CHECK(c->bandwidthGBs < 1e5);
        CHECK(c->computeMethod.find(std::string(name) == "cudnn" ? "SGEMM" : "FMA") != std::string::npos);
        CHECK(c->bandwidthMethod.find("copy") != std::string::npos);
        std::printf("CALIBRATE %s: %.0f GFLOP/s (%s), %.0f GB/s (%s)\n", name, c->peakGflops,
            c->computeMethod.c_str(), c->bandwidthGBs, c->bandwidthMethod.c_str());
    }
}
