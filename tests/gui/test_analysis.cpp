// Part 2 of the window: the timing chart's switches, the roofline, the algorithm explorer, sweeps,
// exports, saved sessions and presentation mode, driven through the real widgets offscreen.
#include "gui_helpers.h"

#include "compute/network_json.h"
#include "compute/nvtx.h"
#include "compute/session.h"
#include "gui/app/export_controller.h"
#include "gui/charts/chart_view.h"
#include "gui/charts/explorer_chart.h"
#include "gui/charts/roofline_chart.h"
#include "gui/charts/sweep_chart.h"
#include "gui/charts/timing_chart.h"
#include "gui/document/calibration_cache.h"
#include "gui/pages/device_panel.h"
#include "gui/pages/explorer_panel.h"
#include "gui/pages/feature_map_panel.h"
#include "gui/pages/run_panel.h"
#include "gui/pages/sweep_panel.h"
#include "gui/views/feature_map_grid.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>

#include <QApplication>
#include <QCheckBox>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QPushButton>
#include <QTableWidget>
#include <QXmlStreamReader>

#include <qcustomplot.h>

#include <cmath>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {

// LeNet-5 run on both CPU selections (no warm-up, 2 repeats): 13 layers × 2 selections.
RunOutcomePtr runLeNet(MainWindow& w)
{
    w.runPanel()->setLiveEnabled(false);
    REQUIRE(w.project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
    REQUIRE(w.runPanel()->setSelections({ { "cpu", "direct" }, { "cpu", "im2col_gemm" } }));
    w.runPanel()->setWarmupRepeat(0, 2);
    const int job = w.triggerRun();
    REQUIRE(job > 0);
    RunOutcomePtr o = waitForRun(w, job);
    REQUIRE(o);
    w.timingChart()->redrawNow();
    return o;
}

QByteArray readAll(const QString& path)
{
    QFile f(path);
    REQUIRE(f.open(QIODevice::ReadOnly));
    return f.readAll();
}

QString tmp(const TempDir& d, const char* name) { return QString::fromStdString((d.path / name).string()); }

} // namespace

TEST_CASE("the timing chart holds one bar per layer and selection with the run's medians", "[gui][charts]")
{
    auto w = makeWindow();
    RunOutcomePtr o = runLeNet(*w);
    TimingChart* chart = w->timingChart();
    const auto series = chart->series();
    REQUIRE(series.size() == 2);
    CHECK(chart->barSeriesCount() == 2);
    for (int s = 0; s < 2; ++s) {
        const SelectionResult& sel = o->result.selections[size_t(s)];
        CHECK(series[s].name == QString::fromStdString(sel.selection.str()));
        REQUIRE(series[s].values.size() == 13);
        for (int l = 0; l < 13; ++l) {
            const Stats& t = sel.layers[size_t(l)].computeMs;
            CHECK(series[s].keys[l] == l + 1);
            CHECK(series[s].values[l] == t.median);
            CHECK(series[s].errMinus[l] == Approx(t.median - t.min));
            CHECK(series[s].errPlus[l] == Approx(t.max - t.median));
        }
    }
    CHECK(chart->tickLabels().size() == 13);
    CHECK(chart->tickLabels().last() == QStringLiteral("probabilities"));
    // The last label is drawn whole: the axis rect leaves it room on the right.
    CHECK(chart->rightMarginNeeded() > 0);
    CHECK(chart->plot()->axisRect()->margins().right() >= chart->rightMarginNeeded());
    // Its colours are the backends' NVTX colours.
    auto* bars = qobject_cast<QCPBars*>(chart->plot()->plottable(0));
    REQUIRE(bars);
    CHECK(bars->brush().color().rgb() == QColor::fromRgba(nvtx::backendColor("cpu")).rgb());

    SECTION("log scale")
    {
        chart->logBox()->setChecked(true);
        CHECK(chart->plot()->yAxis->scaleType() == QCPAxis::stLogarithmic);
        CHECK(chart->series()[0].values.size() == 13); // every layer took some time
        chart->logBox()->setChecked(false);
        CHECK(chart->plot()->yAxis->scaleType() == QCPAxis::stLinear);
    }
    SECTION("GFLOP/s")
    {
        chart->setMetric(TimingChart::Metric::Gflops);
        const auto g = chart->series();
        const double flops = o->result.shapes.layers[0].cost.flops;
        CHECK(g[0].values[0] == Approx(flops / (o->result.selections[0].layers[0].computeMs.median * 1e6)));
        CHECK(chart->plot()->yAxis->label().contains(QStringLiteral("GFLOP/s")));
    }
    SECTION("speed-up against a baseline")
    {
        chart->setMetric(TimingChart::Metric::Speedup);
        chart->setBaseline(QStringLiteral("cpu.direct"));
        const auto s = chart->series();
        for (int l = 0; l < 13; ++l) {
            CHECK(s[0].values[l] == Approx(1.0));
            const double direct = o->result.selections[0].layers[size_t(l)].computeMs.median;
            const double gemm = o->result.selections[1].layers[size_t(l)].computeMs.median;
            CHECK(s[1].values[l] == Approx(direct / gemm));
        }
        chart->setBaseline(QStringLiteral("cpu.im2col_gemm"));
        CHECK(chart->series()[1].values[0] == Approx(1.0));
    }
    SECTION("stacked breakdown of a pass")
    {
        chart->breakdownBox()->setChecked(true);
        CHECK(chart->barSeriesCount() == 3);
        CHECK(chart->tickLabels() == QStringList({ QStringLiteral("cpu.direct"), QStringLiteral("cpu.im2col_gemm") }));
        const auto b = chart->series();
        double sum = 0;
        for (const auto& l : o->result.selections[1].layers)
            sum += l.computeMs.median;
        CHECK(b[1].values[1] == Approx(sum));
        CHECK(b[0].values[0] == 0); // no copies on the CPU
        chart->breakdownBox()->setChecked(false);
        CHECK(chart->barSeriesCount() == 2);
    }
    SECTION("clicking a layer's bars selects it everywhere")
    {
        w->showView(QStringLiteral("timing"));
        chart->plot()->replot();
        const int x = int(chart->plot()->xAxis->coordToPixel(4.0)); // layer 3 (c3)
        const int y = int(chart->plot()->axisRect()->center().y());
        CHECK(chart->layerAt(x) == 3);
        QTest::mouseClick(chart->plot(), Qt::LeftButton, {}, QPoint(x, y));
        CHECK(w->networkPanel()->currentLayer() == 3);
        CHECK(w->shapesView()->currentIndex().row() == 3);
    }
    SECTION("redraws are coalesced while results stream in")
    {
        const int before = chart->replotCount();
        for (int i = 0; i < 30; ++i)
            chart->setRun(o);
        QTest::qWait(120);
        CHECK(chart->replotCount() == before + 1);
    }
}

TEST_CASE("every export writes a file that parses, and asks before replacing one", "[gui][export]")
{
    auto w = makeWindow();
    RunOutcomePtr o = runLeNet(*w);
    ExportController* ex = w->exporter();
    TempDir dir;

    REQUIRE(ex->exportReport(tmp(dir, "r.csv")));
    const QList<QByteArray> lines = readAll(tmp(dir, "r.csv")).trimmed().split('\n');
    CHECK(lines.size() == 1 + 2 * 13);
    CHECK(lines[0].trimmed().split(',').size() == 20);
    CHECK(lines[0].contains("rel_l2_error,rounding_bound,note"));
    CHECK(lines[0].startsWith("selection,backend,algorithm,math_mode,layer_index"));

    REQUIRE(ex->exportReport(tmp(dir, "r.json")));
    const QJsonObject j = QJsonDocument::fromJson(readAll(tmp(dir, "r.json"))).object();
    CHECK(j.value(QStringLiteral("format")).toString() == QStringLiteral("convscope-report"));
    CHECK(j.value(QStringLiteral("selections")).toArray().size() == 2);

    REQUIRE(ex->exportReport(tmp(dir, "r.md")));
    CHECK(readAll(tmp(dir, "r.md")).startsWith("# ConvScope report: LeNet-5"));

    REQUIRE(ex->exportReport(tmp(dir, "r.html")));
    const QByteArray html = readAll(tmp(dir, "r.html"));
    CHECK(html.startsWith("<!DOCTYPE html>"));
    CHECK(html.contains("data:image/png;base64,iVBORw0KGgo")); // a PNG inside: self-contained
    CHECK(html.contains("<h2>Device and method</h2>"));
    CHECK(html.count("<tr>") >= 14 + 2 * 14);

    REQUIRE(ex->exportReport(tmp(dir, "r.pdf")));
    const QByteArray pdf = readAll(tmp(dir, "r.pdf"));
    CHECK(pdf.startsWith("%PDF-"));
    CHECK(pdf.size() > 20000); // pages with tables and a chart picture, not an empty document

    REQUIRE(ex->exportTrace(tmp(dir, "trace.json")));
    const QJsonArray events = QJsonDocument::fromJson(readAll(tmp(dir, "trace.json")))
                                  .object()
                                  .value(QStringLiteral("traceEvents"))
                                  .toArray();
    int complete = 0;
    for (const auto& e : events)
        complete += e.toObject().value(QStringLiteral("ph")).toString() == QStringLiteral("X") ? 1 : 0;
    CHECK(complete == 2 * 2 * 13); // 2 selections × 2 passes × 13 layers

    REQUIRE(ex->exportChart(w->timingChart(), tmp(dir, "chart.png"), QSize(1200, 700)));
    CHECK(QImage(tmp(dir, "chart.png")).size() == QSize(1200, 700));
    REQUIRE(ex->exportChart(w->timingChart(), tmp(dir, "chart.svg"), QSize(900, 500)));
    QXmlStreamReader svg(readAll(tmp(dir, "chart.svg")));
    while (!svg.atEnd() && !svg.isStartElement())
        svg.readNext();
    CHECK(svg.name() == QStringLiteral("svg"));
    REQUIRE(ex->exportChart(w->timingChart(), tmp(dir, "chart.pdf")));
    CHECK(readAll(tmp(dir, "chart.pdf")).startsWith("%PDF-"));

    w->networkPanel()->setCurrentLayer(0);
    REQUIRE(ex->exportFeatureMaps(tmp(dir, "maps.png")));
    const QImage maps(tmp(dir, "maps.png"));
    CHECK(maps.size() == w->featureMaps()->grid()->size());

    // Never overwrite without asking: declined, the old file stays as it was.
    bool asked = false;
    ex->setOverwriteQuestion([&](const QString&) { return asked = true, false; });
    const QByteArray before = readAll(tmp(dir, "r.csv"));
    CHECK_FALSE(ex->exportReport(tmp(dir, "r.csv")));
    CHECK(asked);
    CHECK(readAll(tmp(dir, "r.csv")) == before);
    ex->setOverwriteQuestion([](const QString&) { return true; });
    CHECK(ex->exportReport(tmp(dir, "r.csv")));
    // An unknown format is refused with a reason.
    CHECK_FALSE(ex->exportReport(tmp(dir, "r.docx")));
    CHECK(w->bannerText().contains(QStringLiteral("unknown report format")));
}

TEST_CASE("a saved session reopens read-only with the same numbers", "[gui][session]")
{
    TempDir dir;
    const QString folder = tmp(dir, "session");
    // Saved by the command line, as on the GPU machine.
    QProcess cli;
    cli.start(QStringLiteral(CONVSCOPE_CLI_PATH),
        { QStringLiteral("run"), QString::fromStdString((examplesDir() / "lenet5.json").string()),
            QStringLiteral("--backends"), QStringLiteral("cpu.direct,cpu.im2col_gemm"), QStringLiteral("--warmup"),
            QStringLiteral("0"), QStringLiteral("--repeat"), QStringLiteral("3"), QStringLiteral("--no-calibrate"),
            QStringLiteral("--sweep"), QStringLiteral("crossover:0-1"), QStringLiteral("--report"),
            tmp(dir, "original.json"), QStringLiteral("--save-session"), folder });
    REQUIRE(cli.waitForFinished(60000));
    INFO(cli.readAllStandardError().toStdString());
    REQUIRE(cli.exitCode() == 0);
    CHECK(QFile::exists(folder + QStringLiteral("/outputs/cpu.im2col_gemm/12_probabilities.npy")));
    // The network's own input (no --input given) is saved too, so the window shows what the maps were made from.
    CHECK(QFile::exists(folder + QStringLiteral("/input.npy")));

    auto w = makeWindow();
    REQUIRE(w->openSession(folder));
    CHECK(w->isSessionOpen());
    CHECK(w->bannerText().contains(QStringLiteral("read-only")));
    CHECK_FALSE(w->runAction()->isEnabled());
    CHECK_FALSE(w->networkPanel()->editor()->isEnabled());

    // The chart shows exactly what the report of that run says.
    const QJsonObject original = QJsonDocument::fromJson(readAll(tmp(dir, "original.json"))).object();
    w->timingChart()->redrawNow();
    const auto series = w->timingChart()->series();
    REQUIRE(series.size() == 2);
    const QJsonArray sels = original.value(QStringLiteral("selections")).toArray();
    for (int s = 0; s < 2; ++s) {
        const QJsonArray layers = sels[s].toObject().value(QStringLiteral("layers")).toArray();
        REQUIRE(layers.size() == 13);
        for (int l = 0; l < 13; ++l)
            CHECK(series[s].values[l]
                == layers[l]
                       .toObject()
                       .value(QStringLiteral("compute_ms"))
                       .toObject()
                       .value(QStringLiteral("median"))
                       .toDouble());
    }
    // Shapes and feature maps come from the folder.
    CHECK(shapeText(*w, 3) == QStringLiteral("1×16×10×10 (N, C, H, W)"));
    w->networkPanel()->setCurrentLayer(3);
    CHECK(w->featureMaps()->grid()->tileCount() == 16);
    CHECK(w->devicePanel()->text().contains(QStringLiteral("Warm-ups / repeats")));
    // The sweep measured with it (crossover sizes 8 and 16) is on the Sweep page, read-only.
    const auto saved = w->sweepPanel()->chart()->lines();
    REQUIRE(saved.size() == 2);
    CHECK(saved[0].name == QStringLiteral("cpu.direct"));
    CHECK(saved[1].xs == QVector<double>({ 8, 16 }));
    CHECK(saved[1].ys[0] > 0);
    CHECK_FALSE(w->sweepPanel()->sweepButton()->isEnabled());
    // Its own result JSON round-trips the numbers.
    SavedSession s = readSession(folder.toStdString());
    CHECK(s.result.selections[1].layers[3].computeMs.median
        == sels[1]
               .toObject()
               .value(QStringLiteral("layers"))
               .toArray()[3]
               .toObject()
               .value(QStringLiteral("compute_ms"))
               .toObject()
               .value(QStringLiteral("median"))
               .toDouble());
    CHECK(s.result.selections[1].layers[3].samplesMs.size() == 3);

    // Ceilings and explorer documents travel with a session too (written here through the engine's API).
    s.result.selections[1].layers[0].explorerJson = R"({"layer":0,"algorithms":[]})";
    DeviceCeilings gpu { "NVIDIA H200", 51000, 4300, "cuBLAS sgemm 8192³", "cudaMemcpy 1 GiB device to device" };
    const auto again = folder + QStringLiteral("-again");
    writeSession(again.toStdString(), s.network, s.input, s.result, { { "cudnn", gpu } });
    SweepResult sweep;
    sweep.spec = sweepPreset("crossover", "0-1");
    sweep.selections = { { "cpu", "im2col_gemm" } };
    sweep.samples = { { SweepSample { true, {}, Stats { 0.5, 0.4, 0.7, 0.5, 0.1, 3 }, 0.5, 0.6, 1e6 } },
        { SweepSample { false, "out of memory", {}, 0, 0, 0 } } };
    writeSessionSweep(again.toStdString(), sweep);
    SavedSession back = readSession(again.toStdString());
    REQUIRE(back.ceilings.size() == 1);
    CHECK(back.ceilings[0].backend == "cudnn");
    CHECK(back.ceilings[0].ceilings.peakGflops == 51000);
    CHECK(back.ceilings[0].ceilings.bandwidthMethod == "cudaMemcpy 1 GiB device to device");
    CHECK(back.result.selections[1].layers[0].explorerJson == R"({"algorithms":[],"layer":0})");
    CHECK(back.result.selections[0].layers[12].output->shape().str() == "[1, 10]");
    REQUIRE(w->openSession(again));
    CHECK(w->roofline()->hasCeilings(QStringLiteral("cudnn")));
    CHECK_FALSE(w->roofline()->hasCeilings(QStringLiteral("cpu"))); // never this machine's for that machine's run
    const auto sweepLines = w->sweepPanel()->chart()->lines();
    REQUIRE(sweepLines.size() == 1);
    CHECK(sweepLines[0].xs == QVector<double>({ 8 })); // the failed point is left out
    CHECK(sweepLines[0].ys == QVector<double>({ 0.5 }));
    CHECK(w->sweepPanel()->chart()->caption().contains(QStringLiteral("out of memory")));

    // Opening a network leaves the session.
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
    CHECK_FALSE(w->isSessionOpen());
    CHECK(w->runAction()->isEnabled());

    // Not a session: a reason, nothing changes.
    CHECK_FALSE(w->openSession(tmp(dir, "nothing-here")));
    CHECK(w->bannerText().contains(QStringLiteral("session.json")));
}

TEST_CASE("a sweep produces one point per value and selection", "[gui][sweep]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    Network net;
    net.name = "one conv";
    net.input = { 1, 3, 24, 24, false, "random:3" };
    Layer conv;
    conv.name = "conv";
    conv.spec = Conv2d { 8, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }, 1, true };
    net.layers.push_back(conv);
    w->document()->reset(net, QString());
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" }, { "cpu", "im2col_gemm" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    w->sweepPanel()->setRange(0, SweepParameter::OutChannels, 4, 16, 1, true);
    QSignalSpy done(w->engine(), &Engine::sweepFinished);
    const int job = w->triggerSweep();
    REQUIRE(job > 0);
    REQUIRE(done.wait(60000));
    const auto r = done.first().at(1).value<SweepResultPtr>();
    REQUIRE(r->samples.size() == 3);
    for (const auto& row : r->samples) {
        REQUIRE(row.size() == 2);
        for (const auto& x : row) {
            CHECK(x.ok);
            CHECK(x.layerMs.median > 0);
        }
    }
    CHECK(r->samples[2][0].flops == Approx(2.0 * 16 * 24 * 24 * 3 * 9)); // out 16: 2·C_out·H·W·C_in·k²
    const auto lines = w->sweepPanel()->chart()->lines();
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].xs == QVector<double>({ 4, 8, 16 }));
    CHECK(lines[1].ys.size() == 3);
    CHECK(lines[1].ys[2] == r->samples[2][1].layerMs.median);
    w->sweepPanel()->chart()->setShowCopies(true);
    w->sweepPanel()->chart()->setMetric(SweepChart::Metric::NetworkTime);
    CHECK(w->sweepPanel()->chart()->lines().size() == 4);
}

TEST_CASE("sweep presets replay the unet-encoder suite, the crossover and the kernel sizes", "[gui][sweep]")
{
    const SweepSpec unet = sweepPreset("unet-channels");
    REQUIRE(unet.points.size() == 10);
    CHECK(unet.points[2].label == "64→128 @256²");
    const Network n = applySweepPoint(*unet.network, 0, unet.points[9]);
    CHECK(n.input.channels == 1024);
    CHECK(n.input.height == 32);
    CHECK(n.input.batch == 4);
    CHECK(std::get<Conv2d>(n.layers[0].spec).out_channels == 1024);
    CHECK(sweepPreset("unet-channels", "0-2").points.size() == 3);
    CHECK(std::find(unet.selections.begin(), unet.selections.end(), Selection { "cuda", "winograd" })
        != unet.selections.end());

    const SweepSpec k = sweepPreset("kernel-size");
    const Network k7 = applySweepPoint(*k.network, 0, k.points[3]);
    const auto& c = std::get<Conv2d>(k7.layers[0].spec);
    CHECK(c.kernel_size == Pair { 7, 7 });
    CHECK(c.padding == Padding2d::symmetric(3, 3)); // the image keeps its size
    CHECK(sweepPreset("crossover").parameter == SweepParameter::InputSize);
    CHECK_THROWS(sweepPreset("nope"));
}

TEST_CASE("the roofline places every layer under ceilings calibrated once per device", "[gui][roofline]")
{
    calibration_cache::clear(); // measure for real once
    auto w = makeWindow();
    QSignalSpy ceilings(w->roofline(), &RooflineChart::ceilingsChanged);
    RunOutcomePtr o = runLeNet(*w);
    // Calibration waits until the page is looked at.
    CHECK_FALSE(w->roofline()->isCalibrating());
    w->showView(QStringLiteral("roofline"));
    CHECK(w->roofline()->isCalibrating());
    REQUIRE(ceilings.wait(30000));
    const DeviceCeilings c = w->roofline()->ceilings(QStringLiteral("cpu"));
    CHECK(c.peakGflops > 0.1);
    CHECK(c.bandwidthGBs > 0.1);
    CHECK(QString::fromStdString(c.computeMethod).contains(QStringLiteral("sgemm")));
    CHECK(w->roofline()->caption().contains(QStringLiteral("GB/s by memcpy")));
    int withFlops = 0;
    for (const auto& l : o->result.shapes.layers)
        withFlops += l.cost.flops > 0 ? 1 : 0;
    CHECK(w->roofline()->pointCount() == 2 * withFlops);

    // Cached: a second window has the ceilings without calibrating again.
    auto w2 = makeWindow();
    runLeNet(*w2);
    w2->showView(QStringLiteral("roofline"));
    CHECK(w2->roofline()->hasCeilings(QStringLiteral("cpu")));
    CHECK_FALSE(w2->roofline()->isCalibrating());
    CHECK(w2->roofline()->ceilings(QStringLiteral("cpu")).peakGflops == c.peakGflops);
}

TEST_CASE("the algorithm explorer shows the run's own algorithms beside cuDNN's", "[gui][explorer]")
{
    // cuda.fft beside cuDNN's FFTs (issue 19): the run's median and note, not pinnable.
    auto outcome = std::make_shared<RunOutcome>();
    outcome->network = loadNetwork(examplesDir() / "lenet5.json");
    outcome->result.shapes = inferShapes(outcome->network);
    SelectionResult cudnn;
    cudnn.selection = { "cudnn", "auto" };
    cudnn.ok = true;
    cudnn.layers.resize(outcome->network.layers.size());
    cudnn.layers[0].explorerJson = R"({"layer":0,"name":"c1","input":"[1, 1, 28, 28]","output":"[1, 6, 28, 28]",
        "math":"fp32","cudnn":"9.x","auto_choice":"fft_tiling","algorithms":[
        {"algorithm":"fft_tiling","status":"ok","time_ms":0.05,"workspace_bytes":0,"math":"FMA","auto_choice":true},
        {"algorithm":"fft","status":"unsupported","reason":"CUDNN_STATUS_NOT_SUPPORTED","auto_choice":false}]})";
    SelectionResult fft;
    fft.selection = { "cuda", "fft" };
    fft.ok = true;
    fft.metadata["math"] = "fp32";
    fft.layers.resize(outcome->network.layers.size());
    fft.layers[0].computeMs.median = 0.02;
    fft.layers[0].note = "cuFFT r2c/c2r, whole-image 32×32 FFT";
    SelectionResult failed;
    failed.selection = { "cpu", "fft" };
    outcome->result.selections.push_back(std::move(cudnn));
    outcome->result.selections.push_back(std::move(fft));
    outcome->result.selections.push_back(std::move(failed));

    ExplorerPanel panel;
    panel.setOutcome(outcome);
    panel.setLayer(0);
    REQUIRE(panel.table()->rowCount() == 3); // cuDNN's two, then cuda.fft (cpu.fft did not run)
    CHECK(panel.table()->item(2, ExplorerPanel::Algorithm)->text() == QStringLiteral("cuda.fft"));
    CHECK(panel.table()->item(2, ExplorerPanel::Median)->text() == QStringLiteral("0.0200"));
    CHECK(panel.table()->item(2, ExplorerPanel::Reason)->text().contains(QStringLiteral("whole-image 32×32 FFT")));
    CHECK(panel.chart()->barCount() == 2);
    panel.table()->selectRow(2);
    CHECK_FALSE(panel.pinButton()->isEnabled()); // pinning picks a cuDNN algorithm
}

TEST_CASE("the algorithm explorer lists every algorithm and pins one", "[gui][explorer]")
{
    // Explorer data as the cudnn backend writes it (kernels/cudnn/explorer.cpp); no GPU needed to show it.
    auto outcome = std::make_shared<RunOutcome>();
    outcome->network = loadNetwork(examplesDir() / "lenet5.json");
    outcome->result.shapes = inferShapes(outcome->network);
    SelectionResult sel;
    sel.selection = { "cudnn", "auto" };
    sel.ok = true;
    sel.layers.resize(outcome->network.layers.size());
    sel.layers[0].explorerJson = R"({"layer":0,"name":"c1","input":"[1, 1, 28, 28]","output":"[1, 6, 28, 28]",
        "math":"fp32","cudnn":"9.x","auto_choice":"winograd_nonfused","algorithms":[
        {"algorithm":"implicit_gemm","status":"ok","time_ms":0.021,"find_ms":0.02,"workspace_bytes":0,
         "deterministic":"yes","math":"FMA","auto_choice":false},
        {"algorithm":"winograd_nonfused","status":"ok","time_ms":0.012,"find_ms":0.013,"workspace_bytes":1048576,
         "deterministic":"yes","math":"FMA","auto_choice":true},
        {"algorithm":"fft","status":"unsupported","reason":"CUDNN_STATUS_NOT_SUPPORTED","math":"FMA",
         "auto_choice":false},
        {"algorithm":"graph_api","pinnable":false,"status":"ok","time_ms":0.015,"workspace_bytes":0,
         "math":"fma, no tensor-core engines","reason":"graph engine 70 (mode A #1), fastest of 9 engine configurations",
         "auto_choice":false}]})";
    outcome->result.selections.push_back(std::move(sel));

    ExplorerPanel panel;
    panel.setOutcome(outcome);
    panel.setLayer(1);
    CHECK(panel.table()->rowCount() == 0);
    CHECK(panel.status().contains(QStringLiteral("conv2d")));
    panel.setLayer(0);
    REQUIRE(panel.table()->rowCount() == 4);
    CHECK(panel.table()->item(1, ExplorerPanel::Status)->text().contains(QStringLiteral("auto's choice")));
    CHECK(panel.table()->item(1, ExplorerPanel::Workspace)->text() == QStringLiteral("1.0 MB"));
    CHECK(panel.table()->item(2, ExplorerPanel::Reason)->text() == QStringLiteral("CUDNN_STATUS_NOT_SUPPORTED"));
    CHECK(panel.chart()->barCount() == 3); // the algorithms that ran
    QSignalSpy pinned(&panel, &ExplorerPanel::pinRequested);
    panel.table()->selectRow(2);
    CHECK_FALSE(panel.pinButton()->isEnabled()); // cannot pin what cannot run
    panel.table()->selectRow(3);
    CHECK_FALSE(panel.pinButton()->isEnabled()); // the graph API's engine has no selection of its own
    panel.table()->selectRow(1);
    REQUIRE(panel.pinButton()->isEnabled());
    panel.pinButton()->click();
    REQUIRE(pinned.size() == 1);
    CHECK(pinned.first().at(0).value<Selection>().str() == "cudnn.winograd_nonfused");

    // In the window a pin checks that selection; without cuDNN here it says why it cannot.
    auto w = makeWindow();
    // Pin an unchecked CPU algorithm: it joins the run.
    const Selection im2col { "cpu", "im2col_gemm" };
    REQUIRE(w->runPanel()->selectionBox(QStringLiteral("cpu.im2col_gemm")));
    w->runPanel()->selectionBox(QStringLiteral("cpu.im2col_gemm"))->setChecked(false);
    const auto before = w->runPanel()->request().selections;
    CHECK(std::find(before.begin(), before.end(), im2col) == before.end());
    CHECK(w->runPanel()->pin(im2col));
    const auto after = w->runPanel()->request().selections;
    CHECK(after.size() == before.size() + 1);
    CHECK(std::find(after.begin(), after.end(), im2col) != after.end());
    if (!w->runPanel()->selectionBox(QStringLiteral("cudnn.winograd_nonfused"))
        || !w->runPanel()->selectionBox(QStringLiteral("cudnn.winograd_nonfused"))->isEnabled()) {
        CHECK_FALSE(w->runPanel()->pin({ "cudnn", "winograd_nonfused" }));
        CHECK(w->runPanel()->message().startsWith(QStringLiteral("Cannot pin")));
    }
}

TEST_CASE("presentation mode enlarges fonts and thickens chart lines", "[gui][presentation]")
{
    auto w = makeWindow();
    runLeNet(*w);
    const double normal = QApplication::font().pointSizeF();
    w->setPresentationMode(true);
    CHECK(w->presentationMode());
    CHECK(QApplication::font().pointSizeF() == Approx(normal * 1.4));
    CHECK(w->timingChart()->presentation());
    auto* err = qobject_cast<QCPErrorBars*>(w->timingChart()->plot()->plottable(1));
    REQUIRE(err);
    CHECK(err->pen().widthF() > 1.5);
    w->setPresentationMode(false);
    CHECK(QApplication::font().pointSizeF() == Approx(normal));
    CHECK_FALSE(w->sweepPanel()->chart()->presentation());
}
