#include "cli/bench_suites.h"

#include "compute/error.h"

namespace convscope::cli {

namespace {

    Layer convLayer(const std::string& name, int64_t out, int64_t k, int64_t stride, int64_t pad, uint64_t seed)
    {
        Conv2d c;
        c.out_channels = out;
        c.kernel_size = { k, k };
        c.stride = { stride, stride };
        c.padding = Padding2d::symmetric(pad, pad);
        Layer l;
        l.name = name;
        l.spec = c;
        l.init.kind = "he_uniform";
        l.init.seed = seed;
        return l;
    }

    Network singleConv(const std::string& name, int64_t batch, int64_t cin, int64_t size, int64_t cout, int64_t k,
        int64_t stride, int64_t pad, uint64_t seed)
    {
        Network n;
        n.name = name;
        n.input = { batch, cin, size, size, false, "random:" + std::to_string(seed) };
        n.layers.push_back(convLayer("conv", cout, k, stride, pad, seed));
        return n;
    }

    // The U-Net encoder convolutions (batch 4, 3×3, padding 1), as in the unet-encoder sweep of the notes.
    std::vector<BenchCase> unetEncoder()
    {
        struct S {
            int64_t cin, cout, size;
        };
        const S cases[] = { { 3, 64, 512 }, { 64, 64, 512 }, { 64, 128, 256 }, { 128, 128, 256 }, { 128, 256, 128 },
            { 256, 256, 128 }, { 256, 512, 64 }, { 512, 512, 64 }, { 512, 1024, 32 }, { 1024, 1024, 32 } };
        std::vector<BenchCase> out;
        uint64_t seed = 100;
        for (const auto& c : cases) {
            const std::string name = std::to_string(c.cin) + "→" + std::to_string(c.cout) + " @" + std::to_string(c.size)
                + "²";
            out.push_back({ name, singleConv("unet-encoder " + name, 4, c.cin, c.size, c.cout, 3, 1, 1, seed++) });
        }
        return out;
    }

    // Shapes where cuDNN is known to be weak (issue 9's list): small-channel stems, 7×7 stride 2, 1×1.
    std::vector<BenchCase> weakShapes()
    {
        return {
            { "stem 3→64 @512²", singleConv("stem 3→64 @512²", 4, 3, 512, 64, 3, 1, 1, 200) },
            { "resnet conv1 7×7/2 b8", singleConv("resnet conv1 7×7/2 b8", 8, 3, 224, 64, 7, 2, 3, 201) },
            { "1×1 256→64 @56²", singleConv("1×1 256→64 @56²", 4, 256, 56, 64, 1, 1, 0, 202) },
            { "3×3 64→64 @56² b8", singleConv("3×3 64→64 @56² b8", 8, 64, 56, 64, 3, 1, 1, 203) },
        };
    }

    Network lenet5()
    {
        Network n;
        n.name = "LeNet-5";
        n.input = { 1, 1, 28, 28, false, "sample:digit" };
        n.layers.push_back(convLayer("c1", 6, 5, 1, 2, 1));
        n.layers.push_back({ "relu1", ReLU {}, {}, {}, {}, {}, {}, {} });
        n.layers.push_back({ "s2", MaxPool2d {}, {}, {}, {}, {}, {}, {} });
        n.layers.push_back(convLayer("c3", 16, 5, 1, 0, 2));
        n.layers.push_back({ "relu3", ReLU {}, {}, {}, {}, {}, {}, {} });
        n.layers.push_back({ "s4", MaxPool2d {}, {}, {}, {}, {}, {}, {} });
        n.layers.push_back({ "flatten", Flatten {}, {}, {}, {}, {}, {}, {} });
        uint64_t seed = 3;
        for (auto [name, features] : { std::pair { "f5", 120 }, { "f6", 84 }, { "f7", 10 } }) {
            Layer l;
            l.name = name;
            l.spec = Linear { features, true };
            l.init.kind = "he_uniform";
            l.init.seed = seed++;
            n.layers.push_back(l);
            if (features != 10)
                n.layers.push_back({ std::string("relu") + name, ReLU {}, {}, {}, {}, {}, {}, {} });
        }
        n.layers.push_back({ "probabilities", Softmax {}, {}, {}, {}, {}, {}, {} });
        return n;
    }

} // namespace

std::vector<std::string> suiteNames() { return { "unet-encoder", "lenet5", "weak-shapes" }; }

std::vector<BenchCase> makeSuite(const std::string& name)
{
    if (name == "unet-encoder")
        return unetEncoder();
    if (name == "lenet5")
        return { { "LeNet-5", lenet5() } };
    if (name == "weak-shapes")
        return weakShapes();
    std::string known;
    for (const auto& n : suiteNames())
        known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown suite \"" + name + "\" (known: " + known + ")");
}

} // namespace convscope::cli
