// The engine's latent-interpolation job (the volumes issue): on the worker thread like every run, so CUDA and cuDNN
// handles stay on it, superseding and superseded like runs and sweeps.
#include "gui/engine.h"

#include "compute/error.h"
#include "compute/load_input.h"

#include <QMetaObject>

#include <algorithm>

namespace convscope::gui {

int Engine::startInterpolation(const Network& net, const InterpolationRequest& request)
{
    if (m_cancel)
        m_cancel->store(true);
    const int jobId = ++m_lastJob;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    if (request.run.selections.empty()) {
        m_busyJob = 0;
        Q_EMIT failed(jobId, tr("Cannot interpolate: no backend selected"));
        return 0;
    }
    m_busyJob = jobId;
    Q_EMIT started(jobId, false);
    QMetaObject::invokeMethod(
        m_worker, [this, jobId, net, request, cancel = m_cancel]() { interpolationJob(jobId, net, request, cancel); },
        Qt::QueuedConnection);
    return jobId;
}

void Engine::interpolationJob(
    int jobId, Network net, InterpolationRequest request, std::shared_ptr<std::atomic<bool>> cancel)
{
    if (cancel->load())
        return;
    // Delivered on the GUI thread only while this job is still the current one.
    auto deliver = [this, jobId](auto fn) {
        QMetaObject::invokeMethod(
            this,
            [this, jobId, fn = std::move(fn)]() {
                if (jobId == m_lastJob)
                    fn();
            },
            Qt::QueuedConnection);
    };
    try {
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
            deliver([this, jobId, fraction, text = QString::fromStdString(what)]() {
                Q_EMIT progress(jobId, fraction, text);
            });
        };
        auto result = std::make_shared<const InterpolationResult>(interpolate(net, a, b, o));
        deliver([this, jobId, result]() {
            m_busyJob = 0;
            Q_EMIT interpolationFinished(jobId, result);
        });
    } catch (const Cancelled&) {
    } catch (const std::exception& e) {
        deliver([this, jobId, message = QString::fromStdString(e.what())]() {
            m_busyJob = 0;
            Q_EMIT failed(jobId, message);
        });
    }
}

} // namespace convscope::gui
