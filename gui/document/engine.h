// The engine façade: the one object the window talks to for shapes and runs. It owns the worker thread
// where every run happens (one thread, so CUDA / cuDNN handles stay on it), tags each job with an id and
// drops the results of a job the user has superseded. Results come back as typed, queued signals; the
// GUI thread never waits on the worker (only the destructor joins it). A run reports where it is while it goes (the
// selection, the pass and the layer: runProgress) and its whole outcome when it ends: a layer's time means something
// only once its repeats are done, so there is no per-layer result worth streaming.
#pragma once

#include "compute/backend.h"
#include "compute/interpolation.h"
#include "compute/network.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "compute/sweep.h"
#include "compute/training/train_run.h"

#include <QObject>
#include <QString>
#include <QThread>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

namespace convscope::gui {

struct RunRequest {
    std::vector<Selection> selections;
    int warmup = 0;
    int repeat = 1;
    bool live = false; // an automatic rerun after an edit (no reference, no timing worth showing)
    bool withReference = true;
    bool explore = false; // ask the backends' algorithm explorers (cudnn) about every conv layer
    MathMode math = MathMode::FP32;
};

// What the Run panel's controls describe, kept by the engine so that every page reads them from there and no page
// reaches into another: the Run panel writes them (and follows them when something else changes them: a sweep
// preset's selections, a selection pinned from the Explorer); the window's Run, the sweep and interpolation pages
// read them.
struct RunSettings {
    std::vector<Selection> selections; // in the order they run; request() puts the reference first
    int warmup = 3;
    int repeat = 10;
    bool explore = false; // ask the backends' algorithm explorers (cudnn) about every conv layer
    MathMode math = MathMode::FP32;
    bool livePreview = true; // rerun small networks after every edit
    // Check every layer's output against cpu.direct (the error columns, the |Δ| view). It costs a cpu.direct pass,
    // which on a large network takes longer than the run itself, so a person may switch it off.
    bool checkReference = true;
    RunRequest request() const; // a measured run with these settings (the reference's selection first)
    bool operator==(const RunSettings&) const = default;
};

// Everything one finished job produced: the network as it ran (parameters materialised), its input
// and the profiler's result with every layer output kept.
struct RunOutcome {
    int jobId = 0;
    bool live = false;
    Network network;
    Tensor input;
    RunResult result;
    double wallMs = 0;
};
using RunOutcomePtr = std::shared_ptr<const RunOutcome>;

// A latent interpolation (compute/interpolation.h): the network cut at `at`, inputs `from` and `to` (input sources as
// in the file: sample:voxels:chair, an .npy path, random:SEED), decoded batched and one by one on each selection.
struct InterpolationRequest {
    std::string at = "latent";
    std::string from = "sample:voxels:chair", to = "sample:voxels:sphere";
    int steps = 11;
    RunRequest run; // selections, warm-ups, repeats, math
};
using InterpolationResultPtr = std::shared_ptr<const InterpolationResult>;

// A training run (issue 33, engine_training.cpp): trainNetwork (compute/training/train_run.h) on the worker. The
// selections that cannot train (no backward ops, a fused selection) are left out and named, as a run drops a selection.
struct TrainRequest {
    std::vector<Selection> selections;
    TrainingOptions training;
    int warmup = 1;
    int steps = 10;
    // The Run panel's Math (RunSettings::math): tf32, fp16 and bf16 train on cudnn; a selection that refuses the mode
    // (the CPU's, onednn's, our CUDA kernels') is left out and named.
    MathMode math = MathMode::FP32;
    std::shared_ptr<const Tensor> input; // null: the network's own input, loaded on the worker
    std::shared_ptr<const Tensor> target;
};

// What a training run produced: the run (the network with its starting parameters, each selection's steps, trained
// parameters, last step's weight gradients and input gradient), what it trained on, and what was left out.
struct TrainOutcome {
    int jobId = 0;
    TrainResult result;
    std::shared_ptr<const Tensor> input, target;
    std::vector<std::pair<Selection, std::string>> skipped; // a selection and why it cannot train
    double wallMs = 0;
};
using TrainOutcomePtr = std::shared_ptr<const TrainOutcome>;

class Engine : public QObject {
    Q_OBJECT
public:
    explicit Engine(QObject* parent = nullptr);
    ~Engine() override;

    // Shapes are not the engine's: the document infers them on the GUI thread on every edit (cheap), and the
    // shapes table and the window read them from it (NetworkDocument::shapes()).

    // Starts a run on the worker and returns its job id. Any job still running is superseded: it is
    // cancelled and its results are never emitted. Returns 0 (and emits failed) when no backend is
    // selected; a network that cannot run (invalid shapes, memory budget) fails on the worker, where
    // profile() infers its shapes once for the whole run, and `failed` says why.
    int startRun(const Network& net, const RunRequest& request);
    void cancel(); // cancels the current job (emits failed with "run cancelled")
    bool isBusy() const { return m_busyJob != 0; }
    int currentJob() const { return m_lastJob; }

    // Runs a sweep on the worker (superseding any job); emits sweepUpdated after every point, then
    // sweepFinished (or failed). Returns the job id.
    int startSweep(const Network& net, const SweepSpec& spec, const RunRequest& request);
    // Measures the roofline ceilings of these backends on the worker (one calibrationAvailable each that
    // has a calibration; calibrationFailed otherwise). Does not supersede runs: it queues behind them.
    void calibrate(const QStringList& backends);
    // Runs a latent interpolation on the worker (superseding any job), both decode modes; emits
    // interpolationFinished (or failed). Returns the job id (engine_interpolation.cpp).
    int startInterpolation(const Network& net, const InterpolationRequest& request);
    // Runs a training run on the worker (superseding any job); emits progress after the steps (throttled), then
    // trainingFinished (or failed; cancel() stops it after the step at work). Returns the job id
    // (engine_training.cpp).
    int startTraining(const Network& net, const TrainRequest& request);

    // The run settings every page reads (see RunSettings). Setting different ones emits runSettingsChanged.
    const RunSettings& runSettings() const { return m_settings; }
    void setRunSettings(const RunSettings& settings);
    // Adds `selection` to the run settings when its backend is available here and has that algorithm; false (with the
    // reason in *why) otherwise.
    bool pinSelection(const Selection& selection, QString* why = nullptr);

Q_SIGNALS:
    void started(int jobId, bool live);
    void progress(int jobId, double fraction, const QString& what);
    // A run's progress in detail (the running layer, its selection and pass), as often as `progress` for a run.
    void runProgress(int jobId, const convscope::RunProgress& where);
    void finished(int jobId, convscope::gui::RunOutcomePtr outcome);
    void failed(int jobId, const QString& message);
    void sweepUpdated(int jobId, convscope::SweepResultPtr soFar, double fraction);
    void sweepFinished(int jobId, convscope::SweepResultPtr result);
    void calibrationAvailable(const QString& backend, const convscope::DeviceCeilings& ceilings);
    void calibrationFailed(const QString& backend, const QString& why);
    void interpolationFinished(int jobId, convscope::gui::InterpolationResultPtr result);
    void trainingFinished(int jobId, convscope::gui::TrainOutcomePtr outcome);
    void runSettingsChanged();

private:
    using CancelFlag = std::shared_ptr<std::atomic<bool>>;

    // The plumbing every kind of job shares (engine.cpp). startJob supersedes whatever runs or waits, takes the next
    // job id and queues `job` on the worker; with a `refusal` it emits failed with it instead and returns 0.
    int startJob(const QString& refusal, bool live, std::function<void(int jobId, CancelFlag cancel)> job);
    // On the worker: runs `work` unless the job was superseded before it started. Cancelled ends it quietly (cancel()
    // has reported it); any other exception is delivered as failed.
    void guardJob(int jobId, const CancelFlag& cancel, const std::function<void()>& work);
    // Runs `fn` on the GUI thread if job `jobId` is still the current one by then: how the worker reports, so a
    // superseded job's results never reach the window.
    void deliver(int jobId, std::function<void()> fn);
    // Delivers the job's end: it is no longer busy, then `emitResult` emits its outcome.
    void finishJob(int jobId, std::function<void()> emitResult);

    void runJob(int jobId, Network net, RunRequest request, CancelFlag cancel);
    void sweepJob(int jobId, Network net, SweepSpec spec, RunRequest request, CancelFlag cancel);
    void interpolationJob(int jobId, Network net, InterpolationRequest request, CancelFlag cancel);
    void trainJob(int jobId, Network net, TrainRequest request, CancelFlag cancel);

    QThread m_thread;
    QObject* m_worker = nullptr; // lives on m_thread; the context jobs are queued to
    int m_lastJob = 0;
    int m_busyJob = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    RunSettings m_settings;
};

} // namespace convscope::gui

Q_DECLARE_METATYPE(convscope::gui::RunOutcomePtr)
Q_DECLARE_METATYPE(convscope::SweepResultPtr)
Q_DECLARE_METATYPE(convscope::gui::InterpolationResultPtr)
Q_DECLARE_METATYPE(convscope::gui::TrainOutcomePtr)
Q_DECLARE_METATYPE(convscope::DeviceCeilings)
Q_DECLARE_METATYPE(convscope::Selection)
Q_DECLARE_METATYPE(convscope::RunProgress)
