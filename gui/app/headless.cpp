#include "gui/app/headless.h"

#include "compute/backend.h"
#include "gui/app/export_controller.h"
#include "gui/app/main_window.h"
#include "gui/app/project_controller.h"
#include "gui/charts/roofline_chart.h"
#include "gui/pages/feature_map_panel.h"
#include "gui/pages/network_panel.h"
#include "gui/pages/run_panel.h"
#include "gui/pages/sweep_panel.h"
#include "gui/views/graph_view.h"
#include "gui/views/layer_editor.h"
#include "gui/views/param_widgets.h"

#include <QApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QImage>
#include <QPixmap>
#include <QSaveFile>
#include <QSpinBox>
#include <QTableView>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace convscope::gui {

namespace {
    int fail(const QString& message)
    {
        std::fprintf(stderr, "convscope: %s\n", qPrintable(message));
        return 1;
    }

    // Spins the event loop until `done` says so or the time runs out.
    template <class Pred> bool waitFor(Pred done, int timeoutMs)
    {
        QElapsedTimer t;
        t.start();
        while (!done()) {
            if (t.elapsed() > timeoutMs)
                return false;
            QCoreApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents, 20);
        }
        return true;
    }

    // A run or sweep past --timeout: cancelled, and no picture of a half-finished run. The message comes first, as the
    // window's engine lets the layer at work finish before the program ends (cpu.direct's can take minutes).
    int timedOut(MainWindow& window, const QString& what, int timeoutMs)
    {
        window.engine()->cancel();
        return fail(
            QStringLiteral("the %1 did not finish within %2 s: cancelled, no screenshot written (--timeout SECONDS "
                           "allows longer; the layer at work finishes before the program ends)")
                .arg(what)
                .arg(timeoutMs / 1000));
    }

    void settle(int ms)
    {
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < ms)
            QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }

    struct Summary {
        double median, min, max;
    };
    Summary summarize(std::vector<double> v)
    {
        std::sort(v.begin(), v.end());
        return { v[v.size() / 2], v.front(), v.back() };
    }
} // namespace

int runScreenshot(MainWindow& window, const ScreenshotOptions& o)
{
    window.project()->setDiscardQuestion([] { return ProjectController::Answer::Discard; });
    window.resize(o.size);
    window.show();
    window.resetLayout();
    QCoreApplication::processEvents();
    if (o.presentation)
        window.setPresentationMode(true);
    if (!o.session.isEmpty()) {
        if (!window.openSession(o.session))
            return fail(window.bannerText());
    } else if (!o.network.isEmpty() && !window.openAny(o.network))
        return fail(window.bannerText());
    const int layers = int(window.document()->network().layers.size());
    if (o.selectLayer >= layers)
        return fail(QStringLiteral("--select-layer %1: the network has %2 layers (0 to %3)")
                        .arg(o.selectLayer)
                        .arg(layers)
                        .arg(layers - 1));
    if (o.selectLayer >= 0)
        window.networkPanel()->setCurrentLayer(o.selectLayer);

    bool finished = false, failed = false;
    QString failure;
    int job = 0;
    QObject::connect(window.engine(), &Engine::finished, &window, [&](int id, RunOutcomePtr) {
        if (job == 0 || id == job)
            finished = true;
    });
    QObject::connect(window.engine(), &Engine::failed, &window, [&](int id, const QString& why) {
        if (id == job) {
            failed = true;
            failure = why;
        }
    });
    if (!o.selections.isEmpty() && !o.session.isEmpty())
        return fail(QStringLiteral("--run and --open-session exclude each other: a session is read-only"));
    if (!o.selections.isEmpty()) {
        std::vector<Selection> sels;
        try {
            for (const QString& s : o.selections)
                sels.push_back(Selection::parse(s.trimmed().toStdString()));
        } catch (const std::exception& e) {
            return fail(QString::fromStdString(e.what()));
        }
        QString why;
        if (!window.runPanel()->setSelections(sels, &why))
            return fail(QStringLiteral("--run %1: %2").arg(o.selections.join(QLatin1Char(',')), why));
        window.runPanel()->setWarmupRepeat(o.warmup, o.repeat);
        window.runPanel()->setExplore(o.explore);
    }
    const bool sweepMode = !o.sweepPreset.isEmpty(); // a sweep instead of a run, with the same selections
    if (!o.selections.isEmpty() && !sweepMode) {
        job = window.triggerRun();
        if (job == 0)
            return fail(window.runPanel()->message());
        if (!waitFor([&] { return finished || failed; }, o.timeoutMs))
            return timedOut(window, QStringLiteral("run"), o.timeoutMs);
        if (failed)
            return fail(failure);
    } else if (o.session.isEmpty() && window.document()->shapes().ok()
        && !window.document()->network().layers.empty()) {
        waitFor([&] { return finished; }, 5000); // the live preview, when the network is small enough
    }
    if (o.batchItem >= 0 && !window.featureMaps()->setBatchItem(o.batchItem))
        return fail(QStringLiteral("--item %1: the input has %2 batch items (0 to %3)")
                        .arg(o.batchItem)
                        .arg(window.featureMaps()->batchItems())
                        .arg(window.featureMaps()->batchItems() - 1));
    if (o.difference && !window.featureMaps()->showDifference())
        return fail(QStringLiteral("--difference: the run has no second selection or reference to compare with"));
    if (sweepMode) {
        const int colon = o.sweepPreset.indexOf(QLatin1Char(':'));
        window.sweepPanel()->setPreset(o.sweepPreset.left(colon), colon < 0 ? QString() : o.sweepPreset.mid(colon + 1));
        if (!o.selections.isEmpty()) { // --run overrides the preset's suggestion
            std::vector<Selection> sels;
            for (const QString& s : o.selections)
                sels.push_back(Selection::parse(s.trimmed().toStdString()));
            window.runPanel()->setSelections(sels);
        }
        bool swept = false;
        QObject::connect(window.engine(), &Engine::sweepFinished, &window, [&](int id, SweepResultPtr) {
            if (id == job)
                swept = true;
        });
        job = window.triggerSweep();
        if (job == 0)
            return fail(window.sweepPanel()->message());
        if (!waitFor([&] { return swept || failed; }, o.timeoutMs))
            return timedOut(window, QStringLiteral("sweep"), o.timeoutMs);
        if (failed)
            return fail(failure);
    }
    if (!o.view.isEmpty() && !window.showView(o.view))
        return fail(
            QStringLiteral("--view %1: expected graph, timing, roofline, explorer, sweep or device").arg(o.view));
    if (o.view == QLatin1String("roofline"))
        waitFor([&] { return !window.roofline()->isCalibrating(); }, 30000);
    if (!o.exportReport.isEmpty()) {
        window.exporter()->setOverwriteQuestion([](const QString&) { return true; }); // asked for on the command line
        if (!window.exporter()->exportReport(o.exportReport))
            return fail(window.bannerText());
        std::printf("wrote %s\n", qPrintable(o.exportReport));
    }
    if (o.graph == QLatin1String("expanded"))
        window.graphView()->expandAll();
    else if (o.graph == QLatin1String("collapsed"))
        window.graphView()->collapseAll();
    else if (!o.graph.isEmpty())
        return fail(QStringLiteral("--graph %1: expected expanded or collapsed").arg(o.graph));
    if (o.presentationToggles > 0) {
        settle(150);
        const QByteArray state = window.saveState();
        const QSize size = window.size();
        for (int i = 0; i < o.presentationToggles; ++i) {
            window.setPresentationMode(!window.presentationMode());
            settle(150);
        }
        std::printf("presentation mode toggled %d times: the layout %s, the window %dx%d (was %dx%d)\n",
            o.presentationToggles, window.saveState() == state ? "is as it was" : "changed", window.width(),
            window.height(), size.width(), size.height());
    }
    settle(150); // let throttled charts and layouts catch up
    if (window.size() != o.size) {
        std::fprintf(stderr, "convscope: note: the window grew to %dx%d while loading; back to %dx%d\n", window.width(),
            window.height(), o.size.width(), o.size.height());
        window.resize(o.size);
        settle(100);
    }
    if (window.size() != o.size) {
        // The layout could not shrink that far: say which part is the widest, so it can be fixed.
        std::fprintf(stderr, "convscope: warning: the window is %dx%d, not %dx%d (central %dx%d minimum)\n",
            window.width(), window.height(), o.size.width(), o.size.height(),
            window.centralWidget()->minimumSizeHint().width(), window.centralWidget()->minimumSizeHint().height());
        for (QDockWidget* d : window.findChildren<QDockWidget*>())
            std::fprintf(stderr, "  %s: minimum %dx%d\n", qPrintable(d->objectName()), d->minimumSizeHint().width(),
                d->minimumSizeHint().height());
    }
    const QPixmap shot = window.grab();
    QSaveFile file(o.output); // atomic: a failed write never leaves half a PNG under the name
    if (shot.isNull() || !file.open(QIODevice::WriteOnly) || !shot.save(&file, "PNG") || !file.commit())
        return fail(QStringLiteral("could not write the screenshot %1").arg(o.output));
    std::printf("wrote %s (%dx%d)\n", qPrintable(o.output), shot.width(), shot.height());
    return 0;
}

int runLatencyBenchmark(MainWindow& window, int iterations)
{
    window.project()->setDiscardQuestion([] { return ProjectController::Answer::Discard; });
    window.resize(1600, 1000);
    window.show();
    window.resetLayout();
    QCoreApplication::processEvents();

    // 1. Edit -> shapes table on a 20-layer network (conv/relu pairs), live preview off.
    Network net;
    net.name = "bench-20";
    net.input = { 1, 3, 64, 64, false, "random:1" };
    for (int i = 0; i < 10; ++i) {
        Layer conv;
        Conv2d spec; // 3×3, stride 1, dilation 1, one group, bias: the defaults
        spec.out_channels = 16;
        spec.padding = Padding2d::symmetric(1, 1);
        conv.spec = spec;
        conv.name = "conv" + std::to_string(i + 1);
        Layer relu;
        relu.spec = ReLU {};
        relu.name = "relu" + std::to_string(i + 1);
        net.layers.push_back(conv);
        net.layers.push_back(relu);
    }
    window.runPanel()->setLiveEnabled(false);
    window.document()->reset(net, QString());
    window.networkPanel()->setCurrentLayer(0);
    QCoreApplication::processEvents();
    auto* stride = qobject_cast<PairEditor*>(window.networkPanel()->editor()->field(QStringLiteral("stride")));
    if (!stride)
        return fail(QStringLiteral("no stride editor"));
    std::vector<double> shapesMs, shapesPaintMs;
    for (int i = 0; i < iterations; ++i) {
        QElapsedTimer t;
        t.start();
        stride->heightBox()->setValue(i % 2 ? 1 : 2); // linked: both directions, one undoable edit
        const double edit = double(t.nsecsElapsed()) / 1e6;
        window.shapesView()->viewport()->repaint();
        shapesMs.push_back(edit);
        shapesPaintMs.push_back(double(t.nsecsElapsed()) / 1e6);
    }

    // 2. Edit -> refreshed feature maps on LeNet-5 with the live preview.
    window.runPanel()->setLiveEnabled(true);
    if (!window.project()->openFile(ProjectController::examplesDir() + QStringLiteral("/lenet5.json")))
        return fail(window.bannerText());
    window.networkPanel()->setCurrentLayer(0);
    bool updated = false;
    QObject::connect(window.featureMaps(), &FeatureMapPanel::mapsUpdated, &window, [&] { updated = true; });
    waitFor([&] { return window.featureMaps()->outcome() != nullptr; }, 10000);
    stride = qobject_cast<PairEditor*>(window.networkPanel()->editor()->field(QStringLiteral("stride")));
    std::vector<double> mapsMs;
    for (int i = 0; i < iterations; ++i) {
        settle(5);
        updated = false;
        QElapsedTimer t;
        t.start();
        stride->heightBox()->setValue(i % 2 ? 1 : 2);
        if (!waitFor(
                [&] {
                    return updated
                        && window.featureMaps()->outcome()->network.layers[0].spec
                        == window.document()->network().layers[0].spec;
                },
                5000))
            return fail(QStringLiteral("feature maps did not refresh"));
        window.featureMaps()->grid()->repaint();
        mapsMs.push_back(double(t.nsecsElapsed()) / 1e6);
    }
    const Summary a = summarize(shapesMs), b = summarize(shapesPaintMs), c = summarize(mapsMs);
    std::printf("edit -> shapes table (20 layers, %d edits): median %.2f ms, min %.2f, max %.2f "
                "(with table repaint: median %.2f ms, max %.2f)\n",
        iterations, a.median, a.min, a.max, b.median, b.max);
    std::printf("edit -> feature maps (LeNet-5, live cpu.tap_gemm, %d edits, first edit runs at once, bursts "
                "debounced): median %.1f ms, "
                "min %.1f, max %.1f\n",
        iterations, c.median, c.min, c.max);
    return 0;
}

} // namespace convscope::gui
