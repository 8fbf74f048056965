// One value type per layer kind, held in a std::variant. Field names follow PyTorch's constructor
// arguments (kernel_size, stride, padding, dilation, groups, ceil_mode, count_include_pad,
// output_padding, negative_slope, alpha, eps, out_channels, out_features) so a lecture's PyTorch line
// reads the same here. in_channels / in_features / num_features are never stored: shape inference takes
// them from the layer above, so a user cannot make them inconsistent.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "compute/layer_spec_tensor.h" // matmul, gather (issue 30)

namespace convscope {

// Padding of a 2-D window op. Explicit padding is [top, bottom, left, right]; "same" and "valid" follow
// TensorFlow's rules ("same" puts the odd extra pixel at the bottom / right), resolved by shape inference
// into explicit amounts once the input size is known.
struct Padding2d {
    enum class Mode { Explicit, Same, Valid };
    Mode mode = Mode::Explicit;
    int64_t top = 0, bottom = 0, left = 0, right = 0;

    static Padding2d symmetric(int64_t ph, int64_t pw) { return { Mode::Explicit, ph, ph, pw, pw }; }
    bool isSymmetric() const { return mode == Mode::Explicit && top == bottom && left == right; }
    bool operator==(const Padding2d&) const = default;
};

using Pair = std::array<int64_t, 2>; // {height, width}

// An activation the fusion pass (compute/fusion.h) moved into a convolution's epilogue: the backend applies it to
// each output as it stores it. Never read from or written to a network file; None everywhere else.
struct FusedActivation {
    enum class Kind { None, ReLU, LeakyReLU, Sigmoid, Tanh, ELU };
    Kind kind = Kind::None;
    double param = 0; // negative_slope (leaky_relu) or alpha (elu)
    explicit operator bool() const { return kind != Kind::None; }
    bool operator==(const FusedActivation&) const = default;
};

struct Conv2d {
    int64_t out_channels = 1;
    Pair kernel_size { 3, 3 };
    Pair stride { 1, 1 };
    Padding2d padding;
    Pair dilation { 1, 1 };
    int64_t groups = 1;
    bool bias = true;
    FusedActivation fused_activation; // set only by the fusion pass
    // Set only by the fusion pass (compute/fusion.h): the layer reads a second input, the skip tensor of the output's
    // shape, and its epilogue computes act(conv(x) + bias + skip). Never in a network file (the writer refuses it).
    bool fused_residual = false;
    bool operator==(const Conv2d&) const = default;
};

// Weight layout [C_in, C_out / groups, kh, kw] as in PyTorch. padding crops the full transposed output
// (top, bottom, left, right); output_padding adds rows/columns at the bottom/right.
struct ConvTranspose2d {
    int64_t out_channels = 1;
    Pair kernel_size { 3, 3 };
    Pair stride { 1, 1 };
    Padding2d padding;
    Pair output_padding { 0, 0 };
    Pair dilation { 1, 1 };
    int64_t groups = 1;
    bool bias = true;
    bool operator==(const ConvTranspose2d&) const = default;
};

struct MaxPool2d {
    Pair kernel_size { 2, 2 };
    std::optional<Pair> stride; // PyTorch: defaults to kernel_size
    Padding2d padding;
    Pair dilation { 1, 1 };
    bool ceil_mode = false;
    Pair effectiveStride() const { return stride ? *stride : kernel_size; }
    bool operator==(const MaxPool2d&) const = default;
};

struct AvgPool2d {
    Pair kernel_size { 2, 2 };
    std::optional<Pair> stride;
    Padding2d padding;
    bool ceil_mode = false;
    bool count_include_pad = true;
    std::optional<int64_t> divisor_override;
    Pair effectiveStride() const { return stride ? *stride : kernel_size; }
    bool operator==(const AvgPool2d&) const = default;
};

struct GlobalAvgPool2d {
    bool operator==(const GlobalAvgPool2d&) const = default;
};

struct BatchNorm2d {
    double eps = 1e-5;
    bool affine = true;
    bool operator==(const BatchNorm2d&) const = default;
};

struct ReLU {
    bool operator==(const ReLU&) const = default;
};
struct LeakyReLU {
    double negative_slope = 0.01;
    bool operator==(const LeakyReLU&) const = default;
};
struct Sigmoid {
    bool operator==(const Sigmoid&) const = default;
};
struct Tanh {
    bool operator==(const Tanh&) const = default;
};
struct ELU {
    double alpha = 1.0;
    bool operator==(const ELU&) const = default;
};

// torch.nn.Flatten(start_dim, end_dim): the dims start_dim..end_dim (negative: counted from the end) become one. The
// defaults (1, -1) make [N, C, H, W] -> [N, C*H*W]. A view of its input.
struct Flatten {
    int64_t start_dim = 1;
    int64_t end_dim = -1;
    bool operator==(const Flatten&) const = default;
};

// torch.nn.Linear on the last axis of any rank: [*, in_features] -> [*, out_features] (weight [out, in]). One input
// shape keeps its older meaning: an image [N, C, 1, 1] or a volume [N, C, 1, 1, 1] (global pooling's output) is read as
// [N, C] and gives [N, out_features], the flatten every network before ranks relied on (compute/linear_geometry.h).
// in_features is inferred.
struct Linear {
    int64_t out_features = 10;
    bool bias = true;
    bool operator==(const Linear&) const = default;
};

// torch.nn.Softmax(dim): e^(x − m) / Σ e^(x − m) along `dim` (m the maximum along it; negative dims count from the
// end), at any rank. A file without "dim" is dim 1: the features of a flat input, the channels at each pixel.
struct Softmax {
    int64_t dim = 1;
    bool operator==(const Softmax&) const = default;
};
// torch.nn.LogSoftmax(dim): x − m − log Σ e^(x − m) along `dim` (compute/layer_spec_reduce.h has both kinds' helpers).
struct LogSoftmax {
    int64_t dim = 1;
    bool operator==(const LogSoftmax&) const = default;
};
// softmax and log_softmax: one code path in each backend, `log` told apart by isLogSoftmax<T>.
template <typename T> inline constexpr bool isSoftmaxKind = std::is_same_v<T, Softmax> || std::is_same_v<T, LogSoftmax>;
template <typename T> inline constexpr bool isLogSoftmax = std::is_same_v<T, LogSoftmax>;

// torch.nn.ReLU6: min(max(x, 0), 6) (MobileNetV2).
struct ReLU6 {
    bool operator==(const ReLU6&) const = default;
};
// torch.nn.Hardswish: x · relu6(x + 3) / 6 (MobileNetV3).
struct Hardswish {
    bool operator==(const Hardswish&) const = default;
};
// torch.nn.Hardsigmoid: relu6(x + 3) / 6.
struct Hardsigmoid {
    bool operator==(const Hardsigmoid&) const = default;
};
// torch.nn.SiLU: x · sigmoid(x) (also called swish).
struct SiLU {
    bool operator==(const SiLU&) const = default;
};
// torch.nn.Hardtanh: min(max(x, min_val), max_val), NaN stays NaN (ONNX's Clip with any bounds). min_val must be
// below max_val.
struct Hardtanh {
    double min_val = -1.0;
    double max_val = 1.0;
    bool operator==(const Hardtanh&) const = default;
};
// torch.nn.PReLU: x > 0 ? x : a[c] · x with a learnable slope, one for every channel (num_parameters = C, the
// channel being dim 1 of an image, a volume or a flat [N, F] input) or one shared by all (num_parameters = 1).
// The slopes are the layer's weight [num_parameters]; init kind "default" sets PyTorch's 0.25.
struct PReLU {
    int64_t num_parameters = 1;
    bool operator==(const PReLU&) const = default;
};
// ---- Tensor maths (issue 30): element-wise functions of one input, any rank, every element on its own.
// torch.nn.GELU(approximate): x·Φ(x) = x/2 · (1 + erf(x/√2)) ("none"), or x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))
// ("tanh"). ONNX Gelu (opset 20) and the Erf pattern PyTorch exports are read as it.
struct GELU {
    bool tanh_approximation = false; // the file's "approximate": "none" (false) or "tanh" (true)
    bool operator==(const GELU&) const = default;
};
// torch.nn.Softplus(beta, threshold): log(1 + e^(β·x)) / β, and x itself where β·x > threshold.
struct Softplus {
    double beta = 1.0;
    double threshold = 20.0;
    bool operator==(const Softplus&) const = default;
};
// torch.nn.Mish: x · tanh(log(1 + e^x)).
struct Mish {
    bool operator==(const Mish&) const = default;
};
// ONNX's element-wise operators of one input (torch.exp, log, sqrt, reciprocal, neg, abs, erf): IEEE results outside
// the domain (log of a negative number is NaN, of 0 is −inf; reciprocal of 0 is inf), as both define them.
struct Unary {
    enum class Op { Exp, Log, Sqrt, Reciprocal, Neg, Abs, Erf };
    Op op = Op::Exp;
    bool operator==(const Unary&) const = default;
};
const char* unaryOpName(Unary::Op op); // "exp", "log", "sqrt", "reciprocal", "neg", "abs", "erf"
// Element-wise x op y with NumPy's broadcasting (torch.add, sub, mul, div, pow, minimum, maximum; ONNX's Add, Sub,
// Mul, Div, Pow, Min, Max): two inputs of broadcastable shapes, or one input and the layer's constant — `constant`'s
// values (in the file a list of numbers or an .npy file, `constant_file`) of dims `constant_shape` ([1] when not
// given), on the left (constant_first: c op x) or the right (x op c). Min and max propagate NaN, as torch's do.
struct Binary {
    enum class Op { Add, Sub, Mul, Div, Pow, Min, Max };
    Op op = Op::Add;
    std::vector<float> constant; // empty: two inputs
    std::vector<int64_t> constant_shape;
    bool constant_first = false;
    std::string constant_file; // where the file read `constant` from (written back as that path); empty: inline
    bool operator==(const Binary&) const = default;
};

// torch.nn.Identity: kept so that an imported network keeps its layer names.
struct Identity {
    bool operator==(const Identity&) const = default;
};
// torch.nn.Dropout: nothing at inference (ConvScope only runs inference); p is kept for the file.
struct Dropout {
    double p = 0.5;
    bool operator==(const Dropout&) const = default;
};

// Element-wise sum of two or more inputs of one shape (a residual connection: torch's `x + y`).
struct Add {
    bool operator==(const Add&) const = default;
};
// Element-wise product of two inputs; one of them may be [N, C, 1, 1] and is broadcast over H and W
// (squeeze-and-excitation's gating: torch's `x * s`).
struct Mul {
    bool operator==(const Mul&) const = default;
};
// torch.cat(inputs, dim): the inputs joined along `dim` (1, the default, is the channels; negative counts from the
// end), in the order the inputs are named; every other dim must agree. One input is a copy (ONNX's Concat of one).
struct Concat {
    int64_t dim = 1;
    bool operator==(const Concat&) const = default;
};

// torch.nn.functional.pad on H and W, padding [top, bottom, left, right] (the file's order, as everywhere in
// ConvScope; PyTorch's own tuple is (left, right, top, bottom)). "reflect" mirrors without repeating the edge
// (ReflectionPad2d), "replicate" repeats the edge (ReplicationPad2d), "constant" fills with `value`.
struct Pad {
    enum class Mode { Constant, Reflect, Replicate };
    std::array<int64_t, 4> padding { 0, 0, 0, 0 };
    Mode mode = Mode::Constant;
    double value = 0;
    bool operator==(const Pad&) const = default;
};
const char* padModeName(Pad::Mode mode); // "constant", "reflect", "replicate"

// torch.nn.functional.interpolate / ONNX Resize over the spatial axes of an image (H, W) or a volume (D, H, W); N and
// C are kept. The output size is `size` when given, else ⌊in · scale_factor⌋ per axis; a list of one value applies to
// every spatial axis. The source coordinate of output index x is computed with the scale in `scale_factor` when given
// (PyTorch with recompute_scale_factor=False, ONNX with scales), else out / in — when both are given (an ONNX model
// with keep_aspect_ratio_policy) the size is the output's and the scale the coordinates'. Then ONNX's rules:
// coordinate_transformation_mode maps x to the input (half_pixel: (x + 0.5) / s − 0.5; pytorch_half_pixel: the same,
// −0.5 when out = 1; align_corners: x · (in − 1) / (out − 1); asymmetric: x / s; half_pixel_symmetric; and
// tf_half_pixel_for_nn: (x + 0.5) / s), and the mode reads the input there: nearest (nearest_mode rounds the
// coordinate), linear (bilinear, trilinear) or cubic (Keys' kernel with cubic_coeff_a; exclude_outside drops the taps
// outside the input and renormalises), indices clamped to the edge. PyTorch's modes are these: "nearest" = asymmetric
// + floor (the default), "nearest-exact" = half_pixel + round_prefer_ceil, "bilinear"/"trilinear" = half_pixel
// (pytorch_half_pixel) or align_corners, "bicubic" = the same with cubic_coeff_a −0.75.
struct Resize {
    enum class Mode { Nearest, Linear, Cubic };
    enum class Coordinates {
        HalfPixel,
        PytorchHalfPixel,
        AlignCorners,
        Asymmetric,
        HalfPixelSymmetric,
        TfHalfPixelForNn
    };
    enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };
    std::vector<int64_t> size; // {H, W} or {D, H, W}, or one value for all; empty: from scale_factor
    std::vector<double> scale_factor { 2.0 }; // the same; empty: from size
    Mode mode = Mode::Nearest;
    Coordinates coordinate_transformation_mode = Coordinates::Asymmetric;
    NearestMode nearest_mode = NearestMode::Floor;
    double cubic_coeff_a = -0.75;
    bool exclude_outside = false;
    bool operator==(const Resize&) const = default;
};
const char* resizeModeName(Resize::Mode mode); // "nearest", "linear", "cubic"
const char* resizeCoordinatesName(Resize::Coordinates c); // ONNX's: "half_pixel", "align_corners", ...
const char* resizeNearestModeName(Resize::NearestMode m); // ONNX's: "round_prefer_floor", "floor", ...
// torch.nn.ChannelShuffle(groups) (ShuffleNet): [N, C, *] viewed as [N, g, C/g, *], the two group axes swapped and
// viewed back, so output channel j·g + i is input channel i·(C/g) + j. Images and volumes.
struct ChannelShuffle {
    int64_t groups = 2;
    bool operator==(const ChannelShuffle&) const = default;
};

// x.narrow(dim, start, end − start), PyTorch's x[:, start:end] along `dim` (0 batch, 1 channels, then the spatial
// axes: 2, 3 for H, W of an image, 2, 3, 4 for D, H, W of a volume; 1 the features of a flat input). Step 1; the file
// takes 0 ≤ start < end ≤ the axis's size (ONNX Slice's negative and clamped bounds are resolved at import).
struct Slice {
    int64_t dim = 1;
    int64_t start = 0;
    int64_t end = 1;
    bool operator==(const Slice&) const = default;
};

// x.reshape(shape) / x.view(shape) of a contiguous tensor: the same elements in the same order under new dims of the
// same count; one entry may be -1, inferred from the others (ONNX Reshape's 0, Squeeze and Unsqueeze are resolved to
// these dims at import). A view of its input.
struct Reshape {
    std::vector<int64_t> shape { -1 };
    bool operator==(const Reshape&) const = default;
};

// x.permute(dims): output axis i is input axis dims[i] (negative: counted from the end); ONNX Transpose's perm.
struct Transpose {
    std::vector<int64_t> dims { 0, 1 };
    bool operator==(const Transpose&) const = default;
};

// ---- Volumes (NCDHW): the 3-D siblings of the window ops. Triples are {depth, height, width}, as PyTorch's
// kernel_size=(kd, kh, kw).
using Triple = std::array<int64_t, 3>;

// Padding of a 3-D window op. Explicit padding is [front, back, top, bottom, left, right] (before and after along D,
// then H, then W); "same" and "valid" follow TensorFlow's rules (the odd extra plane goes at the back, bottom, right),
// resolved by shape inference once the input size is known.
struct Padding3d {
    enum class Mode { Explicit, Same, Valid };
    Mode mode = Mode::Explicit;
    int64_t front = 0, back = 0, top = 0, bottom = 0, left = 0, right = 0;

    static Padding3d symmetric(int64_t pd, int64_t ph, int64_t pw)
    {
        return { Mode::Explicit, pd, pd, ph, ph, pw, pw };
    }
    bool isSymmetric() const { return mode == Mode::Explicit && front == back && top == bottom && left == right; }
    // {before, after} along axis 0 (D), 1 (H) or 2 (W).
    std::array<int64_t, 2> along(int axis) const
    {
        return axis == 0 ? std::array<int64_t, 2> { front, back }
            : axis == 1  ? std::array<int64_t, 2> { top, bottom }
                         : std::array<int64_t, 2> { left, right };
    }
    bool operator==(const Padding3d&) const = default;
};

// torch.nn.Conv3d: weight [C_out, C_in / groups, kd, kh, kw].
struct Conv3d {
    int64_t out_channels = 1;
    Triple kernel_size { 3, 3, 3 };
    Triple stride { 1, 1, 1 };
    Padding3d padding;
    Triple dilation { 1, 1, 1 };
    int64_t groups = 1;
    bool bias = true;
    bool operator==(const Conv3d&) const = default;
};

// torch.nn.ConvTranspose3d: weight [C_in, C_out / groups, kd, kh, kw]. padding crops the full transposed output
// (front, back, top, bottom, left, right); output_padding adds planes at the back/bottom/right.
struct ConvTranspose3d {
    int64_t out_channels = 1;
    Triple kernel_size { 3, 3, 3 };
    Triple stride { 1, 1, 1 };
    Padding3d padding;
    Triple output_padding { 0, 0, 0 };
    Triple dilation { 1, 1, 1 };
    int64_t groups = 1;
    bool bias = true;
    bool operator==(const ConvTranspose3d&) const = default;
};

struct MaxPool3d {
    Triple kernel_size { 2, 2, 2 };
    std::optional<Triple> stride; // PyTorch: defaults to kernel_size
    Padding3d padding;
    Triple dilation { 1, 1, 1 };
    bool ceil_mode = false;
    Triple effectiveStride() const { return stride ? *stride : kernel_size; }
    bool operator==(const MaxPool3d&) const = default;
};

struct AvgPool3d {
    Triple kernel_size { 2, 2, 2 };
    std::optional<Triple> stride;
    Padding3d padding;
    bool ceil_mode = false;
    bool count_include_pad = true;
    std::optional<int64_t> divisor_override;
    Triple effectiveStride() const { return stride ? *stride : kernel_size; }
    bool operator==(const AvgPool3d&) const = default;
};

// The mean over D, H and W of each channel (torch.nn.AdaptiveAvgPool3d(1)): [N, C, D, H, W] -> [N, C, 1, 1, 1].
struct GlobalAvgPool3d {
    bool operator==(const GlobalAvgPool3d&) const = default;
};

struct BatchNorm3d {
    double eps = 1e-5;
    bool affine = true;
    bool operator==(const BatchNorm3d&) const = default;
};

// ---- Normalization over each sample's own elements (issue 30): the statistics (mean and biased variance) come from
// the input itself, at inference as in training; y = (x − mean) / √(var + eps) · weight + bias.
// torch.nn.LayerNorm(normalized_shape, eps, elementwise_affine, bias): over the last len(normalized_shape) axes, which
// must equal normalized_shape; weight and bias have dims normalized_shape (bias false: no bias). Any rank 2..6.
struct LayerNorm {
    std::vector<int64_t> normalized_shape {}; // required (the file's "normalized_shape": a list, or one number)
    double eps = 1e-5;
    bool elementwise_affine = true;
    bool bias = true;
    bool operator==(const LayerNorm&) const = default;
};
// torch.nn.GroupNorm(num_groups, num_channels, eps, affine) on [N, C, *] (rank 2..6): the C channels in num_groups
// groups of C / num_groups, each (sample, group) normalised over its channels and every position; weight and bias
// [C] (num_channels is the input's C, never stored).
struct GroupNorm {
    int64_t num_groups = 1;
    double eps = 1e-5;
    bool affine = true;
    bool operator==(const GroupNorm&) const = default;
};
// torch.nn.InstanceNorm1d/2d/3d(num_features, eps, affine, track_running_stats=False) on [N, C, *] (rank 3..6): each
// (sample, channel) normalised over its positions; weight and bias [C]. PyTorch's default affine is false.
struct InstanceNorm {
    double eps = 1e-5;
    bool affine = false;
    bool operator==(const InstanceNorm&) const = default;
};

// A reduction over `dim` (empty: every axis), keepdim as PyTorch's: torch.mean, torch.sum, torch.amax, torch.amin and
// torch.linalg.vector_norm (op l2). ONNX ReduceMean, ReduceSum, ReduceMax, ReduceMin and ReduceL2.
struct Reduce {
    enum class Op { Mean, Sum, Max, Min, L2 };
    Op op = Op::Mean;
    std::vector<int64_t> dim; // negative counts from the end; empty: every axis
    bool keepdim = false;
    bool operator==(const Reduce&) const = default;
};

// The order of the alternatives is the menu order; compute/layer_kinds.h holds every other fact about each kind
// and checks at compile time that it lists them in this order.
using LayerSpec = std::variant<Conv2d, ConvTranspose2d, MaxPool2d, AvgPool2d, GlobalAvgPool2d, BatchNorm2d, ReLU,
    LeakyReLU, Sigmoid, Tanh, ELU, ReLU6, Hardswish, Hardsigmoid, SiLU, Hardtanh, PReLU, GELU, Softplus, Mish, Unary,
    Binary, Flatten, Linear, Softmax, LogSoftmax, Add, Mul, Concat, Pad, Resize, Identity, Dropout, ChannelShuffle,
    Slice, Reshape, Transpose, Reduce, Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d, GlobalAvgPool3d, BatchNorm3d,
    LayerNorm, GroupNorm, InstanceNorm, Matmul, Gather>;

// The file-format / PyTorch-style type name: "conv2d", "conv_transpose2d", "maxpool2d", ...
std::string layerTypeName(const LayerSpec& spec);
// Every type name, in menu order.
const std::array<const char*, std::variant_size_v<LayerSpec>>& layerTypeNames();
// A default-constructed spec for a type name; throws InputError for an unknown name.
LayerSpec makeLayerSpec(const std::string& typeName);
// A short human label: "conv2d 6→16 k5" needs shapes, so this gives "conv2d k5 s1" etc.
std::string layerSummary(const LayerSpec& spec);

// A transpose's permutation and a concat's axis on a tensor of `rank` dims, negative axes wrapped to 0..rank-1
// (shape inference has checked them; an axis out of range here throws InputError).
std::vector<int64_t> wrappedDims(const Transpose& spec, int rank);
int64_t wrappedDim(const Concat& spec, int rank);

// Does this layer kind carry learned parameters (weights / batch-norm statistics)?
bool hasParameters(const LayerSpec& spec);
// Is this layer a convolution (the ops that have several algorithms)?
bool isConvolution(const LayerSpec& spec);
// Is this an element-wise activation of one input (relu, leaky_relu, sigmoid, tanh, elu, relu6, ...)?
bool isActivation(const LayerSpec& spec);

} // namespace convscope
