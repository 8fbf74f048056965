#include "kernels/cudnn/conv_plan.h"

#include "kernels/cudnn/choice_cache.h"
#include "kernels/cudnn/graph_conv.h"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <sstream>

namespace convscope::cudnn {

namespace {
    ChoiceCache<AlgoChoice> g_fwdCache;
    ChoiceCache<BwdDataChoice> g_bwdCache;

    std::string mathKey(const ConvOptions& o) { return mathModeName(o.math); }

    bool acceptable(cudnnMathType_t m, MathMode mode)
    {
        // FP32 must never run on tensor cores: with float data DEFAULT_MATH and the TENSOR_OP types may use TF32.
        // TF32 must never round FP32 data to FP16 (..._ALLOW_CONVERSION: FP16's range, 65504). The half modes accept
        // any math type cuDNN picks.
        if (mode == MathMode::FP32)
            return m == CUDNN_FMA_MATH;
        return mode != MathMode::TF32 || m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    }

    constexpr int kRetimeRuns = 5;

    // Index of the candidate with the lowest median time over kRetimeRuns runs on the handle's stream.
    // `extraMs(algo)`: what the layer adds to that algorithm's convolution (an unfused bias pass).
    size_t fastestByMedian(cudnnHandle_t h, ConvDescriptors& d, const std::vector<cudnnConvolutionFwdAlgoPerf_t>& cands,
        const void* x, const void* w, void* y, const gpu::DeviceBuffer& ws,
        const std::function<double(cudnnConvolutionFwdAlgo_t)>& extraMs)
    {
        cudaStream_t stream = nullptr;
        CONVSCOPE_CUDNN_CHECK(cudnnGetStream(h, &stream));
        const float one = 1.0f, zero = 0.0f;
        size_t best = 0;
        double bestMs = 0;
        for (size_t k = 0; k < cands.size(); ++k) {
            d.conv.setMath(cands[k].mathType);
            const double median
                = medianCallMs(
                      stream,
                      [&] {
                          CONVSCOPE_CUDNN_CHECK(cudnnConvolutionForward(h, &one, d.x.get(), x, d.w.get(), w,
                              d.conv.get(), cands[k].algo, ws.get(), ws.bytes(), &zero, d.y.get(), y));
                      },
                      kRetimeRuns)
                + extraMs(cands[k].algo);
            if (k == 0 || median < bestMs) {
                best = k;
                bestMs = median;
            }
        }
        return best;
    }

    // The passes over the output that follow the convolution when they are not fused into it: none without a
    // bias; with one, the legacy cudnnConvolutionBiasActivationForward fuses it (and a ReLU) for
    // implicit_precomp_gemm, or for any algorithm when a ReLU rides along; otherwise the bias and the ReLU are one
    // pass each (`pass`: cudnnAddTensor's median on this layer).
    // A residual add on FP32 tensors is one more pass where the call does not take it (its z operand).
    double legacyEpilogueMs(const ConvEpilogue& e, cudnnConvolutionFwdAlgo_t algo, double pass)
    {
        if (!e.bias)
            return 0.0;
        return legacyFusesBias(e, algo) ? 0.0 : pass * ((e.relu && !e.pass ? 2 : 1) + (e.residual && !e.pass ? 1 : 0));
    }
    double graphEpilogueMs(const ConvEpilogue& e, double pass)
    {
        return e.bias ? pass * ((e.relu && !e.pass ? 2 : 1) + (e.residual && !e.pass ? 1 : 0)) : 0.0;
    }

    // The legacy choice against the graph API's engine configurations, both timed by medianCallMs with their
    // epilogue passes; the graph plan replaces the choice only when it is faster in total. Any failure keeps the
    // legacy choice.
    void raceGraphApi(cudnnHandle_t h, const ConvLayout& l, ConvDescriptors& d, const ConvOptions& o, const void* x,
        const void* w, void* y, const gpu::DeviceBuffer& ws, const ConvEpilogue& e, AlgoChoice& c)
    {
        const bool force = o.api == "graph";
        if (l.nhwc && !l.native)
            return; // the transposing NHWC option: the legacy API only
        try {
            cudaStream_t stream = nullptr;
            CONVSCOPE_CUDNN_CHECK(cudnnGetStream(h, &stream));
            const float one = 1.0f, zero = 0.0f;
            d.conv.setMath(c.math);
            c.legacyMs = medianCallMs(
                stream,
                [&] {
                    CONVSCOPE_CUDNN_CHECK(cudnnConvolutionForward(h, &one, d.x.get(), x, d.w.get(), w, d.conv.get(),
                        c.algo, ws.get(), ws.bytes(), &zero, d.y.get(), y));
                },
                kRetimeRuns);
            auto plan = GraphConvPlan::tune(h, l, o.math, x, w, y, ws.get(), ws.bytes(), &c.graphTried);
            if (plan) {
                c.graphMs = plan->medianMs();
                const double pass = std::max(c.epilogueMs, 0.0);
                if (force || c.graphMs + graphEpilogueMs(e, pass) < c.legacyMs + legacyEpilogueMs(e, c.algo, pass)) {
                    c.workspace = plan->workspace();
                    c.graph = std::move(plan);
                }
            }
        } catch (const std::exception&) {
            (void)cudaGetLastError();
            c.graph.reset();
        }
    }

    // cudnnAddTensor's median on the layer's output: the cost of one unfused pass. -1 without a bias.
    double biasPassMs(cudnnHandle_t h, ConvDescriptors& d, const ConvEpilogue& e, void* y)
    {
        if (!e.bias && !e.pass)
            return -1;
        cudaStream_t stream = nullptr;
        CONVSCOPE_CUDNN_CHECK(cudnnGetStream(h, &stream));
        if (e.pass)
            return medianCallMs(stream, e.pass, kRetimeRuns);
        const float one = 1.0f;
        return medianCallMs(
            stream, [&] { CONVSCOPE_CUDNN_CHECK(cudnnAddTensor(h, &one, d.bias.get(), e.bias, &one, d.y.get(), y)); },
            kRetimeRuns);
    }
} // namespace

gpu::DeviceBuffer findWorkspace(size_t limit)
{
    size_t freeBytes = 0, total = 0;
    CONVSCOPE_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &total));
    const size_t margin = size_t(256) << 20;
    size_t bytes = std::min(limit, freeBytes > margin ? freeBytes - margin : 0);
    while (bytes >= (size_t(1) << 20)) {
        try {
            return gpu::DeviceBuffer(bytes, "cudnn Find workspace");
        } catch (const OutOfMemoryError&) {
            bytes /= 2; // fragmentation: try with less rather than fail the layer
        }
    }
    return {};
}

bool legacyFusesBias(const ConvEpilogue& e, cudnnConvolutionFwdAlgo_t algo)
{
    return e.bias && e.fuseBias && (e.relu || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
}

const std::vector<AlgoName>& algorithmNames()
{
    static const std::vector<AlgoName> names = {
        { "auto", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
            "timed choice (cudnnFindConvolutionForwardAlgorithmEx) under the workspace limit, cached per shape" },
        { "implicit_gemm", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, "implicit GEMM, no workspace" },
        { "implicit_precomp_gemm", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
            "implicit GEMM with precomputed indices in the workspace" },
        { "gemm", CUDNN_CONVOLUTION_FWD_ALGO_GEMM, "explicit im2col into the workspace, then GEMM" },
        { "direct", CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, "direct convolution (rarely implemented)" },
        { "fft", CUDNN_CONVOLUTION_FWD_ALGO_FFT, "FFT of whole planes (stride 1; large workspace)" },
        { "fft_tiling", CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, "FFT over 32x32 tiles (stride 1)" },
        { "winograd", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, "fused Winograd (3x3, stride 1)" },
        { "winograd_nonfused", CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
            "Winograd with separate transforms (3x3 or 5x5, stride 1)" },
    };
    return names;
}

std::optional<cudnnConvolutionFwdAlgo_t> algorithmFromName(const std::string& name)
{
    for (const auto& a : algorithmNames())
        if (name == a.name && name != "auto")
            return a.algo;
    return std::nullopt;
}

std::string algorithmName(cudnnConvolutionFwdAlgo_t algo)
{
    for (const auto& a : algorithmNames())
        if (a.algo == algo && std::string(a.name) != "auto")
            return a.name;
    return "algo_" + std::to_string(int(algo));
}

std::string bwdDataAlgorithmName(cudnnConvolutionBwdDataAlgo_t algo)
{
    switch (algo) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
        return "algo_0 (non-deterministic)";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
        return "algo_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
        return "fft";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
        return "fft_tiling";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
        return "winograd";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
        return "winograd_nonfused";
    default:
        return "algo_" + std::to_string(int(algo));
    }
}

std::string mathTypeName(cudnnMathType_t math)
{
    switch (math) {
    case CUDNN_DEFAULT_MATH:
        return "default (tf32 on float data)";
    case CUDNN_TENSOR_OP_MATH:
        return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
        return "tensor_op_allow_conversion (float data rounded to fp16)";
    case CUDNN_FMA_MATH:
        return "fma (fp32)";
    default:
        return "math_" + std::to_string(int(math));
    }
}

std::string nativeConvNote(DType storage, const std::string& layout, const std::string& weights)
{
    const std::string t = dtypeName(storage);
    return "native " + t + " " + layout + " (" + cudnnTypeName(storage) + " tensors, " + weights + " " + t
        + " weights, compute CUDNN_DATA_FLOAT)";
}

cudnnMathType_t mathTypeFor(MathMode mode)
{
    switch (mode) {
    case MathMode::TF32:
        return CUDNN_DEFAULT_MATH; // TF32 on FP32 data, as PyTorch's allow_tf32; never ..._ALLOW_CONVERSION (FP16)
    case MathMode::FP16:
    case MathMode::BF16:
        return CUDNN_TENSOR_OP_MATH; // on FP16/BF16 data; FP32 sums (the convolution's compute type)
    case MathMode::FP32:
        break;
    }
    return CUDNN_FMA_MATH;
}

ConvOptions convOptions(const SessionOptions& options)
{
    ConvOptions o;
    o.math = options.math;
    if (auto it = options.extra.find("layout"); it != options.extra.end()) {
        std::string v = it->second;
        std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
        if (v == "nhwc")
            o.nhwc = true;
        else if (v != "nchw")
            throw InputError("option layout=" + it->second + ": expected nchw or nhwc");
    }
    if (auto it = options.extra.find("cudnn_api"); it != options.extra.end()) {
        if (it->second != "race" && it->second != "legacy" && it->second != "graph")
            throw InputError("option cudnn_api=" + it->second + ": expected race, legacy or graph");
        o.api = it->second;
    }
    if (auto it = options.extra.find("workspace_limit"); it != options.extra.end()) {
        const std::string& v = it->second;
        size_t pos = 0;
        unsigned long long n = 0;
        try {
            n = std::stoull(v, &pos);
        } catch (const std::exception&) {
            throw InputError("option workspace_limit=" + v + ": expected a number of bytes (suffix K, M or G allowed)");
        }
        const std::string suffix = v.substr(pos);
        if (suffix == "K" || suffix == "k")
            n <<= 10;
        else if (suffix == "M" || suffix == "m")
            n <<= 20;
        else if (suffix == "G" || suffix == "g")
            n <<= 30;
        else if (!suffix.empty())
            throw InputError("option workspace_limit=" + v + ": unknown suffix \"" + suffix + "\" (K, M or G)");
        o.workspaceLimit = static_cast<size_t>(n);
    }
    return o;
}

// --- conv2d ---------------------------------------------------------------------------------------------------

size_t ConvLayout::preparedInputFloats() const { return !native && (padStep || nhwc) ? size_t(n) * cin * ph * pw : 0; }
size_t ConvLayout::nhwcOutputFloats() const { return nhwc && !native ? size_t(n) * cout * out[0] * out[1] : 0; }
size_t ConvLayout::nativePaddedBytes() const
{
    return native && padStep ? size_t(n) * cin * ph * pw * dtypeBytes(storage) : 0;
}
size_t ConvLayout::nhwcWeightFloats() const { return nhwc ? size_t(cout) * (cin / groups) * kernel[0] * kernel[1] : 0; }

ConvLayout convLayout(const Conv2d& spec, const LayerShape& shape, bool nhwc)
{
    ConvLayout l {};
    static_cast<ConvGeometry<2>&>(l) = convGeometry(spec, shape);
    l.pad = shape.resolvedPadding;
    l.padStep = l.pad.top != l.pad.bottom || l.pad.left != l.pad.right;
    l.nhwc = nhwc;
    l.ph = l.padStep ? l.in[0] + toInt(l.pad.top + l.pad.bottom, "padding") : l.in[0];
    l.pw = l.padStep ? l.in[1] + toInt(l.pad.left + l.pad.right, "padding") : l.in[1];
    return l;
}

ConvLayout nativeConvLayout(const Conv2d& spec, const LayerShape& shape, DType storage)
{
    ConvLayout l = convLayout(spec, shape, true);
    l.native = true;
    l.storage = storage;
    return l;
}

void describe(const ConvLayout& l, cudnnMathType_t math, ConvDescriptors& d)
{
    const cudnnTensorFormat_t fmt = l.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const cudnnDataType_t type = l.dataType();
    d.x.set(fmt, l.n, l.cin, l.ph, l.pw, type);
    d.y.set(fmt, l.n, l.cout, l.out[0], l.out[1], type);
    // cudnnConvolutionBiasActivationForward takes the bias in the output's type (FP16 / BF16 with FP32 compute).
    d.bias.set(CUDNN_TENSOR_NCHW, 1, l.cout, 1, 1, type);
    // NCHW filters are PyTorch's [K, C/g, R, S]; NHWC filters are [K, R, S, C/g] (transposed at prepare).
    d.w.set(fmt, l.cout, l.cin / l.groups, l.kernel[0], l.kernel[1], type);
    const int padH = l.padStep ? 0 : int(l.pad.top), padW = l.padStep ? 0 : int(l.pad.left);
    d.conv.set(padH, padW, l.stride[0], l.stride[1], l.dilation[0], l.dilation[1], l.groups);
    d.conv.setMath(math);
    int n = 0, c = 0, h = 0, w = 0;
    CONVSCOPE_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(d.conv.get(), d.x.get(), d.w.get(), &n, &c, &h, &w));
    if (n != l.n || c != l.cout || h != l.out[0] || w != l.out[1])
        throw Error("internal error: cuDNN computes a conv2d output of [" + std::to_string(n) + ", " + std::to_string(c)
            + ", " + std::to_string(h) + ", " + std::to_string(w) + "] where shape inference says ["
            + std::to_string(l.n) + ", " + std::to_string(l.cout) + ", " + std::to_string(l.out[0]) + ", "
            + std::to_string(l.out[1]) + "]");
}

namespace {
    std::string fwdKey(const ConvLayout& l, const ConvOptions& o, cudnnHandle_t h)
    {
        std::ostringstream k;
        k << "fwd " << mathKey(o) << (l.nhwc ? " nhwc " : " nchw ") << (l.native ? "native " : "")
          << dtypeName(l.storage) << " " << l.n << "," << l.cin << "," << l.ph << "," << l.pw << " k" << l.cout << " "
          << l.kernel[0] << "x" << l.kernel[1] << " s" << l.stride[0] << "," << l.stride[1] << " d" << l.dilation[0]
          << "," << l.dilation[1] << " g" << l.groups << " p" << (l.padStep ? 0 : l.pad.top) << ","
          << (l.padStep ? 0 : l.pad.left) << " ws" << o.workspaceLimit << " handle "
          << h; // a graph API plan is built for one handle
        return k.str();
    }
} // namespace

AlgoChoice chooseAuto(cudnnHandle_t h, const ConvLayout& l, ConvDescriptors& d, const ConvOptions& o, const void* x,
    const void* w, void* y, const ConvEpilogue& epilogue)
{
    const std::string key = fwdKey(l, o, h) + " api " + o.api + " bias " + (epilogue.bias ? "1" : "0")
        + (epilogue.fuseBias ? "1" : "0") + (epilogue.relu ? "1" : "0") + (epilogue.residual ? " residual" : "");
    if (auto cached = g_fwdCache.find(key)) {
        d.conv.setMath(cached->math);
        return *cached;
    }
    gpu::DeviceBuffer ws = findWorkspace(o.workspaceLimit);
    const double pass = biasPassMs(h, d, epilogue, y);
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {};
    int returned = 0;
    CONVSCOPE_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(h, d.x.get(), x, d.w.get(), w, d.conv.get(), d.y.get(),
        y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, ws.get(), ws.bytes()));
    // Results come sorted by Find's time. Find measures each algorithm once, and on the H200 that single
    // measurement misranked close candidates by up to 30% (3→64 @512²: implicit_gemm 0.33 ms ahead of
    // implicit_precomp_gemm, whose median is 0.25 ms). So the candidates that ran, fit, keep the math mode honest
    // and are within 1.5× of the best are re-timed here (median of kRetimeRuns between events, still untimed
    // prepare work) and the fastest median wins. Any failure while re-timing keeps Find's order.
    std::vector<cudnnConvolutionFwdAlgoPerf_t> candidates;
    for (int i = 0; i < returned; ++i) {
        const auto& p = perf[i];
        if (p.status != CUDNN_STATUS_SUCCESS || p.memory > o.workspaceLimit || p.memory > ws.bytes()
            || !acceptable(p.mathType, o.math))
            continue;
        if (!candidates.empty() && (p.time > 1.5f * candidates.front().time || candidates.size() >= 4))
            break;
        candidates.push_back(p);
    }
    if (!candidates.empty()) {
        size_t best = 0;
        if (candidates.size() > 1) {
            try {
                best = fastestByMedian(h, d, candidates, x, w, y, ws,
                    [&](cudnnConvolutionFwdAlgo_t a) { return legacyEpilogueMs(epilogue, a, std::max(pass, 0.0)); });
            } catch (const std::exception&) {
                (void)cudaGetLastError();
                best = 0;
            }
        }
        const auto& p = candidates[best];
        AlgoChoice c;
        c.algo = p.algo;
        c.math = p.mathType;
        c.workspace = p.memory;
        c.findMs = p.time;
        c.epilogueMs = pass;
        for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
            size_t bytes = 0;
            const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(a);
            d.conv.setMath(mathTypeFor(o.math));
            if (cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), algo, &bytes)
                    == CUDNN_STATUS_SUCCESS
                && bytes > ws.bytes())
                c.overLimit += (c.overLimit.empty() ? "" : ", ") + algorithmName(algo) + " needs " + gpu::mib(bytes);
        }
        d.conv.setMath(c.math);
        if (o.api != "legacy")
            raceGraphApi(h, l, d, o, x, w, y, ws, epilogue, c);
        d.conv.setMath(c.math);
        g_fwdCache.store(key, c);
        return c;
    }
    // Implicit GEMM needs no workspace and runs every configuration: the safe answer when Find found nothing
    // (e.g. the device had too little free memory for any workspace).
    AlgoChoice c;
    c.math = mathTypeFor(o.math);
    d.conv.setMath(c.math);
    CONVSCOPE_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
        h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), c.algo, &c.workspace));
    return c;
}

AlgoChoice choosePinned(cudnnHandle_t h, const ConvLayout& l, ConvDescriptors& d, const ConvOptions& o,
    cudnnConvolutionFwdAlgo_t algo, const std::string& selection)
{
    (void)l;
    AlgoChoice c;
    c.algo = algo;
    c.math = mathTypeFor(o.math);
    d.conv.setMath(c.math);
    const cudnnStatus_t st
        = cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), algo, &c.workspace);
    if (st != CUDNN_STATUS_SUCCESS)
        throw UnsupportedError(selection + ": cuDNN does not support " + algorithmName(algo)
            + " for this convolution (unsupported): " + reason(st));
    if (c.workspace > o.workspaceLimit)
        throw UnsupportedError(selection + ": " + algorithmName(algo) + " needs " + gpu::mib(c.workspace)
            + " of workspace, more than the limit of " + gpu::mib(o.workspaceLimit)
            + " (unsupported; raise it with --option workspace_limit=BYTES)");
    return c;
}

std::string choiceNote(const AlgoChoice& c, bool pinned, const std::string& epiloguePass)
{
    std::string note = pinned ? "cuDNN " + algorithmName(c.algo)
                              : "cudnn.auto → "
            + (c.graph ? c.graph->name() + ", ahead of legacy " + algorithmName(c.algo) : algorithmName(c.algo))
            + (c.cached ? " (cached choice)" : " (Find: " + formatMs(c.findMs) + ")");
    if (!pinned && c.graphTried > 0)
        note += ", " + std::to_string(c.graphTried) + " graph API configurations raced: best " + formatMs(c.graphMs)
            + " against legacy " + formatMs(c.legacyMs)
            + (c.epilogueMs >= 0 ? " (plus " + formatMs(c.epilogueMs) + " per " + epiloguePass + ")" : "");
    return note;
}

std::string pinnedUnsupportedReason(
    cudnnHandle_t h, const ConvLayout& l, const ConvOptions& o, cudnnConvolutionFwdAlgo_t algo)
{
    ConvDescriptors d;
    describe(l, mathTypeFor(o.math), d);
    try {
        choosePinned(h, l, d, o, algo, "cudnn." + algorithmName(algo));
    } catch (const UnsupportedError& e) {
        return e.what();
    }
    return {};
}

// --- conv_transpose2d ---------------------------------------------------------------------------------------------

size_t ConvTransposeLayout::fullFloats() const { return crop ? size_t(n) * cout * fullH * fullW : 0; }

ConvTransposeLayout convTransposeLayout(
    const ConvTranspose2d& spec, const LayerShape& shape, std::optional<DType> native)
{
    ConvTransposeLayout l {};
    static_cast<ConvGeometry<2>&>(l) = convGeometry(spec, shape);
    l.native = native.has_value();
    l.storage = native.value_or(DType::F32);
    const Padding2d& p = shape.resolvedPadding;
    // cuDNN checks that a forward convolution of the output gives back the input size. That holds for
    // symmetric padding unless output_padding reaches a whole stride (possible when dilation > stride).
    auto consistent
        = [](int out, int pad, int k, int s, int d, int in) { return (out + 2 * pad - d * (k - 1) - 1) / s + 1 == in; };
    const bool symmetric = p.top == p.bottom && p.left == p.right;
    if (symmetric && consistent(l.out[0], int(p.top), l.kernel[0], l.stride[0], l.dilation[0], l.in[0])
        && consistent(l.out[1], int(p.left), l.kernel[1], l.stride[1], l.dilation[1], l.in[1])) {
        l.crop = false;
        l.padH = int(p.top);
        l.padW = int(p.left);
        l.fullH = l.out[0];
        l.fullW = l.out[1];
        return l;
    }
    // Otherwise cuDNN writes an output it can express, without output_padding, and the crop step takes the
    // window PyTorch defines out of it. In the uncropped transposed output (size F) PyTorch keeps rows
    // [top, F − bottom + output_padding); cuDNN with symmetric padding p writes rows [p, F − p). So p may be at
    // most top and at most bottom − output_padding; rows past F (output_padding beyond every tap) receive no
    // contribution in PyTorch either, only the bias.
    l.crop = true;
    auto cudnnPad = [](int64_t before, int64_t after, int64_t outputPadding) {
        return std::max<int64_t>(0, std::min(before, after - outputPadding));
    };
    l.padH = toInt(cudnnPad(p.top, p.bottom, spec.output_padding[0]), "padding");
    l.padW = toInt(cudnnPad(p.left, p.right, spec.output_padding[1]), "padding");
    l.fullH = (l.in[0] - 1) * l.stride[0] - 2 * l.padH + l.dilation[0] * (l.kernel[0] - 1) + 1;
    l.fullW = (l.in[1] - 1) * l.stride[1] - 2 * l.padW + l.dilation[1] * (l.kernel[1] - 1) + 1;
    l.offH = int(p.top) - l.padH;
    l.offW = int(p.left) - l.padW;
    if (l.fullH < 1 || l.fullW < 1)
        throw UnsupportedError("cudnn: this conv_transpose2d's padding leaves cuDNN no output to write");
    return l;
}

void describe(const ConvTransposeLayout& l, cudnnMathType_t math, ConvTransposeDescriptors& d)
{
    const cudnnTensorFormat_t fmt = l.native ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const cudnnDataType_t type = cudnnType(l.storage);
    d.dy.set(fmt, l.n, l.cin, l.in[0], l.in[1], type);
    d.dx.set(fmt, l.n, l.cout, l.fullH, l.fullW, type);
    d.bias.set(CUDNN_TENSOR_NCHW, 1, l.cout, 1, 1); // FP32 (cudnnAddTensor on FP32 data; native adds it in a pass)
    // Backward data of a forward convolution whose filter is [K = C_in, C = C_out/g, R, S]: exactly PyTorch's
    // ConvTranspose2d weight layout, so FP32 runs use the weights as they are; native runs convert them once to the
    // NHWC filter format [C_in, R, S, C_out/g] of the storage type.
    d.w.set(fmt, l.cin, l.cout / l.groups, l.kernel[0], l.kernel[1], type);
    d.conv.set(l.padH, l.padW, l.stride[0], l.stride[1], l.dilation[0], l.dilation[1], l.groups);
    d.conv.setMath(math);
}

std::optional<BwdDataChoice> findBwdData(
    cudnnHandle_t h, ConvTransposeDescriptors& d, const ConvOptions& o, const void* w, const void* dy, void* dx)
{
    gpu::DeviceBuffer ws = findWorkspace(o.workspaceLimit);
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT] = {};
    int returned = 0;
    CONVSCOPE_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w.get(), w, d.dy.get(), dy, d.conv.get(),
        d.dx.get(), dx, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf, ws.get(), ws.bytes()));
    for (int i = 0; i < returned; ++i) {
        const auto& p = perf[i];
        if (p.status != CUDNN_STATUS_SUCCESS || p.memory > o.workspaceLimit || !acceptable(p.mathType, o.math))
            continue;
        BwdDataChoice c { p.algo, p.mathType, p.memory, false };
        d.conv.setMath(c.math);
        return c;
    }
    return std::nullopt;
}

BwdDataChoice chooseBwdData(cudnnHandle_t h, const ConvTransposeLayout& l, ConvTransposeDescriptors& d,
    const ConvOptions& o, const void* w, const void* dy, void* dx)
{
    std::ostringstream k;
    k << "bwd " << mathKey(o) << (l.native ? " native " : " nchw ") << dtypeName(l.storage) << " " << l.n << ","
      << l.cin << "," << l.in[0] << "," << l.in[1] << " → " << l.cout << "," << l.fullH << "," << l.fullW << " "
      << l.kernel[0] << "x" << l.kernel[1] << " s" << l.stride[0] << "," << l.stride[1] << " d" << l.dilation[0] << ","
      << l.dilation[1] << " g" << l.groups << " p" << l.padH << "," << l.padW << " ws" << o.workspaceLimit;
    const std::string key = k.str();
    if (auto cached = g_bwdCache.find(key)) {
        d.conv.setMath(cached->math);
        return *cached;
    }
    if (auto found = findBwdData(h, d, o, w, dy, dx)) {
        g_bwdCache.store(key, *found);
        return *found;
    }
    BwdDataChoice c;
    c.math = mathTypeFor(o.math);
    d.conv.setMath(c.math);
    CONVSCOPE_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, d.w.get(), d.dy.get(), d.conv.get(), d.dx.get(), c.algo, &c.workspace));
    return c;
}

} // namespace convscope::cudnn
