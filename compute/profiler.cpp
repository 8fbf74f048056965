// The profiler: resolve every selection, check it supports every layer, prepare its session (untimed),
// then time warm-up and measured passes — interleaved across selections so that a ratio between two of
// them is measured side by side, in an order rotating by one each pass so that every selection runs first
// (and after each neighbour) equally often rather than always inheriting one other's caches and clock state —
// and finally fetch every layer's output (timed apart, never counted as compute) to compare it with the
// reference.
#include "compute/profiler.h"

#include "compute/backend_registry.h"
#include "compute/checked_math.h"
#include "compute/fusion.h"
#include "compute/load_input.h"
#include "compute/materialize.h"
#include "compute/memory_budget.h"
#include "compute/nvtx.h"
#include "compute/rounding_bound.h"
#include "compute/system_info.h"

#include "convscope_config.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

namespace convscope {

namespace {

    std::string layerLabel(const Network& net, size_t i)
    {
        return "layer " + std::to_string(i) + " (" + net.layers[i].name + ")";
    }

    bool needsParameters(const Network& net)
    {
        for (const auto& l : net.layers) {
            // binary's and matmul's constant operand is materialised as its weight too (not a parameter: nothing
            // trains it)
            const auto* b = std::get_if<Binary>(&l.spec);
            const auto* m = std::get_if<Matmul>(&l.spec);
            const bool constant = (b && !b->constant.empty()) || (m && !m->constant.empty());
            if ((hasParameters(l.spec) || constant) && !l.weight && !l.runningMean)
                return true;
        }
        return false;
    }

    int64_t activationBytes(const ShapeReport& shapes)
    {
        int64_t total = shapes.input.bytes();
        for (const auto& l : shapes.layers)
            total = checkedAdd(total, l.out.bytes(), "activations");
        return total;
    }

    std::string gib(int64_t bytes)
    {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(int64_t(1) << 30));
        return buf;
    }

    struct Live {
        SelectionResult* result;
        std::unique_ptr<BackendSession> session;
        std::vector<PassTiming> passes; // measured passes only
        std::shared_ptr<const FusedNetwork> fusion; // "+fused" selections: what the session runs
        const Network* net = nullptr; // what the session runs: the network or its fused form
        const ShapeReport* shapes = nullptr;
        std::vector<double> lastLayerMs; // the last pass's layer times: how a pass's progress is weighted
    };

    void fail(Live& live, const std::string& why)
    {
        live.result->ok = false;
        live.result->failure = why;
        live.result->layers.clear(); // no half-made results a report could mistake for a measurement
        live.session.reset();
    }

} // namespace

void checkMemoryBudget(const std::string& networkName, const ShapeReport& shapes, const ProfileOptions& options)
{
    // Each host-side session keeps every layer's output, and so do kept outputs and the reference.
    const int64_t budget = options.hostMemoryBudgetBytes > 0 ? options.hostMemoryBudgetBytes : hostMemoryBudget();
    const int64_t perCopy = activationBytes(shapes);
    int64_t copies = 1 + (options.reference ? 1 : 0);
    for (const auto& s : options.selections)
        copies += (s.backend == "cpu" ? 1 : 0) + (options.keepOutputs ? 1 : 0);
    const int64_t params = checkedMul(shapes.total.params, 4, "parameters");
    const int64_t needed = checkedAdd(checkedMul(perCopy, copies, "run memory"), params, "run memory");
    if (needed > budget)
        throw InputError(networkName + ": this run would need " + gib(needed) + " of host memory (" + gib(perCopy)
            + " of activations × " + std::to_string(copies) + " copies + " + gib(params)
            + " of parameters) but the memory budget is " + gib(budget)
            + "; use a smaller input or batch, or fewer selections, or raise the budget (--memory-budget, "
              "CONVSCOPE_MEMORY_BUDGET)");
}

namespace {
    ShapeReport validShapes(const Network& net)
    {
        ShapeReport shapes = inferShapes(net);
        if (!shapes.ok())
            throw InputError(net.name + ": " + shapes.firstError());
        return shapes;
    }

} // namespace

// The run once the shapes are known and valid (defined below the two entry points).
static RunResult profileWith(Network net, ShapeReport shapes, const Tensor& input, const ProfileOptions& options);

RunResult profile(Network net, const Tensor& input, const ProfileOptions& options)
{
    ShapeReport shapes = validShapes(net);
    return profileWith(std::move(net), std::move(shapes), input, options);
}

RunResult profile(Network net, const ProfileOptions& options, Tensor* inputOut)
{
    ShapeReport shapes = validShapes(net);
    checkMemoryBudget(net.name, shapes, options); // before the input is allocated
    Tensor input = loadInput(net.input, net.baseDir);
    RunResult result = profileWith(std::move(net), std::move(shapes), input, options);
    if (inputOut)
        *inputOut = std::move(input);
    return result;
}

namespace {

    // The run's progress callbacks and its cancel flag, checked at each step and between layers.
    struct Progress {
        const ProfileOptions& options;
        mutable std::chrono::steady_clock::time_point last {};

        void operator()(RunProgress p) const
        {
            p.fraction = std::clamp(p.fraction, 0.0, 1.0);
            last = std::chrono::steady_clock::now();
            if (options.layerProgress)
                options.layerProgress(p);
            if (options.progress)
                options.progress(p.fraction, p.text());
            cancelPoint();
        }
        // Between two layers: `make` (what to say) is called only when the last report is layerProgressMs old.
        template <class Make> void between(Make&& make) const
        {
            cancelPoint();
            if (options.layerProgress
                && std::chrono::steady_clock::now() - last >= std::chrono::milliseconds(options.layerProgressMs))
                (*this)(make());
        }
        // A session reports its layers only when someone listens or may cancel.
        bool wantsLayers() const { return options.layerProgress || options.cancel; }
        void cancelPoint() const
        {
            if (options.cancel && options.cancel->load())
                throw Cancelled();
        }
    };

    RunProgress at(double fraction, std::string phase, const std::string& selection = {})
    {
        RunProgress p;
        p.fraction = fraction;
        p.phase = std::move(phase);
        p.selection = selection;
        return p;
    }

    // Where layer i ends in a pass, as a share of the pass: by the last pass's layer times, or by FLOPs before the
    // first (each layer at least 1 % of an even share, so that layers without arithmetic still move).
    std::vector<double> passShares(const Live& l)
    {
        const size_t n = l.net->layers.size();
        std::vector<double> w(n);
        double sum = 0;
        for (size_t i = 0; i < n; ++i)
            sum += w[i] = std::max(0.0, l.lastLayerMs.size() == n ? l.lastLayerMs[i] : l.shapes->layers[i].cost.flops);
        double cum = 0;
        const double floor = n ? std::max(sum, 1e-9) * 0.01 / double(n) : 0;
        for (double& v : w)
            v = cum += v + floor;
        for (double& v : w)
            v /= std::max(cum, 1e-12);
        return w;
    }

    void layerAt(RunProgress& p, const Network& net, size_t i)
    {
        p.layer = int(i);
        p.layers = int(net.layers.size());
        p.layerName = net.layers[i].name;
    }

    // Step 0: the options make sense for this network and input.
    void checkRun(const Network& net, const ShapeReport& shapes, const Tensor& input, const ProfileOptions& options)
    {
        if (input.shape() != shapes.input)
            throw InputError(net.name + ": the input tensor is " + input.shape().str() + " but the network expects "
                + shapes.input.str());
        if (options.repeat < 1 || options.warmup < 0)
            throw InputError("repeat must be at least 1 and warmup at least 0");
        if (options.reference && options.reference->fused)
            throw InputError("the reference " + options.reference->str()
                + " must be an unfused selection: a fused one has no output for the layers it folds away");
        checkMemoryBudget(net.name, shapes, options);
    }

    RunMetadata describeRun(const ProfileOptions& options)
    {
        RunMetadata meta;
        meta.date = utcTimestamp();
        meta.cpuModel = cpuModel();
        meta.cpuThreads = cpuThreads();
        meta.convscopeVersion = CONVSCOPE_VERSION;
        meta.mathMode = mathModeName(options.session.math);
        meta.warmup = options.warmup;
        meta.repeat = options.repeat;
        meta.interleaved = options.interleave;
        meta.reference = options.reference ? options.reference->str() : "none";
        meta.timing = "host: std::chrono::steady_clock around each layer; GPU: CUDA events around each layer on "
                      "the device stream; copies to and from the device timed apart from compute; median of "
            + std::to_string(options.repeat) + " passes after " + std::to_string(options.warmup) + " warm-up passes"
            + (options.interleave ? ", selections interleaved pass by pass in rotating order" : "");
        meta.libraries = cpuLibraries();
        return meta;
    }

    // Step 1, prepare: resolve a selection, check its backend supports every layer of what it runs (the network or
    // its fused form), make and prepare its session (untimed). Throws what stops it.
    void prepareSelection(
        Live& l, const Network& net, const ShapeReport& shapes, const ProfileOptions& options, const Progress& report)
    {
        SelectionResult& sr = *l.result;
        auto backend = BackendRegistry::instance().resolve(sr.selection);
        if (sr.selection.fused) {
            // Option fuse_residual=0 keeps the residual adds as layers (to measure what folding them saves).
            const auto keepAdds = options.session.extra.find("fuse_residual");
            const bool residual
                = backend->fusesResidual() && (keepAdds == options.session.extra.end() || keepAdds->second != "0");
            l.fusion = std::make_shared<const FusedNetwork>(fuseNetwork(
                net, shapes, [&](FusedActivation::Kind k) { return backend->fusesActivation(k); }, residual));
            l.net = &l.fusion->net;
            l.shapes = &l.fusion->shapes;
        }
        for (size_t i = 0; i < l.net->layers.size(); ++i) {
            // Volumes (rank 5) run only where the backend says its code for the kind sees the depth
            // (Backend::takesVolumes); elsewhere descriptors and grids made from N, C, H, W would drop it.
            const LayerShape& ls = l.shapes->layers[i];
            const bool volume = ls.in.isVolume() || ls.out.isVolume()
                || std::any_of(ls.ins.begin(), ls.ins.end(), [](const Shape& s) { return s.isVolume(); });
            if (volume && !backend->takesVolumes(l.net->layers[i].spec))
                throw UnsupportedError(sr.selection.str() + " unsupported for " + layerLabel(*l.net, i) + " "
                    + layerTypeName(l.net->layers[i].spec) + ": volumes (5-D [N, C, D, H, W] tensors, here "
                    + (ls.in.isVolume() ? ls.in.str() : ls.out.str()) + ") do not run on " + sr.selection.backend
                    + " yet (they run on the cpu and onednn backends)");
            const Support s = backend->supports(sr.selection.algorithm, l.net->layers[i].spec, l.shapes->layers[i]);
            if (!s.supported)
                throw UnsupportedError(sr.selection.str() + " unsupported for " + layerLabel(*l.net, i) + " "
                    + layerTypeName(l.net->layers[i].spec) + (l.fusion ? " (fused)" : "") + ": " + s.reason);
        }
        report(at(0, "preparing", sr.selection.str()));
        l.session = backend->createSession(sr.selection.algorithm, options.session);
        l.session->prepare(*l.net, *l.shapes);
    }

    // Every selection prepared; one that cannot run is recorded with its reason (and has no session).
    std::vector<Live> prepareSelections(
        RunResult& result, const Network& net, const ProfileOptions& options, const Progress& report)
    {
        result.selections.resize(options.selections.size());
        std::vector<Live> live;
        for (size_t k = 0; k < options.selections.size(); ++k) {
            SelectionResult& sr = result.selections[k];
            sr.selection = options.selections[k];
            sr.metadata["math"] = result.meta.mathMode;
            Live l { &sr, nullptr, {}, nullptr, &net, &result.shapes, {} };
            try {
                prepareSelection(l, net, result.shapes, options, report);
                sr.ok = true;
            } catch (const Cancelled&) {
                throw;
            } catch (const UnsupportedError& e) {
                sr.failure = e.what();
                sr.unsupported = true;
                sr.ok = false;
                l.session.reset();
            } catch (const std::exception& e) {
                sr.failure = e.what();
                sr.ok = false;
                l.session.reset();
            }
            if (!sr.ok) { // said at once: a long run of the others must not hide it until the end
                RunProgress p = at(0, "dropped", sr.selection.str());
                p.dropped = sr.failure;
                report(p);
            }
            live.push_back(std::move(l));
        }
        return live;
    }

    // Step 2, time: the warm-up and measured passes of every prepared selection, interleaved or one after another.
    void timePasses(std::vector<Live>& live, const Tensor& input, const ProfileOptions& options, const Progress& report)
    {
        const int passes = options.warmup + options.repeat;
        const double totalWork = double(passes) * double(std::max<size_t>(live.size(), 1));
        double done = 0;
        auto runOne = [&](Live& l, int pass) {
            if (!l.session)
                return;
            RunProgress p = at(0, pass < options.warmup ? "warm-up" : "timing", l.result->selection.str());
            p.pass = pass + 1;
            p.passes = passes;
            // Inside the pass, between layers (outside their timed regions), throttled: where it is.
            struct Unhook {
                Live& l;
                ~Unhook()
                {
                    if (l.session) // a pass that failed has freed it
                        l.session->setLayerDone(nullptr);
                }
            } unhook { l };
            if (report.wantsLayers())
                // Called once layer i is done: layer i + 1 is the one at work (the pass's report follows the last).
                l.session->setLayerDone([&, shares = passShares(l)](size_t i) {
                    if (i + 1 < shares.size())
                        report.between([&] {
                            RunProgress q = p;
                            layerAt(q, *l.net, i + 1);
                            q.fraction = (done + shares[i]) / totalWork * 0.9;
                            return q;
                        });
                    else
                        report.cancelPoint();
                });
            if (!l.net->layers.empty())
                report.between([&] { // before the pass: its first layer is next
                    RunProgress q = p;
                    layerAt(q, *l.net, 0);
                    q.fraction = done / totalWork * 0.9;
                    return q;
                });
            try {
                const nvtx::Range range(l.result->selection.str() + (pass < options.warmup ? " · warm-up " : " · pass ")
                        + std::to_string(pass < options.warmup ? pass : pass - options.warmup),
                    l.result->selection.backend);
                PassTiming t = l.session->runPass(input);
                if (t.layerMs.size() != l.net->layers.size())
                    throw Error(l.result->selection.str() + " timed " + std::to_string(t.layerMs.size()) + " layers of "
                        + std::to_string(l.net->layers.size()));
                l.lastLayerMs = t.layerMs;
                if (pass >= options.warmup)
                    l.passes.push_back(std::move(t));
            } catch (const Cancelled&) {
                throw;
            } catch (const std::exception& e) {
                fail(l, e.what());
                RunProgress q = p;
                q.phase = "dropped";
                q.dropped = e.what();
                q.fraction = done / totalWork * 0.9;
                report(q);
            }
            done += 1;
            p.fraction = done / totalWork * 0.9;
            report(p);
        };
        if (options.interleave) {
            // Pass p starts with selection p mod S, so each selection runs first equally often.
            for (int pass = 0; pass < passes; ++pass)
                for (size_t j = 0; j < live.size(); ++j)
                    runOne(live[(j + static_cast<size_t>(pass)) % live.size()], pass);
        } else {
            for (auto& l : live)
                for (int pass = 0; pass < passes; ++pass)
                    runOne(l, pass);
        }
    }

    // What each layer is compared with: the reference's outputs and, in a Tensor Core mode, each layer's rounding
    // bound (0 in FP32). Empty outputs: no reference.
    struct Reference {
        std::vector<Tensor> outputs;
        std::vector<double> bounds;
    };

    // Step 3, compare: the reference outputs, from the reference selection if it ran, else from a separate untimed
    // pass. The reference is always FP32: a selection that ran in another math mode is reused only on the CPU, whose
    // own kernels compute in FP32 in every mode; otherwise the reference runs apart with default (FP32) options, so a
    // tf32/fp16/bf16 run is compared with FP32 and its errors show the rounding.
    Reference referenceFor(const Network& net, const ShapeReport& shapes, const Tensor& input,
        const std::vector<Live>& live, const ProfileOptions& options, const Progress& report)
    {
        Reference ref;
        ref.bounds.assign(net.layers.size(), 0.0);
        if (!options.reference)
            return ref;
        report(at(0.9, "reference", options.reference->str()));
        BackendSession* refSession = nullptr;
        std::unique_ptr<BackendSession> own;
        const bool reusable = options.session.math == MathMode::FP32 || options.reference->backend == "cpu";
        for (auto& l : live)
            if (reusable && l.session && l.result->selection == *options.reference)
                refSession = l.session.get();
        if (!refSession) {
            auto backend = BackendRegistry::instance().resolve(*options.reference);
            own = backend->createSession(options.reference->algorithm, SessionOptions {});
            own->prepare(net, shapes);
            own->runPass(input);
            refSession = own.get();
        }
        for (size_t i = 0; i < net.layers.size(); ++i) {
            report.between([&] {
                RunProgress p = at(0.9, "reference", options.reference->str());
                layerAt(p, net, i);
                return p;
            });
            double ms = 0;
            ref.outputs.push_back(refSession->fetchOutput(i, &ms));
        }
        if (options.session.math != MathMode::FP32) {
            ReferenceNorms norms;
            norms.input = tensorNorm(input);
            for (const Tensor& t : ref.outputs)
                norms.outputs.push_back(tensorNorm(t));
            ref.bounds = roundingBounds(options.session.math, net, shapes, norms);
        }
        return ref;
    }

    // Step 4, collect: a selection's pass times into statistics, each layer's time, note, output and its error
    // against the reference, the session's metadata, and the explorer's findings when asked; then its session is freed.
    void collect(Live& l, const Network& net, const ShapeReport& shapes, const Reference& ref,
        const ProfileOptions& options, const Progress& report, double from, double to)
    {
        SelectionResult& sr = *l.result;
        std::vector<double> h2d, d2h, total;
        sr.layers.resize(net.layers.size());
        for (const auto& p : l.passes) {
            h2d.push_back(p.h2dMs);
            d2h.push_back(p.d2hMs);
            double sum = p.h2dMs + p.d2hMs;
            for (double v : p.layerMs)
                sum += v;
            total.push_back(sum);
        }
        sr.h2dMs = Stats::of(h2d);
        sr.d2hMs = Stats::of(d2h);
        sr.totalMs = Stats::of(total);
        const bool compared = !ref.outputs.empty();
        const auto step = [&](const char* phase, size_t i) {
            report.between([&] {
                RunProgress p
                    = at(from + (to - from) * double(i + 1) / double(net.layers.size()), phase, sr.selection.str());
                layerAt(p, net, i);
                return p;
            });
        };
        for (size_t i = 0; i < net.layers.size(); ++i) {
            step("comparing", i);
            LayerResult& lr = sr.layers[i];
            lr.index = i;
            // A fused selection reports each fused layer's time at the first original layer it covers and 0 at
            // the layers folded into it; an output exists only where the original layer's output does.
            const FusedLayerMap m = l.fusion ? l.fusion->map[i] : FusedLayerMap { i, true, true, {} };
            for (const auto& p : l.passes)
                lr.samplesMs.push_back(m.head ? p.layerMs[m.fusedIndex] : 0.0);
            lr.computeMs = Stats::of(lr.samplesMs);
            lr.note = m.note;
            if (m.head) {
                const std::string backendNote = l.session->layerNote(m.fusedIndex);
                lr.note += (lr.note.empty() || backendNote.empty() ? "" : "; ") + backendNote;
            }
            if (m.hasOutput && (options.keepOutputs || compared)) {
                Tensor out = l.session->fetchOutput(m.fusedIndex, &lr.fetchMs);
                if (compared) {
                    lr.error = compare(out, ref.outputs[i]);
                    // Our CPU kernels compute in FP32 in every mode: no rounding bound to state for them.
                    lr.error.bound = sr.selection.backend == "cpu" ? 0.0 : ref.bounds[i];
                }
                if (options.keepOutputs)
                    lr.output = std::move(out);
            }
        }
        for (const auto& [k, v] : l.session->metadata())
            sr.metadata[k] = v;
        if (options.explore && !l.fusion) {
            l.session.reset(); // the explorer allocates its own buffers
            const auto backend = BackendRegistry::instance().find(sr.selection.backend);
            for (size_t i = 0; i < net.layers.size(); ++i)
                if (isConvolution(net.layers[i].spec)) {
                    step("exploring", i);
                    sr.layers[i].explorerJson = backend->explore(net, shapes, i, options.session);
                }
        }
    }

} // namespace

static RunResult profileWith(Network net, ShapeReport shapes, const Tensor& input, const ProfileOptions& options)
{
    RunResult result;
    result.networkName = net.name;
    result.shapes = std::move(shapes);
    checkRun(net, result.shapes, input, options);
    if (needsParameters(net))
        materializeParameters(net, result.shapes);
    result.meta = describeRun(options);

    const nvtx::Range runRange("run " + net.name, 0xFF444444);
    const Progress report { options };
    std::vector<Live> live = prepareSelections(result, net, options, report);
    timePasses(live, input, options, report);
    const Reference ref = referenceFor(net, result.shapes, input, live, options, report);
    for (size_t k = 0; k < live.size(); ++k) {
        Live& l = live[k];
        if (!l.session)
            continue;
        const double from = 0.93 + 0.07 * double(k) / double(live.size()),
                     to = 0.93 + 0.07 * double(k + 1) / double(live.size());
        try {
            collect(l, net, result.shapes, ref, options, report, from, to);
        } catch (const Cancelled&) {
            throw;
        } catch (const std::exception& e) {
            fail(l, e.what());
        }
        l.session.reset(); // free device memory before the next selection's fetches
    }
    report(at(1.0, "done"));
    result.network = std::move(net);
    return result;
}

std::string RunProgress::text() const
{
    if (!dropped.empty())
        return selection + " dropped out: " + dropped;
    std::string t = selection.empty() ? phase : selection;
    if (pass > 0)
        t += " pass " + std::to_string(pass) + "/" + std::to_string(passes) + (phase == "warm-up" ? " (warm-up)" : "");
    else if (!selection.empty() && !phase.empty())
        t = phase + " " + t;
    if (layer >= 0)
        t += " · layer " + std::to_string(layer + 1) + "/" + std::to_string(layers) + " " + layerName;
    return t;
}

const SelectionResult* RunResult::find(const Selection& s) const
{
    for (const auto& r : selections)
        if (r.selection == s)
            return &r;
    return nullptr;
}

} // namespace convscope
