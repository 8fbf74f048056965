// trainGan: the DCGAN loop of gan_run.h on one selection, and the generated data it trains on.
#include "compute/training/gan_run.h"
#include "compute/training/distributed.h"

#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/materialize.h"
#include "compute/random.h"
#include "compute/training/grad_scaler.h"
#include "compute/training/phase_sums.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>

namespace convscope {

namespace {
    // Row `row` of a generated batch: its own stream, so that any slice of the batch can be made alone.
    uint64_t rowSeed(uint64_t seed, int64_t row) { return seed * 0x9E3779B97F4A7C15ull + uint64_t(row); }
} // namespace

Tensor ganRealImages(int64_t batch, int64_t channels, int64_t height, int64_t width, uint64_t seed, int64_t first)
{
    Tensor t(Shape::nchw(batch, channels, height, width));
    const int64_t plane = height * width;
    for (int64_t n = 0; n < batch; ++n) {
        Random rng(rowSeed(seed, first + n));
        float* img = t.data() + n * channels * plane;
        for (int64_t c = 0; c < channels; ++c)
            std::fill(img + c * plane, img + (c + 1) * plane, float(rng.uniform(-1.0, -0.4)));
        const int shapes = 1 + int(rng.uniform() * 3);
        for (int s = 0; s < shapes; ++s) {
            const bool disc = rng.uniform() < 0.5;
            const double cy = rng.uniform(0.2, 0.8) * double(height), cx = rng.uniform(0.2, 0.8) * double(width);
            const double r = rng.uniform(0.12, 0.3) * double(std::min(height, width));
            std::vector<float> colour(static_cast<size_t>(channels));
            for (float& v : colour)
                v = float(rng.uniform(-0.2, 1.0));
            for (int64_t y = 0; y < height; ++y)
                for (int64_t x = 0; x < width; ++x) {
                    const double dy = double(y) + 0.5 - cy, dx = double(x) + 0.5 - cx;
                    const bool inside = disc ? dy * dy + dx * dx <= r * r : std::abs(dy) <= r && std::abs(dx) <= r;
                    if (inside)
                        for (int64_t c = 0; c < channels; ++c)
                            img[c * plane + y * width + x] = colour[size_t(c)];
                }
        }
    }
    return t;
}

Tensor ganNoise(const Shape& shape, uint64_t seed, int64_t first)
{
    Tensor t(shape);
    const int64_t rows = std::max<int64_t>(shape.n, 1), row = t.numel() / rows;
    for (int64_t n = 0; n < rows; ++n) {
        Random rng(rowSeed(seed, first + n));
        float* p = t.data() + n * row;
        for (int64_t i = 0; i < row; i += 2) {
            const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform(); // u1 in (0, 1]: the log is finite
            const double radius = std::sqrt(-2.0 * std::log(u1));
            p[i] = float(radius * std::cos(2.0 * std::numbers::pi * u2));
            if (i + 1 < row)
                p[i + 1] = float(radius * std::sin(2.0 * std::numbers::pi * u2));
        }
    }
    return t;
}

double GanPhaseMs::total() const
{
    return dRealForward + dRealBackward + gForward + dFakeForward + dFakeBackward + dUpdate + gdForward + gdBackward
        + gBackward + gUpdate + loss;
}

namespace {

    // Adds one pass's per-layer times into the step's sums (-1: the phase did not run in any pass).
    void addInto(std::vector<LayerPhaseMs>& sum, const std::vector<LayerPhaseMs>& pass)
    {
        sum.resize(pass.size());
        for (size_t i = 0; i < pass.size(); ++i) {
            const auto add = [](double& to, double v) {
                if (v >= 0)
                    to = std::max(0.0, to) + v;
            };
            add(sum[i].forward, pass[i].forward);
            add(sum[i].backwardData, pass[i].backwardData);
            add(sum[i].backwardWeights, pass[i].backwardWeights);
            add(sum[i].update, pass[i].update);
        }
    }

    double meanSigmoid(const Tensor& logits)
    {
        double sum = 0;
        for (int64_t i = 0; i < logits.numel(); ++i)
            sum += 1.0 / (1.0 + std::exp(-double(logits.data()[i])));
        return sum / double(logits.numel());
    }

    Tensor labels(const Shape& shape, float value)
    {
        Tensor t(shape);
        std::fill(t.data(), t.data() + t.numel(), value);
        return t;
    }

    void setBatch(Network& net, int64_t batch) { net.input.batch = batch; }

    // Data parallel: a backward pass's all-reduces added into the step's.
    void addBuckets(GanPhaseMs& ph, const std::vector<BucketTiming>& buckets)
    {
        for (const BucketTiming& b : buckets) {
            ph.allReduce += b.allReduceMs;
            ph.allReduceHidden += b.hiddenMs;
        }
    }
    void addAllReduce(GanPhaseMs& ph, const TrainingSession& session) { addBuckets(ph, session.passBuckets()); }

    void multiplyBy(Tensor& t, double factor)
    {
        for (int64_t i = 0; i < t.numel(); ++i)
            t.data()[i] = float(double(t.data()[i]) * factor);
    }

} // namespace

GanResult trainGan(Network generator, Network discriminator, const GanRunOptions& o)
{
    if (o.steps < 1)
        throw InputError("--steps must be at least 1, got " + std::to_string(o.steps));
    if (o.warmup < 0)
        throw InputError("--warmup must be 0 or more, got " + std::to_string(o.warmup));
    if (o.batch < 1)
        throw InputError("--batch must be at least 1, got " + std::to_string(o.batch));
    if (generator.layers.empty() || discriminator.layers.empty())
        throw InputError("the generator and the discriminator need at least one layer each");
    checkOptimizer(o.generatorOptimizer);
    checkOptimizer(o.discriminatorOptimizer);
    if (o.selection.fused)
        throw UnsupportedError(o.selection.str() + ": fused selections are unsupported in training");
    GanResult result;
    result.options = o;
    result.options.realImages = result.options.noise = nullptr; // not kept past this call
    // Data parallel: this rank's slice of every batch (the same size on every rank).
    const bool ddp = o.group && o.group->worldSize() > 1;
    const BatchSlice slice
        = ddp ? splitBatch(o.batch, o.group->rank(), o.group->worldSize()) : BatchSlice { 0, o.batch };
    if (ddp) {
        result.rank = o.group->rank();
        result.worldSize = o.group->worldSize();
        o.group->requireSame(generator.name + " and " + discriminator.name + ", batch " + std::to_string(o.batch) + ", "
                + std::to_string(o.warmup) + " + " + std::to_string(o.steps) + " steps on " + o.selection.str()
                + ", seed " + std::to_string(o.seed),
            "the GAN training");
    }
    setBatch(generator, slice.count);
    setBatch(discriminator, slice.count);
    // A final sigmoid goes into the loss (BCE-with-logits).
    Layer sigmoid;
    if (std::holds_alternative<Sigmoid>(discriminator.layers.back().spec) && discriminator.layers.size() > 1) {
        sigmoid = discriminator.layers.back();
        discriminator.layers.pop_back();
        result.sigmoidFolded = true;
    }
    result.generatorShapes = inferShapes(generator);
    if (!result.generatorShapes.ok())
        throw InputError("generator " + generator.name + ": " + result.generatorShapes.firstError());
    result.discriminatorShapes = inferShapes(discriminator);
    if (!result.discriminatorShapes.ok())
        throw InputError("discriminator " + discriminator.name + ": " + result.discriminatorShapes.firstError());
    const Shape fakeShape = result.generatorShapes.layers.back().out;
    const Shape& dIn = result.discriminatorShapes.input;
    if (fakeShape.numel() != dIn.numel() || fakeShape.c != dIn.c || fakeShape.h != dIn.h || fakeShape.w != dIn.w)
        throw InputError("the generator makes " + fakeShape.str() + " but the discriminator reads " + dIn.str());
    const Shape scoreShape = result.discriminatorShapes.layers.back().out;
    if (scoreShape.numel() != slice.count)
        throw InputError("the discriminator must give one score per image, but its output is " + scoreShape.str()
            + " for a batch of " + std::to_string(slice.count));
    const Shape& zShape = result.generatorShapes.input;
    Shape wholeIn = dIn, wholeZ = zShape; // the whole batch's (--real and --noise hold it; a rank takes its slice)
    wholeIn.n = wholeZ.n = o.batch;
    if (o.realImages && o.realImages->numel() != wholeIn.numel())
        throw InputError(
            "the real images are " + o.realImages->shape().str() + " but the discriminator reads " + wholeIn.str());
    if (o.noise && o.noise->numel() != wholeZ.numel())
        throw InputError("the codes are " + o.noise->shape().str() + " but the generator reads " + wholeZ.str());
    materializeParameters(generator, result.generatorShapes);
    materializeParameters(discriminator, result.discriminatorShapes);

    const std::shared_ptr<Backend> backend = BackendRegistry::instance().resolve(o.selection);
    auto sessionFor = [&](const Network& net, const ShapeReport& shapes, const OptimizerSpec& opt, bool inputGrad) {
        std::unique_ptr<TrainingSession> s = backend->createTrainingSession(o.selection.algorithm, o.session);
        if (!s)
            throw UnsupportedError(o.selection.str() + ": the " + o.selection.backend
                + " backend has no backward ops (training is unsupported there)");
        if (ddp && !s->dataParallel())
            throw UnsupportedError(o.selection.str()
                + ": data-parallel training (--distributed) is unsupported there; it runs on the GPU backends (cudnn, "
                  "cuda), built with "
                  "NCCL");
        TrainingOptions to;
        to.group = o.group;
        to.collectiveTimeoutSeconds = o.collectiveTimeoutSeconds;
        to.loss = LossKind::BCEWithLogits;
        to.optimizer = opt;
        to.batchNormMomentum = o.batchNormMomentum;
        to.inputGradient = inputGrad;
        s->prepare(net, shapes, to);
        return s;
    };
    const std::unique_ptr<TrainingSession> g
        = sessionFor(generator, result.generatorShapes, o.generatorOptimizer, false);
    const std::unique_ptr<TrainingSession> d
        = sessionFor(discriminator, result.discriminatorShapes, o.discriminatorOptimizer, true);
    const Tensor ones = labels(scoreShape, 1.0f), zeros = labels(scoreShape, 0.0f);
    Tensor gradScore(scoreShape);
    // FP16: one GradScaler for both networks' optimizers, starting where the sessions' math starts (0: no scaling).
    const double initialScale = d->lossScale();
    const bool scaling = initialScale > 0;
    GradScaler scaler(scaling ? initialScale : 1.0);
    // Two GPU sessions hand the fake batch (G's output, D's input) and its gradient (D's input gradient, G's output
    // gradient) over on the device; otherwise they go through the host.
    const bool onDevice = g->handsOffTo(*d) && d->handsOffTo(*g);
    const char* const handoff = onDevice
        ? "on the device: the fake batch and its gradient never leave the GPU (only D's scores come to the host)"
        : "through the host";
    // Deferred reads: both sessions queue the step's passes and are read once at its end.
    const bool deferred = onDevice && !o.syncEachPass && d->deferReads(true) && g->deferReads(true);
    if (!deferred) {
        d->deferReads(false);
        g->deferReads(false);
    }

    // A step's start: the loss scale set on both sessions, and this rank's slice of the whole batch's data (all of it
    // on one process), made on the host before the step's clock starts.
    struct StepStart {
        GanStep st;
        Tensor real, z;
        std::chrono::steady_clock::time_point t0;
    };
    const auto startStep = [&](int64_t s) {
        StepStart b;
        if (scaling) {
            g->setLossScale(scaler.scale());
            d->setLossScale(scaler.scale());
            b.st.lossScale = scaler.scale();
        }
        const auto d0 = std::chrono::steady_clock::now();
        b.real = o.realImages ? sliceBatch(*o.realImages, o.batch, slice)
                              : ganRealImages(slice.count, dIn.c, dIn.h, dIn.w, o.seed + s, slice.offset);
        b.z = o.noise ? sliceBatch(*o.noise, o.batch, slice)
                      : ganNoise(zShape, o.seed + uint64_t(s) + 1000000u, slice.offset);
        b.t0 = std::chrono::steady_clock::now();
        b.st.dataMs = std::chrono::duration<double, std::milli>(b.t0 - d0).count();
        return b;
    };
    const auto runStep = [&](int64_t s) {
        StepStart b = startStep(s);
        GanStep& st = b.st;
        GanPhaseMs& ph = st.phases;
        const double scale = scaler.scale();
        const Tensor &real = b.real, &z = b.z;
        const auto t0 = b.t0;
        const auto loss = [&](const Tensor& logits, const Tensor& label, const char* what) {
            const auto t0 = std::chrono::steady_clock::now();
            const double l = computeLoss(LossKind::BCEWithLogits, logits, label, gradScore);
            ph.loss += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (!std::isfinite(l))
                throw InputError("step " + std::to_string(s) + ": the " + what + " loss is " + std::to_string(l));
            if (scaling)
                multiplyBy(gradScore, scale); // scaler.scale(loss).backward()
            return l;
        };
        std::vector<LayerPhaseMs> t;
        // The discriminator step. Data parallel: its real pass accumulates on each rank and the fake pass averages
        // both (DDP's no_sync); the generator step's pass through D averages nothing, as D's gradients from it are
        // dropped. One all-reduce of each network a step (gan_run.h).
        d->zeroGradients();
        Tensor out = d->forwardPass(real, s, t);
        ph.dRealForward = sumPhases(t).forward;
        addInto(st.discriminator, t);
        st.dReal = meanSigmoid(out);
        st.lossD = loss(out, ones, "discriminator's real");
        d->setGradientSync(false);
        d->backwardPass(gradScore, s, t);
        ph.dRealBackward = sumPhases(t).backward;
        addAllReduce(ph, *d);
        addInto(st.discriminator, t);
        Tensor fake;
        if (onDevice)
            g->forwardPassResident(z, s, t);
        else
            fake = g->forwardPass(z, s, t);
        ph.gForward = sumPhases(t).forward;
        addInto(st.generator, t);
        out = onDevice ? d->forwardPassOn(*g, s, t) : d->forwardPass(fake, s, t);
        ph.dFakeForward = sumPhases(t).forward;
        addInto(st.discriminator, t);
        st.dFake = meanSigmoid(out);
        st.lossD += loss(out, zeros, "discriminator's fake");
        d->setGradientSync(true);
        d->backwardPass(gradScore, s, t);
        ph.dFakeBackward = sumPhases(t).backward;
        addAllReduce(ph, *d);
        addInto(st.discriminator, t);
        st.dSkipped = !d->updateParameters(s, t);
        ph.dUpdate = sumPhases(t).update;
        addInto(st.discriminator, t);
        // The generator step: through the updated discriminator, whose own gradients are dropped.
        g->zeroGradients();
        d->zeroGradients();
        out = onDevice ? d->forwardPassOn(*g, s, t) : d->forwardPass(fake, s, t);
        ph.gdForward = sumPhases(t).forward;
        addInto(st.discriminator, t);
        st.lossG = loss(out, ones, "generator's");
        d->setGradientSync(false);
        d->backwardPass(gradScore, s, t);
        ph.gdBackward = sumPhases(t).backward;
        addAllReduce(ph, *d);
        addInto(st.discriminator, t);
        if (onDevice) {
            g->backwardPassOn(*d, s, t); // D's input gradient as it lies, scaled as G's backward runs
        } else {
            Tensor gradFake = d->inputGradient(); // unscaled by the session; the generator's backward runs scaled
            if (scaling)
                multiplyBy(gradFake, scale);
            g->backwardPass(gradFake, s, t);
        }
        ph.gBackward = sumPhases(t).backward;
        addAllReduce(ph, *g);
        addInto(st.generator, t);
        st.gSkipped = !g->updateParameters(s, t);
        ph.gUpdate = sumPhases(t).update;
        addInto(st.generator, t);
        if (scaling)
            scaler.update(st.dSkipped || st.gSkipped);
        st.wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (!onDevice)
            result.lastFake = std::move(fake);
        return st;
    };
    // The same step, every pass queued and read at its end (deferReads): the losses' gradients are made on the
    // device from D's scores where they lie, and the losses, D(x) and the checks come from the scores read back.
    const auto runDeferredStep = [&](int64_t s) {
        StepStart b = startStep(s);
        GanStep& st = b.st;
        GanPhaseMs& ph = st.phases;
        const Tensor &real = b.real, &z = b.z;
        const auto t0 = b.t0;
        std::vector<LayerPhaseMs> t; // empty: the times come from collectPasses
        d->zeroGradients();
        d->forwardPassResident(real, s, t);
        d->labelLoss(1.0f);
        d->setGradientSync(false);
        d->backwardPassFromLoss(s, t);
        g->forwardPassResident(z, s, t);
        d->forwardPassOn(*g, s, t);
        d->labelLoss(0.0f);
        d->setGradientSync(true);
        d->backwardPassFromLoss(s, t);
        d->updateParameters(s, t);
        g->zeroGradients();
        d->zeroGradients();
        d->forwardPassOn(*g, s, t);
        d->labelLoss(1.0f);
        d->setGradientSync(false);
        d->backwardPassFromLoss(s, t);
        g->backwardPassOn(*d, s, t);
        g->updateParameters(s, t);
        const std::vector<DeferredPass> dp = d->collectPasses(s), gp = g->collectPasses(s);
        // D's calls: forward, loss, backward (real); forward, loss, backward, update (fake); forward, loss, backward
        // (the generator step). G's: forward, backward, update.
        enum { dRealF, dRealLoss, dRealB, dFakeF, dFakeLoss, dFakeB, dUpd, gdF, gdLoss, gdB, dCalls };
        enum { gF, gB, gUpd, gCalls };
        if (dp.size() != dCalls || gp.size() != gCalls || dp[dUpd].kind != DeferredPass::Kind::Update
            || dp[gdLoss].kind != DeferredPass::Kind::Loss || gp[gUpd].kind != DeferredPass::Kind::Update)
            throw Error("internal error: the GAN step collected " + std::to_string(dp.size()) + " and "
                + std::to_string(gp.size()) + " calls, not in the loop's order");
        const auto lossOf = [&](const DeferredPass& p, const Tensor& label, const char* what) {
            ph.loss += p.lossMs;
            const double l = computeLoss(LossKind::BCEWithLogits, p.logits, label, gradScore);
            if (!std::isfinite(l))
                throw InputError("step " + std::to_string(s) + ": the " + what + " loss is " + std::to_string(l));
            return l;
        };
        st.dReal = meanSigmoid(dp[dRealLoss].logits);
        st.lossD = lossOf(dp[dRealLoss], ones, "discriminator's real");
        st.dFake = meanSigmoid(dp[dFakeLoss].logits);
        st.lossD += lossOf(dp[dFakeLoss], zeros, "discriminator's fake");
        st.lossG = lossOf(dp[gdLoss], ones, "generator's");
        const auto sums = [](const DeferredPass& p) { return sumPhases(p.times); };
        ph.dRealForward = sums(dp[dRealF]).forward;
        ph.dRealBackward = sums(dp[dRealB]).backward;
        ph.gForward = sums(gp[gF]).forward;
        ph.dFakeForward = sums(dp[dFakeF]).forward;
        ph.dFakeBackward = sums(dp[dFakeB]).backward;
        ph.dUpdate = sums(dp[dUpd]).update;
        ph.gdForward = sums(dp[gdF]).forward;
        ph.gdBackward = sums(dp[gdB]).backward;
        ph.gBackward = sums(gp[gB]).backward;
        ph.gUpdate = sums(gp[gUpd]).update;
        for (const auto& [calls, layers] : { std::pair { &dp, &st.discriminator }, std::pair { &gp, &st.generator } })
            for (const DeferredPass& p : *calls) {
                if (p.kind != DeferredPass::Kind::Loss)
                    addInto(*layers, p.times);
                addBuckets(ph, p.buckets);
            }
        st.dSkipped = dp[dUpd].skipped;
        st.gSkipped = gp[gUpd].skipped;
        if (scaling)
            scaler.update(st.dSkipped || st.gSkipped);
        st.wallMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        return st;
    };
    const auto oneStep = [&](int64_t s) { return deferred ? runDeferredStep(s) : runStep(s); };
    for (int s = 1; s <= o.warmup; ++s)
        oneStep(s);
    if (o.warmup > 0) {
        g->reset();
        d->reset();
        scaler.reset(scaling ? initialScale : 1.0);
    }
    for (int s = 1; s <= o.steps; ++s) {
        result.steps.push_back(oneStep(s));
        if (o.stepDone)
            o.stepDone(s, result.steps.back().lossD, result.steps.back().lossG);
    }
    if (deferred) {
        d->deferReads(false);
        g->deferReads(false);
    }
    if (onDevice)
        result.lastFake = g->lastOutput(); // the last step's (G has not run since)
    result.metadata = g->metadata();
    result.metadata["gan_handoff"] = handoff;
    result.metadata["gan_reads"] = deferred
        ? "once a step: the passes are queued without waiting, the losses' gradients made on the device, and every "
          "pass's times and D's scores read at the step's end"
        : "after every pass (the host waits for each pass's times and D's scores)";
    result.generator = g->trainedNetwork();
    result.discriminator = d->trainedNetwork();
    if (result.sigmoidFolded)
        result.discriminator.layers.push_back(sigmoid);
    if (ddp)
        gatherGanRanks(result, *o.group); // rank 0: the whole batch's losses, every rank's steps
    return result;
}

} // namespace convscope
