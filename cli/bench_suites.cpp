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

    // Shapes where cuDNN is known to be weak (issue 9's list): small-channel stems, 7×7 stride 2, 1×1; and where ours
    // were (issue 20): VGG-16's deep layers at batch 8, whose 14×14 and 28×28 maps make too few output tiles to fill
    // the device (cuda.implicit_gemm splits their reduction, split-K).
    std::vector<BenchCase> weakShapes()
    {
        return {
            { "stem 3→64 @512²", singleConvNetwork("stem 3→64 @512²", 4, 3, 512, 64, 3, 1, 1, 200) },
            { "resnet conv1 7×7/2 b8", singleConvNetwork("resnet conv1 7×7/2 b8", 8, 3, 224, 64, 7, 2, 3, 201) },
            { "1×1 256→64 @56²", singleConvNetwork("1×1 256→64 @56²", 4, 256, 56, 64, 1, 1, 0, 202) },
            { "3×3 64→64 @56² b8", singleConvNetwork("3×3 64→64 @56² b8", 8, 64, 56, 64, 3, 1, 1, 203) },
            { "vgg 256→512 @28² b8", singleConvNetwork("vgg conv4_1 256→512 @28² b8", 8, 256, 28, 512, 3, 1, 1, 204) },
            { "vgg 512→512 @28² b8", singleConvNetwork("vgg conv4_2 512→512 @28² b8", 8, 512, 28, 512, 3, 1, 1, 205) },
            { "vgg 512→512 @14² b8", singleConvNetwork("vgg conv5 512→512 @14² b8", 8, 512, 14, 512, 3, 1, 1, 206) },
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

    Layer volumeLayer(const std::string& name, LayerSpec spec, uint64_t seed)
    {
        Layer l;
        l.name = name;
        l.spec = std::move(spec);
        l.init.kind = "he_uniform";
        l.init.seed = seed;
        return l;
    }

    Conv3d encoderConv(int64_t out, int64_t stride)
    {
        Conv3d c;
        c.out_channels = out;
        c.kernel_size = { 5, 5, 5 };
        c.stride = { stride, stride, stride };
        c.padding = { Padding3d::Mode::Same };
        return c;
    }

    // TensorFlow's conv3d_transpose 'SAME' (out = in · stride): the full output cropped by the padding the forward
    // 'SAME' convolution of the output size would add, the odd plane at the back.
    ConvTranspose3d decoderConv(int64_t out, int64_t stride, int64_t before, int64_t after)
    {
        ConvTranspose3d c;
        c.out_channels = out;
        c.kernel_size = { 5, 5, 5 };
        c.stride = { stride, stride, stride };
        c.padding = { Padding3d::Mode::Explicit, before, after, before, after, before, after };
        return c;
    }

    // The autoencoder's convolutions one by one at batch 64 (issue 18: t(cudnn.auto) / t(our best) on each).
    std::vector<BenchCase> autoencoderLayers()
    {
        struct Item {
            const char* name;
            int64_t inC, size;
            LayerSpec spec;
        };
        const Item items[] = {
            { "enc1 conv3d 1→32 @32³ s2", 1, 32, encoderConv(32, 2) },
            { "enc2 conv3d 32→16 @16³ s2", 32, 16, encoderConv(16, 2) },
            { "enc3 conv3d 16→8 @8³ s4", 16, 8, encoderConv(8, 4) },
            { "dec1 conv_transpose3d 8→16 @2³ s4", 8, 2, decoderConv(16, 4, 0, 1) },
            { "dec2 conv_transpose3d 16→32 @8³ s2", 16, 8, decoderConv(32, 2, 1, 2) },
            { "dec3 conv_transpose3d 32→1 @16³ s2", 32, 16, decoderConv(1, 2, 1, 2) },
        };
        std::vector<BenchCase> out;
        uint64_t seed = 400;
        for (const Item& i : items) {
            Network n;
            n.name = std::string("autoencoder3d ") + i.name + " b64";
            n.input = { 64, i.inC, i.size, i.size, false, "random:" + std::to_string(seed), i.size };
            n.layers.push_back(volumeLayer(std::string(i.name).substr(0, 4), i.spec, seed++)); // "enc1" … "dec3"
            out.push_back({ std::string(i.name) + " b64", std::move(n) });
        }
        return out;
    }

    // Issue 30's memory-bound kinds on tensors of 256 MiB or more, judged against the copy bandwidth measured in the
    // same run (bench_bandwidth.h): a permutation to channels-last, and 2× upsampling nearest and bilinear.
    std::vector<BenchCase> tensorOps()
    {
        auto one = [](const std::string& name, InputSpec input, LayerSpec spec, uint64_t seed) {
            Network n;
            n.name = "tensor-ops " + name;
            input.source = "random:" + std::to_string(seed);
            n.input = input;
            n.layers.push_back({ "op", std::move(spec), {}, {}, {}, {}, {}, {}, {}, {} });
            return BenchCase { name, std::move(n) };
        };
        Resize nearest;
        Resize bilinear;
        bilinear.mode = Resize::Mode::Linear;
        bilinear.coordinate_transformation_mode = Resize::Coordinates::HalfPixel;
        return {
            one("transpose NCHW→NHWC 16×64×256²", InputSpec { 16, 64, 256, 256 }, Transpose { { 0, 2, 3, 1 } }, 500),
            one("resize nearest 2× 4×64×256²", InputSpec { 4, 64, 256, 256 }, nearest, 501),
            one("resize bilinear 2× 4×64×256²", InputSpec { 4, 64, 256, 256 }, bilinear, 502),
        };
    }

    // softmax on 256 MiB tensors (issue 30's bandwidth goal: ≥ 60% of the device's copy bandwidth; a softmax reads
    // its input twice and writes once, so compare 3 × 256 MiB over the time with the copy rate): the innermost axis
    // (a warp per row), a strided axis (a thread per column), log_softmax, and the channels of an image.
    std::vector<BenchCase> softmaxCases()
    {
        struct Item {
            const char* name;
            std::vector<int64_t> dims;
            LayerSpec spec;
        };
        const Item items[] = {
            { "softmax [8192, 8192] dim -1", { 8192, 8192 }, Softmax { -1 } },
            { "softmax [64, 1024, 1024] dim 1", { 64, 1024, 1024 }, Softmax { 1 } },
            { "log_softmax [8192, 8192] dim -1", { 8192, 8192 }, LogSoftmax { -1 } },
            { "softmax [16, 256, 128, 128] dim 1", { 16, 256, 128, 128 }, Softmax { 1 } },
        };
        std::vector<BenchCase> out;
        uint64_t seed = 500;
        for (const Item& i : items) {
            Network n;
            n.name = i.name;
            n.input = InputSpec::ofDims(i.dims, "random:" + std::to_string(seed++));
            Layer l;
            l.name = "softmax";
            l.spec = i.spec;
            n.layers.push_back(std::move(l));
            out.push_back({ i.name, std::move(n) });
        }
        return out;
    }

} // namespace

Network autoencoder3dNetwork(int64_t batch)
{
    Network n;
    n.name = "Autoencoder 3-D: 32³ voxels → 2×2×2×8 latent → 32³";
    n.input = { batch, 1, 32, 32, false, "sample:voxels:chair", 32 };
    const auto relu = [](const std::string& name) { return Layer { name, ReLU {}, {}, {}, {}, {}, {}, {}, {}, {} }; };
    n.layers = { volumeLayer("enc1", encoderConv(32, 2), 1), relu("enc1_relu"),
        volumeLayer("enc2", encoderConv(16, 2), 2), relu("enc2_relu"), volumeLayer("enc3", encoderConv(8, 4), 3),
        relu("latent"), volumeLayer("dec1", decoderConv(16, 4, 0, 1), 4), relu("dec1_relu"),
        volumeLayer("dec2", decoderConv(32, 2, 1, 2), 5), relu("dec2_relu"),
        volumeLayer("dec3", decoderConv(1, 2, 1, 2), 6), Layer { "output", Tanh {}, {}, {}, {}, {}, {}, {}, {}, {} } };
    return n;
}

std::vector<std::string> suiteNames()
{
    return { "unet-encoder", "lenet5", "weak-shapes", "fft", "autoencoder3d", "lecture-interpolation", "tensor-ops",
        "norms", "softmax" };
}

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
        return autoencoderLayers();
    if (name == "tensor-ops") {
        std::vector<BenchCase> cases = tensorOps();
        for (BenchCase& c : normCases())
            cases.push_back(std::move(c));
        for (BenchCase& c : softmaxCases())
            cases.push_back(std::move(c));
        return cases;
    }
    if (name == "softmax")
        return softmaxCases();
    if (name == "lecture-interpolation")
        return { { "lecture-interpolation", autoencoder3dNetwork(1) } }; // run by runLectureTable, not as layers
    if (name == "norms")
        return normCases();
    std::string known;
    for (const auto& n : suiteNames())
        known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown suite \"" + name + "\" (known: " + known + ")");
}

} // namespace convscope::cli
