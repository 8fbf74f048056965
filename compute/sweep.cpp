#include "compute/sweep.h"

#include "compute/error.h"
#include "compute/load_input.h"
#include "compute/materialize.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"

#include <cmath>

namespace convscope {

namespace {
    Conv2d* convAt(Network& net, size_t layer, const char* what)
    {
        if (layer >= net.layers.size())
            throw InputError("sweep: layer " + std::to_string(layer) + " does not exist");
        auto* c = std::get_if<Conv2d>(&net.layers[layer].spec);
        if (!c)
            throw InputError("sweep: " + std::string(what) + " needs a conv2d layer; layer " + std::to_string(layer)
                + " (" + net.layers[layer].name + ") is " + layerTypeName(net.layers[layer].spec));
        return c;
    }

} // namespace

std::string sweepParameterName(SweepParameter p)
{
    switch (p) {
    case SweepParameter::InputSize:
        return "input size";
    case SweepParameter::InChannels:
        return "in channels";
    case SweepParameter::OutChannels:
        return "out channels";
    case SweepParameter::KernelSize:
        return "kernel size";
    case SweepParameter::Stride:
        return "stride";
    case SweepParameter::Dilation:
        return "dilation";
    case SweepParameter::Batch:
        return "batch";
    }
    return "?";
}

std::vector<SweepParameter> allSweepParameters()
{
    return { SweepParameter::InputSize, SweepParameter::InChannels, SweepParameter::OutChannels,
        SweepParameter::KernelSize, SweepParameter::Stride, SweepParameter::Dilation, SweepParameter::Batch };
}

SweepSpec SweepSpec::range(size_t layer, SweepParameter p, int64_t from, int64_t to, int64_t step, bool doubling)
{
    if (from < 1 || to < from || (!doubling && step < 1))
        throw InputError("sweep: the range must be 1 ≤ from ≤ to with a positive step");
    SweepSpec s;
    s.layer = layer;
    s.parameter = p;
    s.title = "time against " + sweepParameterName(p);
    for (int64_t v = from; v <= to; v = doubling ? v * 2 : v + step) {
        s.points.push_back({ double(v), {}, { { p, v } } });
        if (s.points.size() > 64)
            throw InputError("sweep: more than 64 values; use a larger step");
    }
    return s;
}

std::vector<std::string> sweepPresetNames() { return { "unet-channels", "crossover", "kernel-size" }; }

const std::vector<UnetEncoderCase>& unetEncoderCases()
{
    static const std::vector<UnetEncoderCase> cases
        = { { 3, 64, 512 }, { 64, 64, 512 }, { 64, 128, 256 }, { 128, 128, 256 }, { 128, 256, 128 }, { 256, 256, 128 },
              { 256, 512, 64 }, { 512, 512, 64 }, { 512, 1024, 32 }, { 1024, 1024, 32 } };
    return cases;
}

SweepSpec sweepPreset(const std::string& name, const std::string& points)
{
    SweepSpec s;
    if (name == "unet-channels") {
        s.title = "U-Net encoder channel sweep";
        s.parameter = SweepParameter::OutChannels;
        s.network = singleConvNetwork("unet-encoder sweep", 4, 3, 512, 64, 3, 1, 1, 7);
        int i = 0;
        for (const UnetEncoderCase& c : unetEncoderCases())
            s.points.push_back({ double(i++),
                std::to_string(c.cin) + "→" + std::to_string(c.cout) + " @" + std::to_string(c.size) + "²",
                { { SweepParameter::InChannels, c.cin }, { SweepParameter::OutChannels, c.cout },
                    { SweepParameter::InputSize, c.size } } });
        s.selections
            = { { "cpu", "im2col_gemm" }, { "cuda", "implicit_gemm" }, { "cuda", "winograd" }, { "cudnn", "auto" } };
        s.note = "the unet-encoder suite of convscope-cli bench: batch 4, 3×3 convolutions, padding 1; channels double "
                 "as the image halves, and Winograd's saving grows with them";
    } else if (name == "crossover") {
        s.title = "GPU against CPU as the input grows";
        s.parameter = SweepParameter::InputSize;
        s.network = singleConvNetwork("crossover", 1, 32, 64, 32, 3, 1, 1, 7);
        for (int64_t v : { 8, 16, 32, 64, 128, 256, 512 })
            s.points.push_back({ double(v), {}, { { SweepParameter::InputSize, v } } });
        s.selections = { { "cpu", "im2col_gemm" }, { "cuda", "implicit_gemm" }, { "cudnn", "auto" } };
        s.note = "one 3×3 convolution 32→32; solid lines count only compute, dashed lines add the copies to and from "
                 "the device: the GPU wins later once the copies count";
    } else if (name == "kernel-size") {
        s.title = "time against kernel size on a large image";
        s.parameter = SweepParameter::KernelSize;
        s.network = singleConvNetwork("kernel-size sweep", 1, 16, 512, 16, 3, 1, 1, 7);
        for (int64_t k : { 1, 3, 5, 7, 9, 11, 13, 15, 21, 31 })
            s.points.push_back({ double(k), {}, { { SweepParameter::KernelSize, k } } });
        s.selections = { { "cpu", "im2col_gemm" }, { "cpu", "fft" }, { "cuda", "implicit_gemm" }, { "cuda", "fft" },
            { "cudnn", "implicit_gemm" }, { "cudnn", "fft" }, { "cudnn", "fft_tiling" }, { "cudnn", "auto" } };
        s.note = "16→16 channels on 512×512, padding k/2: direct and GEMM methods grow with k², the FFT ones (ours on "
                 "the CPU and the GPU, cuDNN's) barely do; where the lines cross, FFT starts to win";
    } else {
        throw InputError("unknown sweep preset \"" + name + "\" (unet-channels, crossover, kernel-size)");
    }
    if (!points.empty()) {
        const auto dash = points.find('-');
        const size_t a = std::stoul(points.substr(0, dash));
        const size_t b = dash == std::string::npos ? a : std::stoul(points.substr(dash + 1));
        if (a > b || b >= s.points.size())
            throw InputError(
                "sweep preset " + name + ": points " + points + " outside 0-" + std::to_string(s.points.size() - 1));
        s.points = std::vector<SweepPoint>(s.points.begin() + long(a), s.points.begin() + long(b) + 1);
    }
    return s;
}

Network applySweepPoint(const Network& base, size_t layer, const SweepPoint& point)
{
    Network net = base;
    for (const auto& [p, v] : point.settings) {
        if (v < 1)
            throw InputError("sweep: " + sweepParameterName(p) + " must be at least 1");
        switch (p) {
        case SweepParameter::InputSize:
            net.input.height = net.input.width = v;
            break;
        case SweepParameter::Batch:
            net.input.batch = v;
            break;
        case SweepParameter::InChannels:
            // The layer's input channels are its predecessor's output: the input itself, or a conv before it.
            if (layer == 0)
                net.input.channels = v;
            else
                convAt(net, layer - 1, "in channels")->out_channels = v;
            break;
        case SweepParameter::OutChannels:
            convAt(net, layer, "out channels")->out_channels = v;
            break;
        case SweepParameter::KernelSize: {
            Conv2d* c = convAt(net, layer, "kernel size");
            // Padding that kept the size ("same" by hand, k/2) keeps doing so.
            const bool keepsSize = c->padding.isSymmetric() && c->padding.top == c->kernel_size[0] / 2
                && c->padding.left == c->kernel_size[1] / 2;
            c->kernel_size = { v, v };
            if (keepsSize)
                c->padding = Padding2d::symmetric(v / 2, v / 2);
            break;
        }
        case SweepParameter::Stride:
            convAt(net, layer, "stride")->stride = { v, v };
            break;
        case SweepParameter::Dilation:
            convAt(net, layer, "dilation")->dilation = { v, v };
            break;
        }
    }
    return net;
}

SweepResult runSweep(const Network& base, const SweepSpec& spec, const SweepOptions& options)
{
    SweepResult out;
    out.spec = spec;
    out.selections = options.selections;
    out.warmup = options.warmup;
    out.repeat = options.repeat;
    out.mathMode = mathModeName(options.session.math);
    const Network& start = spec.network ? *spec.network : base;
    for (size_t p = 0; p < spec.points.size(); ++p) {
        std::vector<SweepSample> row(options.selections.size());
        try {
            Network net = applySweepPoint(start, spec.layer, spec.points[p]);
            const ShapeReport shapes = inferShapes(net);
            if (!shapes.ok())
                throw InputError(shapes.firstError());
            materializeParameters(net, shapes);
            const Tensor input = loadInput(net.input, net.baseDir);
            ProfileOptions po;
            po.selections = options.selections;
            po.warmup = options.warmup;
            po.repeat = std::max(1, options.repeat);
            po.reference.reset(); // a sweep measures time; correctness is the test suite's and the run's job
            po.session = options.session;
            po.cancel = options.cancel;
            const RunResult r = profile(std::move(net), input, po);
            for (size_t s = 0; s < r.selections.size() && s < row.size(); ++s) {
                const SelectionResult& sel = r.selections[s];
                SweepSample& x = row[s];
                x.ok = sel.ok && spec.layer < sel.layers.size();
                x.failure = sel.failure;
                if (!x.ok)
                    continue;
                x.layerMs = sel.layers[spec.layer].computeMs;
                x.flops = r.shapes.layers[spec.layer].cost.flops;
                for (const auto& l : sel.layers)
                    x.networkComputeMs += l.computeMs.median;
                x.networkWithCopiesMs = sel.totalMs.median;
            }
        } catch (const Cancelled&) {
            throw;
        } catch (const std::exception& e) {
            for (auto& x : row) {
                x.ok = false;
                x.failure = e.what();
            }
        }
        out.samples.push_back(std::move(row));
        if (options.pointDone)
            options.pointDone(out, double(p + 1) / double(spec.points.size()));
    }
    return out;
}

} // namespace convscope
