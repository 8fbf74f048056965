#include "cli/bench_suites.h"

#include "compute/error.h"
#include "compute/sweep.h"

namespace convscope::cli {

namespace {

    // The U-Net encoder convolutions (batch 4, 3×3, padding 1), as in the unet-encoder sweep of the notes.
    std::vector<BenchCase> unetEncoder()
    {
        std::vector<BenchCase> out;
        uint64_t seed = 100;
        for (const auto& c : unetEncoderCases()) {
            const std::string name
                = std::to_string(c.cin) + "→" + std::to_string(c.cout) + " @" + std::to_string(c.size) + "²";
            out.push_back(
                { name, singleConvNetwork("unet-encoder " + name, 4, c.cin, c.size, c.cout, 3, 1, 1, seed++) });
        }
        return out;
    }

    // Shapes where cuDNN is known to be weak (issue 9's list): small-channel stems, 7×7 stride 2, 1×1.
    std::vector<BenchCase> weakShapes()
    {
        return {
            { "stem 3→64 @512²", singleConvNetwork("stem 3→64 @512²", 4, 3, 512, 64, 3, 1, 1, 200) },
            { "resnet conv1 7×7/2 b8", singleConvNetwork("resnet conv1 7×7/2 b8", 8, 3, 224, 64, 7, 2, 3, 201) },
            { "1×1 256→64 @56²", singleConvNetwork("1×1 256→64 @56²", 4, 256, 56, 64, 1, 1, 0, 202) },
            { "3×3 64→64 @56² b8", singleConvNetwork("3×3 64→64 @56² b8", 8, 64, 56, 64, 3, 1, 1, 203) },
        };
    }

    // The lecture's FFT cases (issue 19, seeds/004): one channel 1000×1000 with a 15×15 kernel (no padding, as the
    // lecture's loops), the same at 10000×10000 for the GPU (where the lecture's cuFFT ran out of memory; the CPU's
    // reference would take minutes: run it with --cases 0,2-5 there), and 64→64 channels at 256² with kernels 3, 7,
    // 15 and 31 (padding k/2), where the crossover between GEMM and FFT shows.
    std::vector<BenchCase> fftCases()
    {
        std::vector<BenchCase> out = {
            { "1ch 1000² k15", singleConvNetwork("fft 1ch 1000² k15", 1, 1, 1000, 1, 15, 1, 0, 300) },
            { "1ch 10000² k15 (GPU)", singleConvNetwork("fft 1ch 10000² k15", 1, 1, 10000, 1, 15, 1, 0, 301) },
        };
        uint64_t seed = 302;
        for (int64_t k : { 3, 7, 15, 31 }) {
            const std::string name = "64→64 @256² k" + std::to_string(k);
            out.push_back({ name, singleConvNetwork("fft " + name, 1, 64, 256, 64, k, 1, k / 2, seed++) });
        }
        return out;
    }

    // The lecture's autoencoder encoder (seeds/000): its three conv3d layers, 5×5×5 with TensorFlow's 'same' padding,
    // strides 2, 2 and 4, at batch 64, each on its own input (32³×1, 16³×32, 8³×16) — the layers issue 18 times
    // cudnn.auto against our best.
    std::vector<BenchCase> autoencoder3d()
    {
        struct Enc {
            const char* name;
            int64_t cin, size, cout, stride;
        };
        std::vector<BenchCase> out;
        uint64_t seed = 400;
        for (const Enc& e :
            { Enc { "enc1", 1, 32, 32, 2 }, Enc { "enc2", 32, 16, 16, 2 }, Enc { "enc3", 16, 8, 8, 4 } }) {
            const std::string name = std::string(e.name) + " " + std::to_string(e.cin) + "→" + std::to_string(e.cout)
                + " @" + std::to_string(e.size) + "³ k5/" + std::to_string(e.stride) + " b64";
            Network n;
            n.name = "autoencoder3d " + name;
            n.input = { 64, e.cin, e.size, e.size, false, "random:" + std::to_string(seed) };
            n.input.depth = e.size;
            Conv3d c;
            c.out_channels = e.cout;
            c.kernel_size = { 5, 5, 5 };
            c.stride = { e.stride, e.stride, e.stride };
            c.padding.mode = Padding3d::Mode::Same;
            Layer l;
            l.name = e.name;
            l.spec = c;
            l.init.kind = "he_uniform";
            l.init.seed = seed++;
            n.layers.push_back(l);
            out.push_back({ name, std::move(n) });
        }
        return out;
    }

    Network lenet5()
    {
        Network n;
        n.name = "LeNet-5";
        n.input = { 1, 1, 28, 28, false, "sample:digit" };
        n.layers.push_back(makeConvLayer("c1", 6, 5, 1, 2, 1));
        n.layers.push_back({ "relu1", ReLU {}, {}, {}, {}, {}, {}, {}, {}, {} });
        n.layers.push_back({ "s2", MaxPool2d {}, {}, {}, {}, {}, {}, {}, {}, {} });
        n.layers.push_back(makeConvLayer("c3", 16, 5, 1, 0, 2));
        n.layers.push_back({ "relu3", ReLU {}, {}, {}, {}, {}, {}, {}, {}, {} });
        n.layers.push_back({ "s4", MaxPool2d {}, {}, {}, {}, {}, {}, {}, {}, {} });
        n.layers.push_back({ "flatten", Flatten {}, {}, {}, {}, {}, {}, {}, {}, {} });
        uint64_t seed = 3;
        for (auto [name, features] : { std::pair { "f5", 120 }, { "f6", 84 }, { "f7", 10 } }) {
            Layer l;
            l.name = name;
            l.spec = Linear { features, true };
            l.init.kind = "he_uniform";
            l.init.seed = seed++;
            n.layers.push_back(l);
            if (features != 10)
                n.layers.push_back({ std::string("relu") + name, ReLU {}, {}, {}, {}, {}, {}, {}, {}, {} });
        }
        n.layers.push_back({ "probabilities", Softmax {}, {}, {}, {}, {}, {}, {}, {}, {} });
        return n;
    }

} // namespace

std::vector<std::string> suiteNames() { return { "unet-encoder", "lenet5", "weak-shapes", "fft", "autoencoder3d" }; }

std::vector<BenchCase> makeSuite(const std::string& name)
{
    if (name == "unet-encoder")
        return unetEncoder();
    if (name == "lenet5")
        return { { "LeNet-5", lenet5() } };
    if (name == "weak-shapes")
        return weakShapes();
    if (name == "fft")
        return fftCases();
    if (name == "autoencoder3d")
        return autoencoder3d();
    std::string known;
    for (const auto& n : suiteNames())
        known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown suite \"" + name + "\" (known: " + known + ")");
}

} // namespace convscope::cli
