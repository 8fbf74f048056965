// The onednn backend: Intel's oneDNN (Debian's libdnnl, API v2.x) as the CPU library baseline, the CPU
// counterpart of cuDNN. A loadable module (libconvscope_onednn.so) like the GPU ones, so ConvScope starts
// without libdnnl installed.
//
// What each layer kind runs on is in onednn_plan.cpp; the precision a session computes in, onednn_precision.cpp; the
// training session (createTrainingSession: oneDNN's backward primitives, the CPU's code for the rest),
// onednn_training.h.
//
// Layout: every layer takes and gives NCHW like every other backend, so layers chain and can be compared: float32,
// or the half-precision format of a --math bf16 / fp16 session, whose pass converts the input from FP32 once (timed
// as the pass's h2d step) and whose fetchOutput() converts a layer's output back to FP32 (onednn_precision.h).
// Convolutions and inner products let oneDNN choose its layouts (format_tag::any, usually nChw16c blocks); the
// activation reorders into and out of them run inside the timed layer (a caller with NCHW data pays them too) and are
// named in the layer note. Weights are reordered (and converted) once, in prepare().
// Primitive creation is untimed (prepare()); a pass only executes the primitives.
//
// NaN: oneDNN 2.6's max pooling skips a NaN and its ReLU maps NaN to 0, where PyTorch propagates it; the only
// difference on finite data is rounding (checked by tests/onednn against cpu.direct).
//
// Threads: Debian's libdnnl runs on OpenMP (libgomp), the one pool of the CPU side (compute/cpu_threads.h): every
// prepare and pass sizes this thread's team to cpuThreadCount(), as the cpu backend's sessions do.
#include "backends/onednn/onednn_plan.h"
#include "backends/onednn/onednn_precision.h"
#include "backends/onednn/onednn_training.h"
#include "compute/backend.h"
#include "compute/backend_registry.h"
#include "compute/cpu/layer_clock.h"
#include "compute/cpu_features.h"
#include "compute/cpu_threads.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/linear_geometry.h"
#include "compute/nvtx.h"

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <unordered_map>
#include <variant>

namespace convscope::onednn {

namespace {

    const char* const kAuto = "auto";

    std::string versionString()
    {
        const dnnl_version_t* v = dnnl_version();
        return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) + " ("
            + (v->hash ? v->hash : "") + ")";
    }

    std::string cpuModelName()
    {
        std::ifstream cpuinfo("/proc/cpuinfo");
        std::string line;
        while (std::getline(cpuinfo, line))
            if (line.rfind("model name", 0) == 0) {
                const auto colon = line.find(':');
                if (colon != std::string::npos && colon + 2 <= line.size())
                    return line.substr(colon + 2);
            }
        return "unknown CPU";
    }

    // A parameter tensor of the network, wrapped without a copy (oneDNN only reads it).
    memory wrap(const memory::desc& d, const dnnl::engine& e, const std::shared_ptr<const Tensor>& t)
    {
        return memory(d, e, const_cast<float*>(t->data()));
    }

    // One activation in the session's storage type (f32, or bf16 / f16 in the half-precision modes): raw bytes,
    // 64-byte aligned (a cache line, what oneDNN's own allocations use).
    class Buffer {
    public:
        explicit Buffer(size_t bytes)
            : m_data(static_cast<std::byte*>(std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64)))
        {
            if (!m_data)
                throw std::bad_alloc();
        }
        void* data() const { return m_data.get(); }

    private:
        struct Free {
            void operator()(std::byte* p) const { std::free(p); }
        };
        std::unique_ptr<std::byte[], Free> m_data;
    };

    struct Step {
        dnnl::primitive primitive;
        std::unordered_map<int, memory> args;
    };

    struct LayerRun {
        std::vector<Step> steps; // [src reorder], the op, [dst reorder]
        memory src; // NCHW view of the layer's (first) input: the pass input or an earlier layer's output
        std::vector<memory> srcs; // multi-input layers: one NCHW view per input, in the primitive's order
        std::vector<int> srcSources; // the layer each of `srcs` reads (-1: the pass input)
        bool flatten = false;
        std::string note;
    };

    // A parameter tensor of `layer` for a descriptor of FP32 values: there, and of the descriptor's size.
    const std::shared_ptr<const Tensor>& checkedParam(
        const Layer& layer, const std::shared_ptr<const Tensor>& t, const memory::desc& desc)
    {
        if (!t)
            throw Error("onednn: layer " + layer.name + " has a missing parameter tensor");
        if (t->numel() != int64_t(desc.get_size() / sizeof(float)))
            throw InputError("onednn: layer " + layer.name + ": a parameter has " + std::to_string(t->numel())
                + " values, the layer needs " + std::to_string(desc.get_size() / sizeof(float)));
        return t;
    }

    std::string layerLabel(const Layer& layer, size_t i)
    {
        return "onednn.auto · L" + std::to_string(i) + " " + layerSummary(layer.spec);
    }

    class OnednnSession final : public BackendSession {
    public:
        explicit OnednnSession(const SessionOptions& options)
            : m_options(options)
            , m_act(storageType(options.math))
            , m_clock(options)
            , m_engine(dnnl::engine::kind::cpu, 0)
            , m_stream(m_engine)
        {
        }

        void prepare(const Network& net, const ShapeReport& shapes) override
        {
            if (!shapes.ok())
                throw InputError("onednn: the network has a shape error: " + shapes.firstError());
            if (shapes.layers.size() != net.layers.size())
                throw Error("onednn: the shape report does not belong to this network");
            enterCpuThreadPolicy(); // oneDNN runs on this thread's OpenMP team: the one pool of the CPU side
            m_layers = net.layers;
            m_shapes = shapes;
            m_outputs.clear();
            m_runs.clear();
            m_names.clear();
            m_owned.clear();
            const size_t elem = memory::data_type_size(m_act);
            // "poison_outputs" (the tests): every byte 0xFF, a NaN in f32, bf16 and f16, so an unwritten element shows.
            const auto poison = m_options.extra.find("poison_outputs");
            for (const LayerShape& s : shapes.layers) {
                m_outputs.emplace_back(size_t(s.out.numel()) * elem);
                if (poison != m_options.extra.end() && poison->second == "1")
                    std::memset(m_outputs.back().data(), 0xFF, size_t(s.out.numel()) * elem);
            }
            if (half()) {
                // The pass input, converted from FP32 once at the start of each pass (runPass).
                const memory::desc flat({ shapes.input.numel() }, m_act, Tag::x);
                m_input = memory(flat, m_engine);
                m_inputF32 = memory(memory::desc({ shapes.input.numel() }, kF32, Tag::x), m_engine, nullptr);
                m_convertInput = dnnl::reorder(m_inputF32, m_input);
            }
            for (size_t i = 0; i < m_layers.size(); ++i) {
                try {
                    m_runs.push_back(build(i));
                } catch (const dnnl::error& e) {
                    throw UnsupportedError("onednn: layer " + m_layers[i].name + " (" + layerTypeName(m_layers[i].spec)
                        + "): " + e.what() + " (dnnl status " + std::to_string(int(e.status)) + ")");
                }
                m_names.push_back(layerLabel(m_layers[i], i));
            }
            m_prepared = true;
            m_ran = false;
        }

        PassTiming runPass(const Tensor& input) override
        {
            if (!m_prepared)
                throw Error("onednn: runPass called before prepare");
            enterCpuThreadPolicy();
            const Shape& want = m_shapes.input;
            const Shape& got = input.shape();
            if (got.n != want.n || got.c != want.c || got.d != want.d || got.h != want.h || got.w != want.w)
                throw InputError("onednn: the input is " + got.str() + " but the network expects " + want.str());
            PassTiming timing;
            if (half()) {
                // FP32 → the storage type, once per pass: the CPU's counterpart of a GPU session's upload, timed as it.
                const double start = m_clock.nowMs();
                m_inputF32.set_data_handle(const_cast<float*>(input.data()));
                m_convertInput.execute(m_stream, m_inputF32, m_input);
                m_stream.wait();
                timing.h2dMs = m_clock.nowMs() - start;
            }
            const void* pass = half() ? m_input.get_data_handle() : input.data();
            const auto source = [&](int k) { return k < 0 ? pass : m_outputs[size_t(k)].data(); };
            for (size_t i = 0; i < m_runs.size(); ++i) {
                LayerRun& run = m_runs[i];
                const void* src = source(m_shapes.layers[i].sources.at(0));
                const nvtx::Range range(m_names[i], "onednn");
                const double start = m_clock.nowMs();
                if (run.flatten) {
                    std::memcpy(m_outputs[i].data(), src,
                        size_t(m_shapes.layers[i].out.numel()) * memory::data_type_size(m_act));
                } else {
                    if (run.srcs.empty())
                        run.src.set_data_handle(const_cast<void*>(src));
                    for (size_t k = 0; k < run.srcs.size(); ++k)
                        run.srcs[k].set_data_handle(const_cast<void*>(source(run.srcSources[k])));
                    for (Step& step : run.steps)
                        step.primitive.execute(m_stream, step.args);
                    m_stream.wait();
                }
                timing.layerMs.push_back(m_clock.nowMs() - start);
            }
            m_ran = true;
            return timing;
        }

        Tensor fetchOutput(size_t layer, double* ms) override
        {
            if (layer >= m_outputs.size())
                throw Error("onednn: no layer " + std::to_string(layer));
            if (!m_ran)
                throw Error("onednn: fetchOutput called before a pass has run");
            const auto start = std::chrono::steady_clock::now();
            Tensor copy(m_shapes.layers[layer].out);
            if (half()) { // back to FP32, the layout stays plain
                const memory::dims flat { copy.numel() };
                memory stored(memory::desc(flat, m_act, Tag::x), m_engine, m_outputs[layer].data());
                memory wide(memory::desc(flat, kF32, Tag::x), m_engine, copy.data());
                dnnl::reorder(stored, wide).execute(m_stream, stored, wide);
                m_stream.wait();
            } else {
                std::memcpy(copy.data(), m_outputs[layer].data(), size_t(copy.numel()) * sizeof(float));
            }
            if (ms)
                *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            return copy;
        }

        std::string layerNote(size_t layer) const override
        {
            return layer < m_runs.size() ? m_runs[layer].note : std::string();
        }

        std::map<std::string, std::string> metadata() const override
        {
            const std::string stored = !half() ? "fp32" : m_act == memory::data_type::bf16 ? "bf16" : "fp16";
            std::map<std::string, std::string> meta { { "device", cpuModelName() },
                { "threads", std::to_string(cpuThreadCount()) }, { "onednn", versionString() }, { "isa", isaName() },
                { "clock", m_clock.name() }, { "math", mathDescription(m_options.math) },
                { "storage", stored + " NCHW between layers" }, { "algorithm", "onednn.auto" } };
            if (half())
                meta["input_conversion"]
                    = "FP32 to " + stored + " once per pass, timed as the pass's host-to-device step";
            return meta;
        }

    private:
        LayerRun build(size_t i)
        {
            const Layer& layer = m_layers[i];
            const LayerShape& shape = m_shapes.layers[i];
            Plan plan = planLayer(&layer, layer.spec, shape, m_engine, m_act);
            LayerRun run;
            if (plan.flatten) {
                run.flatten = true;
                run.note = "copy";
                return run;
            }
            const Shape& in = shape.in;
            if (!plan.copies.empty()) { // gather: reorders from views of the input into the output, in order
                for (const Plan::Copy& c : plan.copies) {
                    run.srcs.push_back(memory(c.from, m_engine, nullptr));
                    run.srcSources.push_back(shape.sources.at(0));
                    const memory to(c.to, m_engine, m_outputs[i].data());
                    run.steps.push_back({ c.primitive, { { DNNL_ARG_FROM, run.srcs.back() }, { DNNL_ARG_TO, to } } });
                }
                run.note = plan.copiesNote;
                return run;
            }
            if (plan.multi) {
                // NCHW in and out, no reorders: the inputs are bound per pass (see runPass).
                std::unordered_map<int, memory> args;
                std::vector<int> order;
                for (size_t k = 0; k < shape.ins.size(); ++k)
                    order.push_back(int(k));
                if (plan.swapped)
                    std::swap(order[0], order[1]);
                for (size_t k = 0; k < order.size(); ++k) {
                    const int from = order[k];
                    run.srcs.push_back(memory(
                        plan.multiSrcs.empty() ? nchw(shape.ins[size_t(from)], m_act) : plan.multiSrcs.at(size_t(from)),
                        m_engine, nullptr));
                    run.srcSources.push_back(shape.sources.at(size_t(from)));
                    const int arg = !plan.multiArgs.empty() ? plan.multiArgs.at(k)
                        : plan.binary                       ? (k == 0 ? DNNL_ARG_SRC_0 : DNNL_ARG_SRC_1)
                                                            : DNNL_ARG_MULTIPLE_SRC + int(k);
                    args[arg] = run.srcs.back();
                }
                if (plan.constant) { // untimed: the FP32 constant in the activations' type, once
                    const memory::desc& d = plan.constant->desc;
                    const memory::desc f32(d.dims(), kF32, plainStrides(d.dims()));
                    const float* values = plan.constant->values ? plan.constant->values->data()
                                                                : checkedParam(layer, layer.weight, f32)->data();
                    memory user(f32, m_engine, const_cast<float*>(values));
                    memory held(d, m_engine);
                    dnnl::reorder(user, held).execute(m_stream, user, held);
                    m_stream.wait();
                    m_owned.push_back(held);
                    args[plan.constant->arg] = held;
                }
                args[DNNL_ARG_DST]
                    = memory(plan.multiDst ? *plan.multiDst : nchw(shape.out, m_act), m_engine, m_outputs[i].data());
                run.steps.push_back({ *plan.multiPrimitive, std::move(args) });
                run.note = plan.multiImpl;
                return run;
            }
            const dnnl::primitive_desc& pd = *plan.pd;
            const LinearRows rows = linearRows(in); // linear: [rows, in_features] → [rows, out_features]
            const memory::desc userSrc = plan.rowsDesc ? *plan.rowsDesc
                : plan.flatSrc                         ? memory::desc({ rows.rows, rows.inFeatures }, m_act, Tag::nc)
                : plan.volume                          ? ncdhw(in, m_act)
                                                       : nchw(in, m_act);
            const memory::desc userDst = plan.rowsDesc ? *plan.rowsDesc
                : plan.flatSrc
                ? memory::desc({ rows.rows, rows.rows ? shape.out.numel() / rows.rows : 0 }, m_act, Tag::nc)
                : plan.volume ? ncdhw(shape.out, m_act)
                              : nchw(shape.out, m_act);
            // The input's address is set per pass; start from any valid one.
            run.src = memory(userSrc, m_engine, nullptr);
            memory dst(userDst, m_engine, m_outputs[i].data());

            std::unordered_map<int, memory> args;
            std::string reorders;
            if (pd.src_desc() != userSrc) {
                memory inner(pd.src_desc(), m_engine);
                run.steps.push_back(
                    { dnnl::reorder(run.src, inner), { { DNNL_ARG_FROM, run.src }, { DNNL_ARG_TO, inner } } });
                args[DNNL_ARG_SRC] = inner;
                reorders += "src";
            } else {
                args[DNNL_ARG_SRC] = run.src;
            }
            memory innerDst = dst;
            if (pd.dst_desc() != userDst) {
                innerDst = memory(pd.dst_desc(), m_engine);
                reorders += reorders.empty() ? "dst" : " and dst";
            }
            args[DNNL_ARG_DST] = innerDst;
            for (size_t k = 0; k < plan.params.size(); ++k) {
                const auto& [arg, desc] = plan.params[k];
                memory user = wrap(desc, m_engine, checkedParam(layer, plan.paramData[k], desc));
                const memory::desc want = arg == DNNL_ARG_WEIGHTS ? pd.weights_desc() : desc;
                if (want != desc) { // untimed: weights into oneDNN's blocked layout (and type), once
                    memory packed(want, m_engine);
                    dnnl::reorder(user, packed).execute(m_stream, user, packed);
                    m_stream.wait();
                    m_owned.push_back(packed);
                    args[arg] = packed;
                } else {
                    args[arg] = user;
                }
            }
            run.steps.push_back({ dnnl::primitive(pd), std::move(args) });
            if (innerDst.get_data_handle() != dst.get_data_handle())
                run.steps.push_back(
                    { dnnl::reorder(innerDst, dst), { { DNNL_ARG_FROM, innerDst }, { DNNL_ARG_TO, dst } } });
            run.note = pd.impl_info_str();
            if (!reorders.empty())
                run.note += "; " + reorders + " reordered NCHW ↔ oneDNN layout (timed)";
            for (const Plan::InPlace& after : plan.after) { // on the output, in place (the norms' per-channel affine)
                const memory out(after.view, m_engine, m_outputs[i].data());
                std::unordered_map<int, memory> args2 { { DNNL_ARG_SRC_0, out }, { DNNL_ARG_DST, out } };
                for (size_t k = 0; k < after.params.size(); ++k) {
                    const auto& [arg, desc] = after.params[k];
                    args2[arg] = wrap(desc, m_engine, checkedParam(layer, after.paramData[k], desc));
                }
                run.steps.push_back({ after.primitive, std::move(args2) });
                run.note += "; then " + after.note;
            }
            return run;
        }

        bool half() const { return m_act != kF32; }

        SessionOptions m_options;
        memory::data_type m_act; // the activations' storage type (onednn_precision.h)
        cpu::LayerClock m_clock;
        dnnl::engine m_engine;
        dnnl::stream m_stream;
        std::vector<Layer> m_layers;
        ShapeReport m_shapes;
        std::vector<Buffer> m_outputs; // each layer's output, plain (NCHW / NCDHW / NC) in m_act
        memory m_input, m_inputF32; // half precision: the converted pass input and a view of the caller's FP32 one
        dnnl::reorder m_convertInput;
        std::vector<LayerRun> m_runs;
        std::vector<memory> m_owned;
        std::vector<std::string> m_names;
        bool m_prepared = false;
        bool m_ran = false;
    };

    class OnednnBackend final : public Backend {
    public:
        std::string name() const override { return "onednn"; }
        std::string description() const override { return "Intel oneDNN (the CPU library baseline)"; }
        std::vector<AlgorithmInfo> algorithms() const override
        {
            return { { kAuto, "oneDNN's own choice of implementation (convolution_auto), NCHW in and out" } };
        }
        Availability availability() const override
        {
            try {
                const dnnl::engine e(dnnl::engine::kind::cpu, 0);
                (void)e;
                return { true, {} };
            } catch (const std::exception& e) {
                return { false, std::string("oneDNN has no CPU engine: ") + e.what() };
            }
        }
        // Every primitive here sees a volume whole: the window ops of volumes through NCDHW descriptors, the others
        // through [N, C, D·H, W] (nchw()).
        bool takesVolumes(const LayerSpec&) const override { return true; }
        Support supports(const std::string& algorithm, const LayerSpec& spec, const LayerShape& shape) const override
        {
            if (algorithm != kAuto)
                return { false, "onednn has no algorithm \"" + algorithm + "\" (it has auto)" };
            if (!shape.ok)
                return { false, "onednn: the layer has a shape error" };
            try {
                const dnnl::engine e(dnnl::engine::kind::cpu, 0);
                planLayer(nullptr, spec, shape, e, kF32);
                return { true, {} };
            } catch (const UnsupportedError& e) {
                return { false, e.what() };
            } catch (const dnnl::error& e) {
                return { false, std::string("onednn: no implementation for this layer: ") + e.what() };
            }
        }
        std::unique_ptr<BackendSession> createSession(
            const std::string& algorithm, const SessionOptions& options) override
        {
            if (algorithm != kAuto)
                throw UnsupportedError("onednn." + algorithm + " is unsupported: the onednn backend has auto");
            if (const std::string why = whyNotNative(options.math); !why.empty())
                throw UnsupportedError(why);
            return std::make_unique<OnednnSession>(options);
        }
        // The training step (onednn_training.h): oneDNN's backward primitives where it has them, the CPU's training
        // code for the other layers; --math bf16 rounds the convolutions and linear layers as CPU autocast does.
        std::unique_ptr<TrainingSession> createTrainingSession(
            const std::string& algorithm, const SessionOptions& options) override
        {
            if (algorithm != kAuto)
                throw UnsupportedError("onednn." + algorithm + " is unsupported: the onednn backend has auto");
            // bf16 as PyTorch's CPU autocast where the CPU computes bf16 natively; tf32 is fp32 here, as in the
            // forward.
            if (options.math == MathMode::FP16)
                throw UnsupportedError("onednn.auto: training in fp16 is unsupported (oneDNN " + versionString()
                    + " has no f16 convolution backward on the CPU); train in bf16 or fp32");
            if (const std::string why = whyNotNative(options.math); !why.empty())
                throw UnsupportedError("onednn.auto training: " + why);
            // Under --math bf16, which primitive of each gradient runs (auto: the faster, timed at prepare).
            const auto choice = [&](const std::string& key, const char* what) {
                const auto pinned = options.extra.find(key);
                const std::string value = pinned == options.extra.end() ? "auto" : pinned->second;
                if (value != "auto" && value != "bf16" && value != "fp32")
                    throw InputError("onednn.auto: --option " + key + "=" + value
                        + " is not one of auto, bf16, fp32 (under --math bf16: which " + what + " primitive runs)");
                return value;
            };
            return makeHostTrainingSession("onednn.auto", options,
                makeTrainingOps(options.math, choice("weight_gradient", "weight-gradient"),
                    choice("data_gradient", "data-gradient")));
        }
        std::map<std::string, std::string> info() const override
        {
            return { { "device", cpuModelName() }, { "threads", std::to_string(cpuThreadCount()) },
                { "onednn", versionString() }, { "isa", isaName() }, { "cpu_isa", cpuFeatures().str() },
                { "bf16", halfSupport(MathMode::BF16) }, { "fp16", halfSupport(MathMode::FP16) } };
        }
    };

} // namespace

} // namespace convscope::onednn

extern "C" __attribute__((visibility("default"))) int convscope_register_module(
    convscope::BackendRegistry* registry, int abiVersion)
{
    return convscope::registerModuleBackend(registry, abiVersion, "onednn", "Intel oneDNN", "libconvscope_onednn.so",
        [] { return std::make_shared<convscope::onednn::OnednnBackend>(); });
}
