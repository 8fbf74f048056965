// convscope: the window. `convscope [NET.json]` opens a network (LeNet-5 by default); the headless modes
// (--screenshot, --bench-latency) render offscreen and exit.
#include "compute/cpu_threads.h"
#include "convscope_config.h"
#include "gui/app/headless.h"
#include "gui/app/main_window.h"
#include "gui/app/project_controller.h"
#include "gui/pages/input_panel.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QIcon>
#include <QStandardPaths>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

using namespace convscope::gui;

int main(int argc, char** argv)
{
    // OpenMP threads (cpu.im2col_gemm) spin for a while after every parallel region by default. In a
    // window on a small machine that spinning starves the GUI thread: on 2 cores an edit-to-feature-map
    // refresh of LeNet-5 took ~105 ms instead of ~27 ms. libgomp reads its wait policy once, when it is
    // loaded (before main), so the only way to set it for ourselves is to start again with it set.
    // OpenBLAS chooses its kernels the same way: a CPU its build does not know gets the generic ones unless
    // OPENBLAS_CORETYPE says better (compute/cpu_threads.h). One restart sets both.
    bool restart = convscope::chooseKnownBlasCore();
    if (!std::getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
        restart = true;
    }
    if (restart)
        execv("/proc/self/exe", argv); // returns only on failure: then run as we are

    // The headless modes need no display: choose the offscreen platform before QApplication exists.
    // So do --help and --version: they print and exit, and must not abort for want of a display.
    bool headless = false;
    for (int i = 1; i < argc; ++i)
        headless = headless || !std::strcmp(argv[i], "--screenshot") || !std::strncmp(argv[i], "--screenshot=", 13)
            || !std::strcmp(argv[i], "--bench-latency") || !std::strcmp(argv[i], "--help")
            || !std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help-all") || !std::strcmp(argv[i], "--version")
            || !std::strcmp(argv[i], "-v");
    if (headless && !std::getenv("QT_QPA_PLATFORM"))
        setenv("QT_QPA_PLATFORM", "offscreen", 1);
    // The window itself needs one: say so instead of Qt's abort.
    if (!headless && !std::getenv("QT_QPA_PLATFORM") && !std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY")) {
        std::fprintf(stderr,
            "convscope: no display (neither DISPLAY nor WAYLAND_DISPLAY is set). Run it in a desktop session, "
            "under xvfb-run, or headless with --screenshot out.png; convscope-cli runs without one.\n");
        return 1;
    }

    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("ConvScope"));
    QApplication::setApplicationName(QStringLiteral("ConvScope"));
    QApplication::setApplicationVersion(QStringLiteral(CONVSCOPE_VERSION));
    QApplication::setDesktopFileName(QStringLiteral(CONVSCOPE_APP_ID));
    QApplication::setWindowIcon(QIcon::fromTheme(QStringLiteral(CONVSCOPE_APP_ID)));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("ConvScope: a visual profiler for CNN layers"));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(
        QStringLiteral("file"), QStringLiteral("A network (.json) to open"), QStringLiteral("[file]"));
    const QCommandLineOption open(
        QStringLiteral("open"), QStringLiteral("Open this network file."), QStringLiteral("NET.json"));
    const QCommandLineOption run(QStringLiteral("run"),
        QStringLiteral("Run these selections (comma-separated, e.g. cpu.direct,cpu.im2col_gemm)."),
        QStringLiteral("SELECTIONS"));
    const QCommandLineOption select(
        QStringLiteral("select-layer"), QStringLiteral("Select layer N (0-based)."), QStringLiteral("N"));
    const QCommandLineOption item(QStringLiteral("item"),
        QStringLiteral("For --screenshot: show batch item N's feature maps (0-based)."), QStringLiteral("N"));
    const QCommandLineOption difference(QStringLiteral("difference"),
        QStringLiteral("For --screenshot: show |selection − reference| (a TF32/FP16/BF16 run's rounding)."));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
        QStringLiteral("Render the window offscreen after the run, write it to this PNG and exit."),
        QStringLiteral("out.png"));
    const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size for --screenshot (WxH)."),
        QStringLiteral("WxH"), QStringLiteral("1600x1000"));
    const QCommandLineOption warmup(QStringLiteral("warmup"), QStringLiteral("Warm-up passes for --run."),
        QStringLiteral("N"), QStringLiteral("1"));
    const QCommandLineOption repeat(
        QStringLiteral("repeat"), QStringLiteral("Timed passes for --run."), QStringLiteral("N"), QStringLiteral("3"));
    const QCommandLineOption bench(QStringLiteral("bench-latency"),
        QStringLiteral("Measure edit-to-shapes and edit-to-feature-map latency offscreen, print it and exit."));
    const QCommandLineOption iterations(QStringLiteral("iterations"), QStringLiteral("Edits for --bench-latency."),
        QStringLiteral("N"), QStringLiteral("40"));
    const QCommandLineOption openSession(QStringLiteral("open-session"),
        QStringLiteral("Open a folder written by convscope-cli run --save-session (read-only)."),
        QStringLiteral("DIR"));
    const QCommandLineOption view(QStringLiteral("view"),
        QStringLiteral("For --screenshot: the page in front (graph, timing, roofline, explorer, sweep, device)."),
        QStringLiteral("PAGE"));
    const QCommandLineOption sweepPreset(QStringLiteral("sweep-preset"),
        QStringLiteral("For --screenshot: run this sweep preset (unet-channels, crossover, kernel-size; NAME:A-B "
                       "keeps points A to B) with the --run selections."),
        QStringLiteral("NAME"));
    const QCommandLineOption explore(
        QStringLiteral("explore"), QStringLiteral("For --screenshot --run: explore cuDNN's algorithms too."));
    const QCommandLineOption presentation(
        QStringLiteral("presentation"), QStringLiteral("Start in presentation mode (larger fonts, thicker lines)."));
    const QCommandLineOption exportReport(QStringLiteral("export-report"),
        QStringLiteral("For --screenshot: also write the report (.pdf, .html, .md, .csv, .json)."),
        QStringLiteral("FILE"));
    const QCommandLineOption graph(QStringLiteral("graph"),
        QStringLiteral("For --screenshot: every block of the graph page expanded or collapsed."),
        QStringLiteral("expanded|collapsed"));
    const QCommandLineOption toggles(QStringLiteral("toggle-presentation"),
        QStringLiteral("For --screenshot: toggle presentation mode N times before the shot and say whether the layout "
                       "is as it was."),
        QStringLiteral("N"));
    const QCommandLineOption timeout(QStringLiteral("timeout"),
        QStringLiteral("For --screenshot: the seconds --run or --sweep-preset may take before it is cancelled."),
        QStringLiteral("SECONDS"), QStringLiteral("120"));
    parser.addOptions({ open, run, select, item, difference, screenshot, size, warmup, repeat, bench, iterations,
        openSession, view, sweepPreset, explore, presentation, exportReport, graph, toggles, timeout });
    parser.process(app);

    auto intOption = [&](const QCommandLineOption& o, int* out) {
        bool ok = false;
        *out = parser.value(o).toInt(&ok);
        if (!ok || *out < 0)
            std::fprintf(stderr, "convscope: --%s expects a non-negative integer, got \"%s\"\n",
                qPrintable(o.names().first()), qPrintable(parser.value(o)));
        return ok && *out >= 0;
    };

    if (parser.isSet(bench)) {
        QStandardPaths::setTestModeEnabled(true); // leave the user's settings alone
        MainWindow window(false);
        int n = 40;
        if (!intOption(iterations, &n) || n < 1)
            return 2;
        return runLatencyBenchmark(window, n);
    }

    QString file = parser.value(open);
    if (file.isEmpty() && !parser.positionalArguments().isEmpty())
        file = parser.positionalArguments().first();

    if (parser.isSet(screenshot)) {
        ScreenshotOptions o;
        o.network = file;
        o.session = parser.value(openSession);
        o.view = parser.value(view);
        o.sweepPreset = parser.value(sweepPreset);
        o.explore = parser.isSet(explore);
        o.presentation = parser.isSet(presentation);
        o.exportReport = parser.value(exportReport);
        o.graph = parser.value(graph);
        if (parser.isSet(toggles) && !intOption(toggles, &o.presentationToggles))
            return 2;
        o.output = parser.value(screenshot);
        if (parser.isSet(run))
            o.selections = parser.value(run).split(QLatin1Char(','), Qt::SkipEmptyParts);
        if (parser.isSet(select) && !intOption(select, &o.selectLayer))
            return 2;
        if (parser.isSet(item) && !intOption(item, &o.batchItem))
            return 2;
        o.difference = parser.isSet(difference);
        if (!intOption(warmup, &o.warmup) || !intOption(repeat, &o.repeat))
            return 2;
        int seconds = 0;
        if (!intOption(timeout, &seconds))
            return 2;
        if (seconds < 1 || seconds > 86400) {
            std::fprintf(stderr, "convscope: --timeout expects seconds from 1 to 86400, got \"%s\"\n",
                qPrintable(parser.value(timeout)));
            return 2;
        }
        o.timeoutMs = seconds * 1000;
        const QStringList wh = parser.value(size).split(QLatin1Char('x'));
        if (wh.size() != 2 || wh[0].toInt() < 320 || wh[1].toInt() < 240) {
            std::fprintf(stderr, "convscope: --size expects WxH (at least 320x240), got \"%s\"\n",
                qPrintable(parser.value(size)));
            return 2;
        }
        o.size = QSize(wh[0].toInt(), wh[1].toInt());
        QStandardPaths::setTestModeEnabled(true);
        MainWindow window(false);
        return runScreenshot(window, o);
    }
    if (parser.isSet(run) || parser.isSet(select) || parser.isSet(item)) {
        std::fprintf(stderr, "convscope: --run, --select-layer and --item are for --screenshot\n");
        return 2;
    }

    MainWindow window;
    window.show();
    if (parser.isSet(presentation))
        window.setPresentationMode(true);
    if (parser.isSet(openSession)) {
        window.openSession(parser.value(openSession));
    } else {
        // A picture or an .npy is an input, not a network: it goes into LeNet-5, and the window says so (openAny).
        const QString lenet = ProjectController::examplesDir() + QStringLiteral("/lenet5.json");
        if ((file.isEmpty() || InputPanel::isInputFile(file)) && QFileInfo::exists(lenet))
            window.openAny(lenet);
        if (!file.isEmpty())
            window.openAny(file);
    }
    return app.exec();
}
