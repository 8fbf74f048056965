// A network: an input description plus an ordered list of layers. This is the document a user edits
// (the GUI keeps copies of it on the undo stack, so it is a cheap-to-copy value: materialised
// parameters are shared, immutable tensors).
#pragma once

#include "compute/layer_spec.h"
#include "compute/tensor.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace convscope {

// Where the network input comes from:
//   "sample:digit", "sample:edges"   built-in pictures (makeSampleInput, compute/image_input.h)
//   "random" or "random:SEED"         seeded uniform [0, 1) data
//   "path/to/image.png|.jpg|..."      an image, resized to height x width (relative to the network file)
//   "path/to/data.npy"                [N,C,H,W], [C,H,W] or [N,F], or a general tensor's dims; its shape must match
//                                     the input fields
struct InputSpec {
    int64_t batch = 1, channels = 1, height = 28, width = 28;
    bool flat = false; // the network starts fully connected: [batch, channels] ("features" in the file)
    std::string source = "sample:digit";
    int64_t depth = 0; // > 0: the input is a volume [batch, channels, depth, height, width] ("depth" in the file)
    // Non-empty: a general tensor of rank 1, 3 or 6 ("shape" in the file; ranks 2, 4 and 5 are read into the fields
    // above). dims[0] is the batch; `batch` wins when they differ (--batch sets it).
    std::vector<int64_t> dims {};
    Shape shape() const
    {
        if (!dims.empty()) {
            std::vector<int64_t> d = dims;
            d[0] = batch;
            return Shape::of(d);
        }
        if (flat)
            return Shape::features(batch, channels);
        return depth > 0 ? Shape::ncdhw(batch, channels, depth, height, width)
                         : Shape::nchw(batch, channels, height, width);
    }
    // The input of these dims (rank 1 to 6): rank 2 is flat, 4 an image, 5 a volume, any other a general tensor.
    // Does not check the sizes (shape inference does).
    static InputSpec ofDims(const std::vector<int64_t>& dims, const std::string& source);
    bool operator==(const InputSpec&) const = default;
};

// How a layer's weights are made. Kinds:
//   "default"         PyTorch's own default initialisation (kaiming_uniform with a = sqrt(5), bias
//                     uniform(±1/sqrt(fan_in))); batch norm: weight 1, bias 0, mean 0, var 1
//   "uniform"         uniform(low, high), defaults (-1, 1)
//   "he_uniform"      kaiming_uniform for ReLU: bound sqrt(6 / fan_in); bias zero
//   "xavier_uniform"  bound sqrt(6 / (fan_in + fan_out)); bias zero
//   "constant"        every weight = value; bias zero
//   "sobel_x", "sobel_y", "laplacian", "gaussian_blur", "sharpen", "identity", "box_blur"
//                     a classic 3x3 filter (kernel must be 3x3) placed on every (out, in) pair of the group
//                     and divided by the input channels per group so it averages colour channels; bias zero
//   "random"          batch norm only: seeded plausible statistics (weight, bias, mean, var)
//   "file"            weight / bias from .npy files (paths relative to the network file)
// All seeded rules use ConvScope's own generator (compute/random.h), so they give the same numbers on
// every platform.
struct InitSpec {
    std::string kind = "default"; // also "embedded": the tensors in Layer::embedded (an imported ONNX model)
    uint64_t seed = 1;
    std::optional<double> low, high; // "uniform"
    std::optional<double> value; // "constant"
    std::string weight_file, bias_file; // "file"
    bool operator==(const InitSpec&) const = default;
};

// An explicit parameter in the file (batch norm's running_mean, running_var, weight, bias):
// a number (broadcast), a list of numbers, or a .npy path.
struct ParamValue {
    enum class Kind { Scalar, List, File };
    Kind kind = Kind::Scalar;
    double scalar = 0;
    std::vector<double> list;
    std::string file;
    bool operator==(const ParamValue&) const = default;
};

// The name a layer's "inputs" use for the network's input.
inline constexpr const char* kNetworkInputName = "input";

struct Layer {
    std::string name;
    LayerSpec spec;
    // The names of the layers this one reads, in order: earlier layers' names, or "input" for the network's input.
    // Empty: the layer above (the network's input for the first layer). A network stays a list in topological order;
    // these names are what makes it a graph (residual adds, U-Net concatenations, gating).
    std::vector<std::string> inputs;
    InitSpec init;
    std::map<std::string, ParamValue> explicitParams; // batchnorm2d: running_mean, running_var, weight, bias

    // Materialised parameters (materializeParameters fills them; empty until then).
    // conv2d weight [C_out, C_in/g, kh, kw]; conv_transpose2d weight [C_in, C_out/g, kh, kw];
    // linear weight [out, in] stored as {out, in, 1, 1}; 1-D tensors [C] stored as {C, 1, 1, 1}.
    std::shared_ptr<const Tensor> weight, bias, runningMean, runningVar;

    // The parameters an imported model carries (init kind "embedded"): materializeParameters checks their shapes
    // against the layer's and shares them. Immutable and shared, so copies of the network (undo) stay cheap.
    struct Embedded {
        std::shared_ptr<const Tensor> weight, bias, runningMean, runningVar;
    };
    std::shared_ptr<const Embedded> embedded;

    // The description equality used by undo/redo and round-trip tests (materialised tensors excluded).
    bool sameDescription(const Layer& o) const
    {
        return name == o.name && spec == o.spec && inputs == o.inputs && init == o.init
            && explicitParams == o.explicitParams;
    }
};

struct Network {
    std::string name = "untitled";
    // What the network is and where its weights come from, for a person: for trained weights the data, the
    // command that made them, its seed and the test accuracy ("description" in the file; may be empty).
    std::string description;
    // The class names of a classifier's outputs, in output order ("labels" in the file; may be empty).
    std::vector<std::string> labels;
    InputSpec input;
    std::vector<Layer> layers;
    std::filesystem::path baseDir; // relative file paths (weights, input) resolve against this

    bool sameDescription(const Network& o) const;
};

// A file named in a network (weights, input): an absolute path as it is, a relative one against `baseDir` (the
// network file's folder), or against the working folder when there is none.
inline std::filesystem::path resolveAgainst(const std::string& file, const std::filesystem::path& baseDir)
{
    std::filesystem::path p(file);
    return p.is_absolute() || baseDir.empty() ? p : baseDir / p;
}

struct ShapeReport;

// The layers each layer reads, as indices (-1: the network's input), from Layer::inputs. Throws InputError naming
// the layer and the name for a name that does not exist, one of a later layer (used before its layer), or the
// layer's own name.
std::vector<std::vector<int>> resolveInputs(const Network& net);
// The same for one layer.
std::vector<int> resolveLayerInputs(const Network& net, size_t layer);
// Does layer i read anything but the layer above (or the input, for the first layer)?
bool hasSkipInputs(const Network& net);

// A conv2d layer (k×k, stride, symmetric padding, bias) with seeded he_uniform weights.
Layer makeConvLayer(
    const std::string& name, int64_t outChannels, int64_t kernel, int64_t stride, int64_t padding, uint64_t seed);
// A network of one such layer on a seeded random [batch, inChannels, size, size] input: the benchmark suites and
// the sweep presets are made of these.
Network singleConvNetwork(const std::string& name, int64_t batch, int64_t inChannels, int64_t size, int64_t outChannels,
    int64_t kernel, int64_t stride, int64_t padding, uint64_t seed);

// A unique default layer name for a new layer of a kind: "conv1", "relu2", ...
std::string defaultLayerName(const Network& net, const LayerSpec& spec);

} // namespace convscope
