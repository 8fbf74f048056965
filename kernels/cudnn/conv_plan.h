// cuDNN convolutions through the legacy descriptor API the lecture notes teach: a tensor descriptor for the
// input and output, a filter descriptor for the weights, a convolution descriptor for padding, stride,
// dilation, groups and math type, then an algorithm and its workspace.
//
// What cuDNN cannot say directly is prepared around it:
//   asymmetric padding  the descriptor pads both sides equally, so the input is padded into a scratch tensor
//                       first (the "pad step") and cuDNN runs with padding 0;
//   NHWC layout         the input is transposed to channels-last (fused with the pad step when both apply),
//                       the weights once at prepare to [K, R, S, C], and the output back to NCHW;
//   conv_transpose2d    is cuDNN's backward-data convolution; when the padding is asymmetric or output_padding
//                       makes the size inconsistent with a forward convolution, cuDNN writes a slightly larger
//                       output that a crop step trims (adding the bias on the way).
//
// Algorithm choice: `auto` times every algorithm with cudnnFindConvolutionForwardAlgorithmEx under the workspace
// limit once per distinct layer (cached for the process); a pinned algorithm is checked with
// cudnnGetConvolutionForwardWorkspaceSize, whose failure carries cuDNN's reason.
#pragma once

#include "compute/backend.h"
#include "compute/layer_spec.h"
#include "compute/shape_inference.h"
#include "kernels/common/device_buffer.h"
#include "kernels/cudnn/conv_geometry.h"
#include "kernels/cudnn/cudnn_support.h"

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace convscope::cudnn {

inline constexpr size_t kDefaultWorkspaceLimit = size_t(1) << 30;

class GraphConvPlan; // graph_conv.h

// The selectable algorithms, "auto" first.
struct AlgoName {
    const char* name;
    cudnnConvolutionFwdAlgo_t algo; // ignored for "auto"
    const char* description;
};
const std::vector<AlgoName>& algorithmNames();
std::optional<cudnnConvolutionFwdAlgo_t> algorithmFromName(const std::string& name); // nullopt: auto / unknown
std::string algorithmName(cudnnConvolutionFwdAlgo_t algo); // "winograd_nonfused"
std::string bwdDataAlgorithmName(cudnnConvolutionBwdDataAlgo_t algo); // "algo_1", "fft_tiling", ...
std::string mathTypeName(cudnnMathType_t math); // "fma", "tensor_op", ...
// FP32 → CUDNN_FMA_MATH, TF32 → CUDNN_DEFAULT_MATH (TF32 on FP32 data, as PyTorch's allow_tf32; never
// ..._ALLOW_CONVERSION, which may round FP32 data to FP16), FP16/BF16 → CUDNN_TENSOR_OP_MATH.
cudnnMathType_t mathTypeFor(MathMode mode);

// What a layer note says of a convolution that ran natively on a session's storage (the brackets name the weight
// layout): "native fp16 NHWC (CUDNN_DATA_HALF tensors, [K, R, S, C/g] fp16 weights, compute CUDNN_DATA_FLOAT)".
// `layout` is NHWC or NDHWC.
std::string nativeConvNote(DType storage, const std::string& layout, const std::string& weights);

// Session options that matter here.
struct ConvOptions {
    MathMode math = MathMode::FP32;
    bool nhwc = false;
    size_t workspaceLimit = kDefaultWorkspaceLimit;
    // What `auto` chooses among: "race" (the legacy Find choice against the graph API's engines, the default),
    // "legacy" (Find only) or "graph" (the fastest graph API engine whenever one runs: tests and diagnosis).
    std::string api = "race";
};
// The options for a convolution that runs on FP32 data in this session: in plain FP32 and TF32 the session's own; in
// FP16/BF16 a layer left on the base's FP32 copies (a convolution whose descriptors cuDNN refuses on the storage type,
// storage_ops.h) runs TF32 Tensor Cores on them — cuDNN's FP16 math needs FP16 data, and TF32 operands round no more
// than FP16's.
inline ConvOptions onFp32Data(ConvOptions o)
{
    if (o.math == MathMode::FP16 || o.math == MathMode::BF16)
        o.math = MathMode::TF32;
    return o;
}
// Reads extra["layout"] ("nchw" | "nhwc"), extra["cudnn_api"] ("race" | "legacy" | "graph") and
// extra["workspace_limit"] (bytes; suffixes K, M, G allowed);
// throws InputError for a value it cannot read.
ConvOptions convOptions(const SessionOptions& options);

// How a conv2d layer is laid out for cuDNN: sizes only, so the session can plan its scratch memory first. The
// geometry's `in` is the input as given (NCHW).
struct ConvLayout : ConvGeometry<2> {
    Padding2d pad;
    bool padStep; // asymmetric padding: pad explicitly, cuDNN padding 0
    bool nhwc;
    // Native: the session stores the tensors channels-last in `storage` (compute/storage_format.h), so cuDNN reads
    // the layer's input and writes its output in place (nhwc is set, no transposes, no pad step) with weights
    // [K, R, S, C/g] of that type; the convolution's compute type stays FP32.
    bool native = false;
    DType storage = DType::F32;
    cudnnDataType_t dataType() const { return cudnnType(storage); }
    int ph, pw; // the input cuDNN sees (padded when padStep)
    // Scratch, in floats: the prepared input (padded and/or NHWC), the NHWC output, the NHWC weights. Native layouts
    // keep their padded input in the storage type: nativePaddedBytes (0 without the pad step).
    size_t preparedInputFloats() const;
    size_t nativePaddedBytes() const;
    size_t nhwcOutputFloats() const;
    size_t nhwcWeightFloats() const;
};
ConvLayout convLayout(const Conv2d& spec, const LayerShape& shape, bool nhwc);
// The native layout for a session that stores tensors channels-last in `storage`. Asymmetric padding keeps its pad
// step, done on the storage type (nativePaddedBytes of scratch), with cuDNN's padding 0.
ConvLayout nativeConvLayout(const Conv2d& spec, const LayerShape& shape, DType storage);

// The descriptors of one forward convolution.
struct ConvDescriptors {
    TensorDesc x, y, bias;
    FilterDesc w;
    ConvDesc conv;
};
// Sets every descriptor for `layout` with `math` and checks cuDNN agrees on the output size.
void describe(const ConvLayout& layout, cudnnMathType_t math, ConvDescriptors& d);

struct AlgoChoice {
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    cudnnMathType_t math = CUDNN_FMA_MATH;
    size_t workspace = 0;
    float findMs = -1; // cuDNN's own timing when chosen by Find
    bool cached = false; // found in the process-wide cache (no timing this time)
    // Algorithms `auto` left out only because their workspace exceeds the limit, with what they need: the layer
    // note shows it, since raising the limit (PyTorch has none) can change the choice.
    std::string overLimit;
    // `auto` also times the graph API's engine configurations (graph_conv.h); when one beats the legacy choice
    // it runs instead, and `workspace` is its workspace. Both medians are kept for the layer note.
    std::shared_ptr<const GraphConvPlan> graph;
    double legacyMs = -1, graphMs = -1, epilogueMs = -1; // epilogueMs: one bias pass, when the layer has a bias
    int graphTried = 0;
};

// What follows the convolution inside the layer. The legacy path fuses a bias (with implicit_precomp_gemm, or
// with any algorithm when a ReLU rides along) into cudnnConvolutionBiasActivationForward; a graph API plan pays
// for the bias and the ReLU as separate passes over the output, so the race counts them.
struct ConvEpilogue {
    const void* bias = nullptr; // device bias, or null
    bool fuseBias = true; // the session's fuse_bias option
    bool relu = false; // a fused ReLU follows
    // A fused residual add (compute/fusion.h) follows: on FP32 tensors one more cudnnAddTensor pass where the
    // convolution call does not take it as its z operand (native layers: a term of `pass`).
    bool residual = false;
    // Native layouts: the bias (and any fused activation) is one pass of our kernel over the output; `pass` runs it
    // on the output buffer so the race times it instead of cudnnAddTensor.
    std::function<void()> pass;
};

// Whether the legacy path runs the bias (and the ReLU) inside cudnnConvolutionBiasActivationForward for `algo`:
// cuDNN allows the identity activation only with implicit_precomp_gemm, a ReLU with any algorithm.
bool legacyFusesBias(const ConvEpilogue& e, cudnnConvolutionFwdAlgo_t algo);

// A workspace for Find: as much of `limit` as the device can spare now (free memory less a margin, halved on
// fragmentation), empty when not even 1 MiB is free. Find only tries algorithms whose workspace fits the buffer
// it is given, so this is also what enforces the limit.
gpu::DeviceBuffer findWorkspace(size_t limit);

// Untimed. `auto`: Find (cached per layer shape, math, layout, limit and epilogue); buffers must be valid
// device memory of the layout's sizes (their contents are overwritten / ignored). Throws Error when nothing runs.
AlgoChoice chooseAuto(cudnnHandle_t h, const ConvLayout& layout, ConvDescriptors& d, const ConvOptions& o,
    const void* x, const void* w, void* y, const ConvEpilogue& epilogue);
// A pinned algorithm: its workspace size, or UnsupportedError with cuDNN's reason (also when the workspace
// exceeds the limit). `selection` names the layer in the message.
AlgoChoice choosePinned(cudnnHandle_t h, const ConvLayout& layout, ConvDescriptors& d, const ConvOptions& o,
    cudnnConvolutionFwdAlgo_t algo, const std::string& selection);
// The same check without throwing: empty when supported, else the reason.
std::string pinnedUnsupportedReason(
    cudnnHandle_t h, const ConvLayout& layout, const ConvOptions& o, cudnnConvolutionFwdAlgo_t algo);

// How the algorithm was chosen, for a layer note: "cuDNN <algo>" when pinned, else "cudnn.auto → <algo> (Find: …)"
// with the graph API's race when one ran (`epiloguePass` names what its epilogue time is per).
std::string choiceNote(const AlgoChoice& c, bool pinned, const std::string& epiloguePass);

// conv_transpose2d as backward-data convolution.
// The geometry's `in` is the layer input (cuDNN's dy), `out` the layer output.
struct ConvTransposeLayout : ConvGeometry<2> {
    int padH, padW; // cuDNN's symmetric padding
    bool crop; // cuDNN writes [n, cout, fullH, fullW] to scratch; a crop step makes the output
    int fullH, fullW, offH, offW;
    // Native, as for conv2d: NHWC tensors of `storage` read and written in place, [C_in, R, S, C_out/g] weights of that
    // type in scratch, FP32 compute type; otherwise FP32 NCHW tensors and PyTorch's weight as it is.
    bool native = false;
    DType storage = DType::F32;
    size_t fullFloats() const; // the full output's elements when cropping (0 without)
};
// `native`: the layout for a session storing tensors channels-last in that type.
ConvTransposeLayout convTransposeLayout(
    const ConvTranspose2d& spec, const LayerShape& shape, std::optional<DType> native = std::nullopt);

struct ConvTransposeDescriptors {
    TensorDesc dy, dx, bias;
    FilterDesc w;
    ConvDesc conv;
};
void describe(const ConvTransposeLayout& layout, cudnnMathType_t math, ConvTransposeDescriptors& d);

struct BwdDataChoice {
    cudnnConvolutionBwdDataAlgo_t algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    cudnnMathType_t math = CUDNN_FMA_MATH;
    size_t workspace = 0;
    bool cached = false;
};
// Find over the backward-data algorithms on `d`'s buffers, uncached: the first (Find's fastest) that ran, fits the
// workspace limit and keeps the math mode honest, with `d`'s math set to it; nullopt when none does.
std::optional<BwdDataChoice> findBwdData(
    cudnnHandle_t h, ConvTransposeDescriptors& d, const ConvOptions& o, const void* w, const void* dy, void* dx);
// findBwdData cached like chooseAuto; cuDNN's algo_1 (no workspace to speak of) when nothing qualified.
BwdDataChoice chooseBwdData(cudnnHandle_t h, const ConvTransposeLayout& layout, ConvTransposeDescriptors& d,
    const ConvOptions& o, const void* w, const void* dy, void* dx);

} // namespace convscope::cudnn
