#include "kernels/cudnn/volume_plan.h"

#include "compute/error.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/cudnn/choice_cache.h"

#include <algorithm>
#include <sstream>
#include <vector>

namespace convscope::cudnn {

namespace {
    ChoiceCache<Conv3dChoice> g_conv3dCache;
    ChoiceCache<BwdDataChoice> g_bwd3dCache;

    constexpr int kRetimeRuns = 5;

    // FP32 must never run on tensor cores: with float data DEFAULT_MATH and the TENSOR_OP types may use TF32. The
    // other modes ask for tensor cores and accept any math type cuDNN picks (as conv_plan.cpp's rule).
    bool acceptable(cudnnMathType_t m, MathMode mode) { return mode != MathMode::FP32 || m == CUDNN_FMA_MATH; }

    // "tf32 native fp16 " / "fp32 nchw fp32 ": what a cached choice depends on besides the sizes.
    std::string modeKey(const ConvOptions& o, bool native, DType storage)
    {
        return std::string(mathModeName(o.math)) + (native ? " native " : " nchw ") + dtypeName(storage) + " ";
    }

    std::string key(const Conv3dLayout& l, const ConvOptions& o)
    {
        std::ostringstream k;
        k << modeKey(o, l.native, l.storage) << l.n << "," << l.cin << "," << l.pd << "," << l.ph << "," << l.pw
          << " → " << l.cout << "," << l.out[0] << "," << l.out[1] << "," << l.out[2] << " " << l.kernel[0] << "x"
          << l.kernel[1] << "x" << l.kernel[2] << " s" << l.stride[0] << "," << l.stride[1] << "," << l.stride[2]
          << " d" << l.dilation[0] << "," << l.dilation[1] << "," << l.dilation[2] << " p" << l.cudnnPad[0] << ","
          << l.cudnnPad[1] << "," << l.cudnnPad[2] << " g" << l.groups << " ws" << o.workspaceLimit;
        return k.str();
    }

    double medianOf(std::vector<double> v)
    {
        std::sort(v.begin(), v.end());
        return v.empty() ? -1 : 0.5 * (v[(v.size() - 1) / 2] + v[v.size() / 2]);
    }
} // namespace

size_t Conv3dLayout::paddedFloats() const { return padStep ? size_t(n) * cin * pd * ph * pw : 0; }

Conv3dLayout conv3dLayout(const Conv3d& spec, const LayerShape& shape, std::optional<DType> native)
{
    Conv3dLayout l {};
    static_cast<ConvGeometry<3>&>(l) = convGeometry(spec, shape);
    l.native = native.has_value();
    l.storage = native.value_or(DType::F32);
    l.pad = shape.resolvedPadding3d;
    l.padStep = l.pad.front != l.pad.back || l.pad.top != l.pad.bottom || l.pad.left != l.pad.right;
    const int before[3] = { toInt(l.pad.front, "padding"), toInt(l.pad.top, "padding"), toInt(l.pad.left, "padding") };
    for (int a = 0; a < 3; ++a)
        l.cudnnPad[a] = l.padStep ? 0 : before[a];
    l.pd = l.padStep ? toInt(shape.in.d + l.pad.front + l.pad.back, "padded depth") : l.in[0];
    l.ph = l.padStep ? toInt(shape.in.h + l.pad.top + l.pad.bottom, "padded height") : l.in[1];
    l.pw = l.padStep ? toInt(shape.in.w + l.pad.left + l.pad.right, "padded width") : l.in[2];
    return l;
}

void describe(const Conv3dLayout& l, cudnnMathType_t math, Conv3dDescriptors& d)
{
    const cudnnDataType_t type = cudnnType(l.storage);
    d.x.set5d(l.n, l.cin, l.pd, l.ph, l.pw, l.native, type);
    d.y.set5d(l.n, l.cout, l.out[0], l.out[1], l.out[2], l.native, type);
    // cudnnConvolutionBiasActivationForward takes the bias in the output's type (FP16 / BF16 with FP32 compute).
    d.bias.set5d(1, l.cout, 1, 1, 1, false, type);
    d.w.set5d(l.cout, l.cin / l.groups, l.kernel[0], l.kernel[1], l.kernel[2], l.native, type);
    d.conv.set3d(l.cudnnPad, l.stride.data(), l.dilation.data(), l.groups);
    d.conv.setMath(math);
    int out[5] = {};
    CONVSCOPE_CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(d.conv.get(), d.x.get(), d.w.get(), 5, out));
    if (out[0] != l.n || out[1] != l.cout || out[2] != l.out[0] || out[3] != l.out[1] || out[4] != l.out[2])
        throw Error("cudnn: conv3d output size mismatch: cuDNN computes [" + std::to_string(out[0]) + ", "
            + std::to_string(out[1]) + ", " + std::to_string(out[2]) + ", " + std::to_string(out[3]) + ", "
            + std::to_string(out[4]) + "], shape inference [" + std::to_string(l.n) + ", " + std::to_string(l.cout)
            + ", " + std::to_string(l.out[0]) + ", " + std::to_string(l.out[1]) + ", " + std::to_string(l.out[2])
            + "]");
}

Conv3dChoice chooseConv3d(cudnnHandle_t h, const Conv3dLayout& l, Conv3dDescriptors& d, const ConvOptions& o,
    std::optional<cudnnConvolutionFwdAlgo_t> pinned, const void* x, const void* w, void* y, cudaStream_t stream)
{
    if (pinned) {
        Conv3dChoice c;
        c.algo = *pinned;
        c.math = mathTypeFor(o.math);
        d.conv.setMath(c.math);
        const cudnnStatus_t st = cudnnGetConvolutionForwardWorkspaceSize(
            h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), c.algo, &c.workspace);
        if (st != CUDNN_STATUS_SUCCESS)
            throw UnsupportedError("cudnn." + algorithmName(c.algo) + " cannot run this conv3d (unsupported"
                + (l.native ? std::string(" on ") + dtypeName(l.storage) + " NDHWC tensors" : std::string())
                + "): " + reason(st));
        if (c.workspace > o.workspaceLimit)
            throw UnsupportedError("cudnn." + algorithmName(c.algo) + " needs " + gpu::mib(c.workspace)
                + " of workspace for this conv3d, more than the limit of " + gpu::mib(o.workspaceLimit)
                + " (unsupported; raise it with --option workspace_limit=BYTES)");
        return c;
    }
    const std::string k = key(l, o);
    if (auto cached = g_conv3dCache.find(k)) {
        d.conv.setMath(cached->math);
        return *cached;
    }
    gpu::DeviceBuffer ws = findWorkspace(o.workspaceLimit);
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT * 2);
    int returned = 0;
    CONVSCOPE_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(h, d.x.get(), x, d.w.get(), w, d.conv.get(), d.y.get(),
        y, int(perf.size()), &returned, perf.data(), ws.get(), ws.bytes()));
    perf.resize(size_t(std::max(returned, 0)));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> candidates;
    for (const auto& p : perf) {
        if (p.status != CUDNN_STATUS_SUCCESS || p.memory > o.workspaceLimit || p.memory > ws.bytes()
            || !acceptable(p.mathType, o.math))
            continue;
        if (!candidates.empty() && (p.time > 1.5f * candidates.front().time || candidates.size() >= 4))
            break;
        candidates.push_back(p);
    }
    if (candidates.empty())
        throw Error("cudnn.auto: no cuDNN algorithm runs this conv3d in " + std::string(mathModeName(o.math))
            + (l.native ? std::string(" on ") + dtypeName(l.storage) + " NDHWC tensors" : std::string())
            + " within the workspace limit of " + gpu::mib(o.workspaceLimit));
    // Find measures each algorithm once; the choice is the lowest median of our own timing, as conv2d's auto.
    Conv3dChoice best;
    const float one = 1.0f, zero = 0.0f;
    gpu::CudaEvent start, stop;
    for (const auto& p : candidates) {
        d.conv.setMath(p.mathType);
        auto run = [&] {
            CONVSCOPE_CUDNN_CHECK(cudnnConvolutionForward(
                h, &one, d.x.get(), x, d.w.get(), w, d.conv.get(), p.algo, ws.get(), p.memory, &zero, d.y.get(), y));
        };
        run(); // warm-up
        std::vector<double> times;
        for (int r = 0; r < kRetimeRuns; ++r) {
            start.record(stream);
            run();
            stop.record(stream);
            CONVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
            times.push_back(gpu::elapsedMs(start, stop));
        }
        const double ms = medianOf(times);
        if (best.ms < 0 || ms < best.ms) {
            best.algo = p.algo;
            best.math = p.mathType;
            best.workspace = p.memory;
            best.ms = ms;
        }
    }
    best.timed = int(candidates.size());
    d.conv.setMath(best.math);
    g_conv3dCache.store(k, best);
    return best;
}

std::string conv3dPinnedRefusal(
    cudnnHandle_t h, const Conv3dLayout& l, const ConvOptions& o, cudnnConvolutionFwdAlgo_t algo)
{
    Conv3dDescriptors d;
    describe(l, mathTypeFor(o.math), d);
    try {
        chooseConv3d(h, l, d, o, algo, nullptr, nullptr, nullptr, nullptr);
    } catch (const UnsupportedError& e) {
        return e.what();
    }
    return {};
}

// --- conv_transpose3d ---------------------------------------------------------------------------------------------

size_t ConvTranspose3dLayout::fullFloats() const { return size_t(n) * cout * fd * fh * fw; }

ConvTranspose3dLayout convTranspose3dLayout(
    const ConvTranspose3d& spec, const LayerShape& shape, std::optional<DType> native)
{
    ConvTranspose3dLayout l {};
    static_cast<ConvGeometry<3>&>(l) = convGeometry(spec, shape);
    l.native = native.has_value();
    l.storage = native.value_or(DType::F32);
    // The full transposed output: every input voxel's whole kernel footprint, nothing cropped.
    int full[3];
    for (size_t a = 0; a < 3; ++a)
        full[a] = toInt(
            int64_t(l.in[a] - 1) * l.stride[a] + int64_t(l.dilation[a]) * (l.kernel[a] - 1) + 1, "full output size");
    l.fd = full[0], l.fh = full[1], l.fw = full[2];
    const Padding3d& p = shape.resolvedPadding3d;
    l.offD = toInt(p.front, "padding");
    l.offH = toInt(p.top, "padding");
    l.offW = toInt(p.left, "padding");
    return l;
}

void describe(const ConvTranspose3dLayout& l, cudnnMathType_t math, ConvTranspose3dDescriptors& d)
{
    const cudnnDataType_t type = cudnnType(l.storage);
    d.dy.set5d(l.n, l.cin, l.in[0], l.in[1], l.in[2], l.native, type);
    d.dx.set5d(l.n, l.cout, l.fd, l.fh, l.fw, l.native, type);
    d.w.set5d(l.cin, l.cout / l.groups, l.kernel[0], l.kernel[1], l.kernel[2], l.native, type);
    const int zero[3] = { 0, 0, 0 };
    d.conv.set3d(zero, l.stride.data(), l.dilation.data(), l.groups);
    d.conv.setMath(math);
}

BwdDataChoice chooseBwdData3d(cudnnHandle_t h, const ConvTranspose3dLayout& l, ConvTranspose3dDescriptors& d,
    const ConvOptions& o, const void* w, const void* dy, void* dx)
{
    std::ostringstream k;
    k << "bwd3d " << modeKey(o, l.native, l.storage) << l.n << "," << l.cin << "," << l.in[0] << "," << l.in[1] << ","
      << l.in[2] << " → " << l.cout << "," << l.fd << "," << l.fh << "," << l.fw << " " << l.kernel[0] << "x"
      << l.kernel[1] << "x" << l.kernel[2] << " s" << l.stride[0] << "," << l.stride[1] << "," << l.stride[2] << " d"
      << l.dilation[0] << "," << l.dilation[1] << "," << l.dilation[2] << " g" << l.groups << " ws" << o.workspaceLimit;
    if (auto cached = g_bwd3dCache.find(k.str())) {
        d.conv.setMath(cached->math);
        return *cached;
    }
    // findBwdData's math rule is this file's `acceptable`.
    if (auto found = findBwdData(h, d, o, w, dy, dx)) {
        g_bwd3dCache.store(k.str(), *found);
        return *found;
    }
    throw Error("cudnn: no backward-data algorithm runs this conv_transpose3d in " + std::string(mathModeName(o.math))
        + (l.native ? std::string(" on ") + dtypeName(l.storage) + " NDHWC tensors" : std::string())
        + " within the workspace limit of " + gpu::mib(o.workspaceLimit));
}

// --- pools --------------------------------------------------------------------------------------------------------

namespace {
    // cuDNN's Nd pooling: symmetric padding and the floor formula. PyTorch's output equals it then, except where
    // ceil_mode added a window (the size tells) — dilation and divisor_override are checked by the callers.
    std::string windowRefusal(const Triple& kernel, const Triple& stride, const LayerShape& s)
    {
        const Padding3d& p = s.resolvedPadding3d;
        if (p.front != p.back || p.top != p.bottom || p.left != p.right)
            return "asymmetric padding (cuDNN pads both sides equally)";
        const int64_t in[3] = { s.in.d, s.in.h, s.in.w }, out[3] = { s.out.d, s.out.h, s.out.w };
        const int64_t before[3] = { p.front, p.top, p.left };
        for (int a = 0; a < 3; ++a)
            if ((in[a] + 2 * before[a] - kernel[size_t(a)]) / stride[size_t(a)] + 1 != out[a])
                return "ceil_mode adds a window cuDNN's floor formula does not have";
        return {};
    }
} // namespace

std::string pool3dRefusal(const MaxPool3d& spec, const LayerShape& shape)
{
    if (spec.dilation != Triple { 1, 1, 1 })
        return "dilation (cuDNN's pooling has none)";
    return windowRefusal(spec.kernel_size, spec.effectiveStride(), shape);
}

std::string pool3dRefusal(const AvgPool3d& spec, const LayerShape& shape)
{
    if (spec.divisor_override)
        return "divisor_override (cuDNN divides by the window)";
    return windowRefusal(spec.kernel_size, spec.effectiveStride(), shape);
}

} // namespace convscope::cudnn
