// The engine's latent-interpolation job (the volumes issue): on the worker thread like every run, so CUDA and cuDNN
// handles stay on it, superseding and superseded like runs and sweeps (the job plumbing is engine.cpp's).
#include "gui/document/engine.h"

#include "compute/error.h"
#include "compute/load_input.h"

#include <algorithm>

namespace convscope::gui {

int Engine::startInterpolation(const Network& net, const InterpolationRequest& request)
{
    const QString refusal = request.run.selections.empty() ? tr("Cannot interpolate: no backend selected") : QString();
    return startJob(refusal, false, [this, net, request](int jobId, CancelFlag cancel) {
        interpolationJob(jobId, net, request, std::move(cancel));
    });
}

void Engine::interpolationJob(int jobId, Network net, InterpolationRequest request, CancelFlag cancel)
{
    guardJob(jobId, cancel, [&] {
        auto item = [&](const std::string& source) {
            InputSpec in = net.input;
            in.batch = 1;
            in.source = source;
            return loadInput(in, net.baseDir);
        };
        const Tensor a = item(request.from), b = item(request.to);
        InterpolationOptions o;
        o.at = request.at;
        o.steps = request.steps;
        o.modes = { DecodeMode::Batched, DecodeMode::OneByOne };
        o.selections = request.run.selections;
        o.warmup = request.run.warmup;
        o.repeat = std::max(1, request.run.repeat);
        o.session.math = request.run.math;
        o.progress = [&](double fraction, const std::string& what) {
            if (cancel->load())
                throw Cancelled();
            deliver(jobId, [this, jobId, fraction, text = QString::fromStdString(what)]() {
                Q_EMIT progress(jobId, fraction, text);
            });
        };
        auto result = std::make_shared<const InterpolationResult>(interpolate(net, a, b, o));
        finishJob(jobId, [this, jobId, result]() { Q_EMIT interpolationFinished(jobId, result); });
    });
}

} // namespace convscope::gui
