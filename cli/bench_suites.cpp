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
            const std::string name = std::to_string(c.cin) + "→" + std::to_string(c.cout) + " @" + std::to_string(c.size)
                + "²";
            out.push_back({ name, singleConvNetwork("unet-encoder " + name, 4, c.cin, c.size, c.cout, 3, 1, 1, seed++) });
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
