#include "compute/interpolation.h"

#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/materialize.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"

#include <memory>

namespace convscope {

namespace {

    // One network prepared on one selection: the profiler's checks (available, every layer supported, volumes only
    // where the backend takes them), then an untimed prepare; pass() times one pass as the profiler does.
    class Prepared {
    public:
        Prepared(const Selection& selection, Network net, const SessionOptions& options)
        {
            if (selection.fused)
                throw InputError(selection.str() + ": interpolate runs unfused selections; drop \"+fused\"");
            const ShapeReport shapes = inferShapes(net);
            if (!shapes.ok())
                throw InputError(net.name + ": " + shapes.firstError());
            materializeParameters(net, shapes);
            const auto backend = BackendRegistry::instance().resolve(selection);
            for (size_t i = 0; i < net.layers.size(); ++i) {
                const LayerShape& ls = shapes.layers[i];
                const std::string label = selection.str() + " unsupported for layer " + std::to_string(i) + " ("
                    + net.layers[i].name + ") " + layerTypeName(net.layers[i].spec);
                if ((ls.in.isVolume() || ls.out.isVolume()) && !backend->takesVolumes(net.layers[i].spec))
                    throw UnsupportedError(label + ": volumes do not run on " + selection.backend + " yet");
                const Support s = backend->supports(selection.algorithm, net.layers[i].spec, ls);
                if (!s.supported)
                    throw UnsupportedError(label + ": " + s.reason);
            }
            m_session = backend->createSession(selection.algorithm, options);
            m_session->prepare(net, shapes);
            m_last = net.layers.size() - 1;
        }
        double pass(const Tensor& input)
        {
            const PassTiming t = m_session->runPass(input);
            double ms = t.h2dMs + t.d2hMs;
            for (double l : t.layerMs)
                ms += l;
            return ms;
        }
        Tensor output() { return m_session->fetchOutput(m_last, nullptr); }

    private:
        std::unique_ptr<BackendSession> m_session;
        size_t m_last = 0;
    };

    // The budget for the largest run, before anything is allocated (every tensor is also checked as it is made).
    void checkBudget(const Network& net, const std::vector<Selection>& selections, int64_t budget)
    {
        const ShapeReport shapes = inferShapes(net);
        if (!shapes.ok())
            throw InputError(net.name + ": " + shapes.firstError());
        ProfileOptions o;
        o.selections = selections;
        o.reference = std::nullopt;
        o.hostMemoryBudgetBytes = budget;
        checkMemoryBudget(net.name, shapes, o);
    }

    void requireOneItem(const Tensor& t, const Network& net, const char* which)
    {
        Shape want = net.input.shape();
        want.n = 1;
        if (t.shape() != want)
            throw InputError(std::string("--") + which + " gives " + t.shape().str() + " but " + net.name
                + " takes one item of " + want.str());
    }

    template <typename Run> void recordFailure(Run& run, const std::exception& e, bool unsupported)
    {
        run.ok = false;
        run.unsupported = unsupported;
        run.failure = e.what();
    }

} // namespace

const char* decodeModeName(DecodeMode mode) { return mode == DecodeMode::Batched ? "batched" : "one by one"; }

InterpolationResult interpolate(
    const Network& net, const Tensor& a, const Tensor& b, const InterpolationOptions& options)
{
    if (options.warmup < 0 || options.repeat < 1)
        throw InputError("interpolate: --warmup must be at least 0 and --repeat at least 1");
    InterpolationResult result;
    result.split = splitNetworkAt(net, options.at);
    result.ts = interpolationTimes(options.steps);
    requireOneItem(a, net, "from");
    requireOneItem(b, net, "to");
    const Network encoder = withBatch(result.split.encoder, 2);
    const Network batched = withBatch(result.split.decoder, options.steps);
    const Network single = withBatch(result.split.decoder, 1);
    checkBudget(encoder, options.selections, options.hostMemoryBudgetBytes);
    checkBudget(batched, options.selections, options.hostMemoryBudgetBytes);
    const Tensor ab = stackItems({ &a, &b });

    const double units = double(options.selections.size() * (1 + options.modes.size()));
    double done = 0;
    const auto report = [&](const std::string& what) {
        if (options.progress)
            options.progress(done / units, what);
        done += 1;
    };
    for (const Selection& selection : options.selections) {
        InterpolationRun run;
        run.selection = selection;
        try {
            report("encoding on " + selection.str());
            Prepared enc(selection, encoder, options.session);
            for (int w = 0; w < options.warmup; ++w)
                enc.pass(ab);
            std::vector<double> samples;
            for (int r = 0; r < options.repeat; ++r)
                samples.push_back(enc.pass(ab));
            run.encoderMs = Stats::of(samples);
            const Tensor z = enc.output();
            run.z1 = batchItem(z, 0);
            run.z2 = batchItem(z, 1);
            const Tensor latents = interpolateLatents(run.z1, run.z2, result.ts);
            for (DecodeMode mode : options.modes) {
                report(std::string("decoding ") + decodeModeName(mode) + " on " + selection.str());
                DecodeResult d;
                d.mode = mode;
                samples.clear();
                if (mode == DecodeMode::Batched) {
                    Prepared dec(selection, batched, options.session);
                    for (int w = 0; w < options.warmup; ++w)
                        dec.pass(latents);
                    for (int r = 0; r < options.repeat; ++r)
                        samples.push_back(dec.pass(latents));
                    d.decoded = dec.output();
                } else {
                    Prepared dec(selection, single, options.session);
                    std::vector<Tensor> steps;
                    for (size_t k = 0; k < result.ts.size(); ++k)
                        steps.push_back(batchItem(latents, int64_t(k)));
                    for (int w = 0; w < options.warmup; ++w)
                        dec.pass(steps.front());
                    std::vector<Tensor> outputs;
                    for (int r = 0; r < options.repeat; ++r) {
                        double total = 0;
                        for (const Tensor& z1 : steps) {
                            total += dec.pass(z1);
                            if (r + 1 == options.repeat)
                                outputs.push_back(dec.output()); // after the pass's own timing: not counted
                        }
                        samples.push_back(total);
                    }
                    std::vector<const Tensor*> items;
                    for (const Tensor& o : outputs)
                        items.push_back(&o);
                    d.decoded = stackItems(items);
                }
                d.ms = Stats::of(samples);
                run.decodes.push_back(std::move(d));
            }
            run.ok = true;
        } catch (const UnsupportedError& e) {
            recordFailure(run, e, true);
        } catch (const InputError&) {
            throw; // the network or the inputs are wrong, on every selection alike
        } catch (const std::exception& e) {
            recordFailure(run, e, false);
        }
        result.runs.push_back(std::move(run));
    }
    if (options.progress)
        options.progress(1.0, "done");
    return result;
}

std::vector<LectureRun> runLectureWorkload(const Network& net, const Tensor& inputs, const LectureOptions& options)
{
    const SplitNetwork split = splitNetworkAt(net, options.at);
    const std::vector<double> ts = interpolationTimes(options.steps);
    const int64_t n = inputs.shape().n;
    Shape want = net.input.shape();
    want.n = n;
    if (inputs.shape() != want)
        throw InputError(
            "the lecture's inputs are " + inputs.shape().str() + " but " + net.name + " takes " + want.str());
    if (n < 2)
        throw InputError("the lecture's workload needs at least two inputs");
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
            if (i != j && (options.pairs <= 0 || int64_t(pairs.size()) < options.pairs))
                pairs.emplace_back(i, j);
    const Network encoder = withBatch(split.encoder, n);
    const Network batched = withBatch(split.decoder, options.steps);
    const Network single = withBatch(split.decoder, 1);
    checkBudget(encoder, options.selections, options.hostMemoryBudgetBytes);
    checkBudget(batched, options.selections, options.hostMemoryBudgetBytes);

    std::vector<LectureRun> runs;
    const double units = double(options.selections.size() * options.modes.size() * pairs.size());
    double done = 0;
    for (const Selection& selection : options.selections) {
        LectureRun run;
        run.selection = selection;
        run.pairs = int64_t(pairs.size());
        run.decoderRuns = run.pairs * options.steps;
        try {
            Prepared enc(selection, encoder, options.session);
            enc.pass(inputs); // warm-up
            run.encodeMs = enc.pass(inputs);
            const Tensor z = enc.output();
            std::vector<Tensor> latents;
            for (int64_t i = 0; i < n; ++i)
                latents.push_back(batchItem(z, i));
            for (DecodeMode mode : options.modes) {
                Prepared dec(selection, mode == DecodeMode::Batched ? batched : single, options.session);
                const Tensor first = interpolateLatents(latents[0], latents[1], ts);
                if (mode == DecodeMode::Batched) // warm-up
                    dec.pass(first);
                else
                    dec.pass(batchItem(first, 0));
                double total = 0;
                for (const auto& [i, j] : pairs) {
                    const Tensor blend = interpolateLatents(latents[size_t(i)], latents[size_t(j)], ts);
                    if (mode == DecodeMode::Batched)
                        total += dec.pass(blend);
                    else
                        for (int64_t k = 0; k < options.steps; ++k)
                            total += dec.pass(batchItem(blend, k));
                    if (options.progress && int64_t(done) % 50 == 0)
                        options.progress(
                            done / units, std::string("decoding ") + decodeModeName(mode) + " on " + selection.str());
                    done += 1;
                }
                run.decodeMs.emplace_back(mode, total);
            }
            run.ok = true;
        } catch (const UnsupportedError& e) {
            recordFailure(run, e, true);
        } catch (const InputError&) {
            throw;
        } catch (const std::exception& e) {
            recordFailure(run, e, false);
        }
        runs.push_back(std::move(run));
    }
    return runs;
}

} // namespace convscope
