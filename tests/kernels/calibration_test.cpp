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
        std::printf("CALIBRATE %s: %.0f GFLOP/s (%s), %.0f GB/s (%s)\n", name, c->peakGflops, c->computeMethod.c_str(),
            c->bandwidthGBs, c->bandwidthMethod.c_str());

        // The Tensor Core ceilings (cuBLAS GEMMs, both modules): each measured, said how, and faster than FP32.
        // The floors are far below an H100's or H200's (TF32 ~400, FP16/BF16 ~700 TFLOP/s dense) and above what
        // anything but Tensor Cores reaches, so a GEMM that silently fell back to FP32 math fails here.
        const bool hopper = c->device.find("H100") != std::string::npos || c->device.find("H200") != std::string::npos;
        struct Expected {
            const char* mode;
            const char* label;
            double hopperFloor; // GFLOP/s
        };
        for (const Expected& x : { Expected { "tf32", "TF32", 100e3 }, Expected { "fp16", "FP16", 300e3 },
                 Expected { "bf16", "BF16", 300e3 } }) {
            INFO(x.mode);
            REQUIRE(c->mathGflops.count(x.mode));
            const double g = c->mathGflops.at(x.mode);
            const std::string& how = c->mathMethods.at(x.mode);
            std::printf("CALIBRATE %s %s: %.0f GFLOP/s (%s)\n", name, x.mode, g, how.c_str());
            CHECK(how.rfind("cuBLAS " + std::string(x.label) + " GEMM 8192³,", 0) == 0);
            CHECK(g > c->peakGflops); // Tensor Cores beat FP32 FMAs in every format
            CHECK(g < 1e7);
            CHECK(c->peakFor(parseMathMode(x.mode)) == g);
            if (hopper)
                CHECK(g > x.hopperFloor);
        }
        CHECK(c->peakFor(MathMode::FP32) == c->peakGflops);
    }
}
