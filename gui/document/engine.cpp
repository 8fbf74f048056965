#include "gui/document/engine.h"

#include "compute/backend_registry.h"
#include "compute/error.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QMetaObject>

#include <algorithm>
#include <chrono>

namespace convscope::gui {

Engine::Engine(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<convscope::gui::RunOutcomePtr>();
    qRegisterMetaType<convscope::SweepResultPtr>();
    qRegisterMetaType<convscope::gui::InterpolationResultPtr>();
    qRegisterMetaType<convscope::gui::TrainOutcomePtr>();
    qRegisterMetaType<convscope::DeviceCeilings>();
    qRegisterMetaType<convscope::RunProgress>();
    // The settings a new window starts with: every algorithm of the CPU backend, three warm-ups, ten repeats.
    for (const auto& backend : BackendRegistry::instance().backends())
        if (backend->name() == "cpu" && backend->availability().available)
            for (const AlgorithmInfo& algo : backend->algorithms())
                m_settings.selections.push_back({ backend->name(), algo.name });
    m_thread.setObjectName(QStringLiteral("convscope-engine"));
    m_worker = new QObject;
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_thread.start();
}

Engine::~Engine()
{
    if (m_cancel)
        m_cancel->store(true);
    // Superseded jobs still queued for the worker would never run: drop them (and the network copies they hold)
    // now. LeakSanitizer found their events outliving the worker when the window closed during a live edit.
    QCoreApplication::removePostedEvents(m_worker);
    m_thread.quit();
    m_thread.wait();
}

RunRequest RunSettings::request() const
{
    RunRequest r;
    r.selections = selections;
    // In the Run panel's order (by name), the reference first so its outputs are at hand for the difference view.
    std::stable_sort(r.selections.begin(), r.selections.end(),
        [](const Selection& a, const Selection& b) { return a.str() < b.str(); });
    std::stable_partition(r.selections.begin(), r.selections.end(),
        [](const Selection& s) { return s.backend == "cpu" && s.algorithm == "direct" && !s.fused; });
    r.warmup = warmup;
    r.repeat = repeat;
    r.explore = explore;
    r.math = math;
    r.withReference = checkReference;
    return r;
}

void Engine::setRunSettings(const RunSettings& settings)
{
    if (settings == m_settings)
        return;
    m_settings = settings;
    Q_EMIT runSettingsChanged();
}

bool Engine::pinSelection(const Selection& selection, QString* why)
{
    const auto backend = BackendRegistry::instance().find(selection.backend);
    const std::vector<AlgorithmInfo> algos = backend ? backend->algorithms() : std::vector<AlgorithmInfo> {};
    QString refusal;
    if (!backend || std::none_of(algos.begin(), algos.end(), [&](const AlgorithmInfo& a) {
            return a.name == selection.algorithm;
        }))
        refusal = tr("no such selection");
    else if (!backend->availability().available)
        refusal = tr("%1 is unavailable: %2")
                      .arg(QString::fromStdString(selection.backend),
                          QString::fromStdString(backend->availability().reason));
    if (!refusal.isEmpty()) {
        if (why)
            *why = refusal;
        return false;
    }
    RunSettings s = m_settings;
    if (std::find(s.selections.begin(), s.selections.end(), selection) == s.selections.end())
        s.selections.push_back(selection);
    setRunSettings(s);
    return true;
}

int Engine::startJob(const QString& refusal, bool live, std::function<void(int jobId, CancelFlag cancel)> job)
{
    if (m_cancel)
        m_cancel->store(true); // supersede whatever is running or queued
    const int jobId = ++m_lastJob;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    if (!refusal.isEmpty()) {
        m_busyJob = 0;
        Q_EMIT failed(jobId, refusal);
        return 0;
    }
    m_busyJob = jobId;
    Q_EMIT started(jobId, live);
    QMetaObject::invokeMethod(
        m_worker, [jobId, cancel = m_cancel, job = std::move(job)]() { job(jobId, cancel); }, Qt::QueuedConnection);
    return jobId;
}

void Engine::deliver(int jobId, std::function<void()> fn)
{
    QMetaObject::invokeMethod(
        this,
        [this, jobId, fn = std::move(fn)]() {
            if (jobId == m_lastJob)
                fn();
        },
        Qt::QueuedConnection);
}

void Engine::finishJob(int jobId, std::function<void()> emitResult)
{
    deliver(jobId, [this, emitResult = std::move(emitResult)]() {
        m_busyJob = 0;
        emitResult();
    });
}

void Engine::guardJob(int jobId, const CancelFlag& cancel, const std::function<void()>& work)
{
    if (cancel->load())
        return; // superseded before it started
    try {
        work();
    } catch (const Cancelled&) {
        // Only reached when superseded or cancelled; cancel() has already reported it.
    } catch (const std::exception& e) {
        finishJob(
            jobId, [this, jobId, message = QString::fromStdString(e.what())]() { Q_EMIT failed(jobId, message); });
    }
}

int Engine::startRun(const Network& net, const RunRequest& request)
{
    // The shapes are checked by profile() on the worker (the window checks its document's before it asks).
    return startJob(request.selections.empty() ? tr("Cannot run: no backend selected") : QString(), request.live,
        [this, net, request](int jobId, CancelFlag cancel) { runJob(jobId, net, request, std::move(cancel)); });
}

int Engine::startSweep(const Network& net, const SweepSpec& spec, const RunRequest& request)
{
    const QString refusal = request.selections.empty() ? tr("Cannot sweep: no backend selected")
        : spec.points.empty()                          ? tr("Cannot sweep: no values")
                                                       : QString();
    return startJob(refusal, false, [this, net, spec, request](int jobId, CancelFlag cancel) {
        sweepJob(jobId, net, spec, request, std::move(cancel));
    });
}

void Engine::sweepJob(int jobId, Network net, SweepSpec spec, RunRequest request, CancelFlag cancel)
{
    guardJob(jobId, cancel, [&] {
        SweepOptions o;
        o.selections = request.selections;
        o.warmup = request.warmup;
        o.repeat = request.repeat;
        o.session.math = request.math;
        o.cancel = cancel.get();
        o.pointDone = [&](const SweepResult& soFar, double fraction) {
            auto snapshot = std::make_shared<const SweepResult>(soFar);
            deliver(jobId, [this, jobId, snapshot, fraction]() {
                Q_EMIT progress(jobId, fraction,
                    tr("sweep point %1 of %2").arg(snapshot->samples.size()).arg(snapshot->spec.points.size()));
                Q_EMIT sweepUpdated(jobId, snapshot, fraction);
            });
        };
        auto result = std::make_shared<const SweepResult>(runSweep(net, spec, o));
        finishJob(jobId, [this, jobId, result]() { Q_EMIT sweepFinished(jobId, result); });
    });
}

void Engine::calibrate(const QStringList& backends)
{
    QMetaObject::invokeMethod(
        m_worker,
        [this, backends]() {
            for (const QString& name : backends) {
                auto backend = BackendRegistry::instance().find(name.toStdString());
                QString why;
                std::optional<DeviceCeilings> c;
                try {
                    if (!backend)
                        why = tr("no backend %1").arg(name);
                    else if (!backend->availability().available)
                        why = QString::fromStdString(backend->availability().reason);
                    else if (!(c = backend->calibrate(SessionOptions {})))
                        why = tr("%1 has no calibration").arg(name);
                } catch (const std::exception& e) {
                    why = QString::fromStdString(e.what());
                }
                QMetaObject::invokeMethod(
                    this,
                    [this, name, c, why]() {
                        if (c)
                            Q_EMIT calibrationAvailable(name, *c);
                        else
                            Q_EMIT calibrationFailed(name, why);
                    },
                    Qt::QueuedConnection);
            }
        },
        Qt::QueuedConnection);
}

void Engine::cancel()
{
    if (!m_busyJob)
        return;
    m_cancel->store(true);
    const int job = m_busyJob;
    m_busyJob = 0;
    ++m_lastJob; // whatever the worker still sends for it is dropped
    Q_EMIT failed(job, tr("run cancelled"));
}

// Runs on the worker thread. Everything it reports goes through a queued call that checks, on the GUI
// thread, that the job is still the current one.
void Engine::runJob(int jobId, Network net, RunRequest request, CancelFlag cancel)
{
    guardJob(jobId, cancel, [&] {
        QElapsedTimer wall;
        wall.start();
        auto outcome = std::make_shared<RunOutcome>();
        outcome->jobId = jobId;
        outcome->live = request.live;

        ProfileOptions options;
        options.selections = request.selections;
        options.warmup = request.warmup;
        options.repeat = std::max(1, request.repeat);
        options.keepOutputs = true;
        options.explore = request.explore && !request.live;
        options.session.math = request.math;
        if (!request.withReference || request.live)
            options.reference.reset();
        options.cancel = cancel.get();
        // Where the run is, between layers too (throttled by the profiler): the status bar's strip shows the layer.
        // A tiny network's passes come thousands a second: at most one report every 30 ms reaches the window.
        auto lastReport = std::make_shared<std::chrono::steady_clock::time_point>();
        options.layerProgress = [jobId, lastReport, this](const RunProgress& p) {
            const auto now = std::chrono::steady_clock::now();
            if (p.fraction < 1.0 && p.dropped.empty() && now - *lastReport < std::chrono::milliseconds(30))
                return;
            *lastReport = now;
            deliver(jobId, [this, jobId, p]() {
                Q_EMIT progress(jobId, p.fraction, QString::fromStdString(p.text()));
                Q_EMIT runProgress(jobId, p);
            });
        };
        // profile() owns the run: shapes, the input, the parameters; the outcome keeps what it made.
        outcome->result = profile(std::move(net), options, &outcome->input);
        outcome->network = outcome->result.network;
        outcome->wallMs = double(wall.nsecsElapsed()) / 1e6;
        RunOutcomePtr done = outcome;
        finishJob(jobId, [this, jobId, done]() { Q_EMIT finished(jobId, done); });
    });
}

} // namespace convscope::gui
