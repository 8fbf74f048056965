// The engine's training job (issue 33): trainNetwork (compute/training/train_run.h) on the worker thread like every
// run, so a GPU backend's handles stay on it, superseding and superseded like runs (the job plumbing is engine.cpp's).
// A selection without a training path is left out and named, as a run drops a selection that cannot run; the job
// fails only when none can train.
#include "gui/document/engine.h"

#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/load_input.h"

#include <QElapsedTimer>

#include <algorithm>
#include <chrono>

namespace convscope::gui {

namespace {
    // Why `selection` cannot train here, or empty. Asked on the worker: making a session is cheap (prepare allocates),
    // but a GPU backend's session belongs to the thread that runs it.
    std::string trainingRefusal(const Selection& selection, const SessionOptions& options)
    {
        if (selection.fused)
            return "fused selections are unsupported in training (batch norm trains on batch statistics)";
        try {
            const std::shared_ptr<Backend> backend = BackendRegistry::instance().resolve(selection);
            if (!backend)
                return "no backend " + selection.backend;
            if (!backend->createTrainingSession(selection.algorithm, options))
                return "the " + selection.backend + " backend has no backward ops yet";
        } catch (const std::exception& e) {
            return e.what();
        }
        return {};
    }
} // namespace

int Engine::startTraining(const Network& net, const TrainRequest& request)
{
    const QString refusal = request.selections.empty() ? tr("Cannot train: no backend selected")
        : !request.target || request.target->empty()   ? tr("Cannot train: no target")
                                                       : QString();
    return startJob(refusal, false,
        [this, net, request](int jobId, CancelFlag cancel) { trainJob(jobId, net, request, std::move(cancel)); });
}

void Engine::trainJob(int jobId, Network net, TrainRequest request, CancelFlag cancel)
{
    guardJob(jobId, cancel, [&] {
        QElapsedTimer wall;
        wall.start();
        auto outcome = std::make_shared<TrainOutcome>();
        outcome->jobId = jobId;
        outcome->target = request.target;

        TrainRunOptions o;
        o.training = request.training;
        o.warmup = request.warmup;
        o.steps = request.steps;
        o.session.math = request.math;
        o.keepWeightGradients = true;
        std::vector<std::string> refusals;
        for (const Selection& s : request.selections) {
            const std::string why = trainingRefusal(s, o.session);
            if (why.empty())
                o.selections.push_back(s);
            else {
                outcome->skipped.emplace_back(s, why);
                refusals.push_back(s.str() + ": " + why);
            }
        }
        if (o.selections.empty()) {
            std::string all;
            for (const std::string& r : refusals)
                all += (all.empty() ? "" : "; ") + r;
            throw UnsupportedError("no selection can train (" + all
                + "); train on cpu.direct or cpu.im2col_gemm (every math mode), or on cudnn.auto");
        }

        outcome->input
            = request.input ? request.input : std::make_shared<const Tensor>(loadInput(net.input, net.baseDir));
        const double total = double(o.selections.size()) * std::max(1, o.steps);
        auto lastReport = std::make_shared<std::chrono::steady_clock::time_point>();
        o.stepDone = [&, lastReport](size_t selection, int step, double loss) {
            if (cancel->load())
                throw Cancelled();
            const auto now = std::chrono::steady_clock::now();
            const double fraction = (double(selection) * o.steps + step) / total;
            if (fraction < 1.0 && now - *lastReport < std::chrono::milliseconds(30))
                return;
            *lastReport = now;
            const QString what = tr("%1 · training step %2 of %3 · loss %4")
                                     .arg(QString::fromStdString(o.selections[selection].str()))
                                     .arg(step)
                                     .arg(o.steps)
                                     .arg(loss, 0, 'g', 4);
            deliver(jobId, [this, jobId, fraction, what]() { Q_EMIT progress(jobId, fraction, what); });
        };
        outcome->result = trainNetwork(std::move(net), *outcome->input, *request.target, o);
        outcome->result.options.stepDone = nullptr; // it refers to this job's frame
        outcome->wallMs = double(wall.nsecsElapsed()) / 1e6;
        TrainOutcomePtr done = outcome;
        finishJob(jobId, [this, jobId, done]() { Q_EMIT trainingFinished(jobId, done); });
    });
}

} // namespace convscope::gui
