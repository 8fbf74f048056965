// Tensor Core math in the window: the roofline drawn at the ceiling of the run's math mode (cuBLAS TF32/FP16/BF16
// GEMM rates), those ceilings kept in the calibration cache and in saved sessions, and every layer's error against
// the FP32 reference shown with the rounding bound of the mode (compute/rounding_bound.h), a layer above it marked.
//
// The half-precision run is emulated on the CPU (this machine has no GPU): LeNet-5 on cpu.im2col_gemm with its input
// and weights rounded to FP16 and every layer's output stored as FP16, compared with cpu.direct in FP32: what an FP16
// run's storage and operand rounding do, without the Tensor Cores' own summation order.
#include "gui_helpers.h"

#include "compute/network_json.h"
#include "compute/report.h"
#include "compute/rounding_bound.h"
#include "compute/session.h"
#include "gui/app/html_report.h"
#include "gui/charts/roofline_chart.h"
#include "gui/document/calibration_cache.h"
#include "gui/pages/feature_map_panel.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QCheckBox>
#include <QImage>
#include <QSettings>

#include <qcustomplot.h>

#include <cmath>
#include <cstdlib>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {

// The nearest FP16 value (11 significant bits, ties to even); LeNet-5's values are far from FP16's subnormals and
// overflow, so those need no care here.
float toHalf(float x)
{
    if (x == 0 || !std::isfinite(x))
        return x;
    int e = 0;
    const float m = std::frexp(x, &e);
    return std::ldexp(std::nearbyint(std::ldexp(m, 11)), e - 11);
}

Tensor halved(const Tensor& t)
{
    Tensor r = t.clone();
    for (int64_t i = 0; i < r.numel(); ++i)
        r.data()[i] = toHalf(r.data()[i]);
    return r;
}

std::shared_ptr<const Tensor> halved(const std::shared_ptr<const Tensor>& t)
{
    return t ? std::make_shared<const Tensor>(halved(*t)) : t;
}

// LeNet-5: cpu.direct in FP32 (the reference) beside cpu.im2col_gemm with FP16 operands and storage, errors and
// bounds set as the profiler sets them in an FP16 run. `scaleLayer` >= 0: that layer's FP16 output is also scaled by
// 1.1, an error no rounding explains.
std::shared_ptr<RunOutcome> fp16LikeOutcome(int scaleLayer = -1)
{
    auto o = std::make_shared<RunOutcome>();
    o->network = loadNetwork(examplesDir() / "lenet5.json");
    ProfileOptions opt;
    opt.selections = { { "cpu", "direct" }, { "cpu", "im2col_gemm" } };
    opt.warmup = 0;
    opt.repeat = 2;
    opt.keepOutputs = true;
    o->result = profile(o->network, opt, &o->input);

    Network half = o->result.network;
    for (Layer& l : half.layers)
        l.weight = halved(l.weight), l.bias = halved(l.bias);
    ProfileOptions halfOpt = opt;
    halfOpt.selections = { { "cpu", "im2col_gemm" } };
    halfOpt.reference.reset();
    const RunResult h = profile(half, halved(o->input), halfOpt);
    REQUIRE(h.selections.at(0).ok);

    // The gains come from the FP32 reference's norms, as in the profiler.
    ReferenceNorms norms;
    norms.input = tensorNorm(o->input);
    for (const LayerResult& l : o->result.selections.at(0).layers)
        norms.outputs.push_back(tensorNorm(*l.output));
    const std::vector<double> bounds = roundingBounds(MathMode::FP16, o->result.network, o->result.shapes, norms);
    o->result.meta.mathMode = "fp16";
    SelectionResult& ref = o->result.selections.at(0);
    SelectionResult& sel = o->result.selections.at(1);
    sel.metadata["math"] = "fp16";
    for (size_t i = 0; i < sel.layers.size(); ++i) {
        Tensor out = halved(*h.selections[0].layers[i].output);
        if (int(i) == scaleLayer)
            for (int64_t k = 0; k < out.numel(); ++k)
                out.data()[k] *= 1.1f;
        sel.layers[i].error = compare(out, *ref.layers[i].output);
        sel.layers[i].error.bound = bounds[i];
        sel.layers[i].note = "FP16 emulated on the CPU: input, weights and output rounded to half";
        sel.layers[i].output = std::move(out);
        ref.layers[i].error.bound = bounds[i];
    }
    return o;
}

DeviceCeilings h100()
{
    DeviceCeilings c;
    c.device = "NVIDIA H100 80GB HBM3";
    c.peakGflops = 51000;
    c.bandwidthGBs = 3000;
    c.computeMethod = "cuBLAS SGEMM 8192x8192x8192, pedantic FP32";
    c.bandwidthMethod = "device-to-device copy of 1 GiB";
    c.mathGflops = { { "tf32", 380000 }, { "fp16", 650000 }, { "bf16", 660000 } };
    for (const char* m : { "tf32", "fp16", "bf16" })
        c.mathMethods[m] = "cuBLAS " + QString::fromLatin1(m).toUpper().toStdString()
            + " GEMM 8192³, operands rounded, FP32 accumulation, best of 3";
    return c;
}

// The roof drawn for a device: the graph named "ceiling: …" and its highest point.
std::pair<QString, double> roofOf(RooflineChart* chart)
{
    QCustomPlot* p = chart->plot();
    for (int i = 0; i < p->graphCount(); ++i) {
        QCPGraph* g = p->graph(i);
        if (!g->name().startsWith(QStringLiteral("ceiling: ")))
            continue;
        double top = 0;
        for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
            top = std::max(top, it->value);
        return { g->name(), top };
    }
    return {};
}

} // namespace

TEST_CASE("the calibration cache keeps the Tensor Core ceilings and measures older entries again",
    "[gui][roofline][ceilings]")
{
    calibration_cache::clear();
    const DeviceCeilings c = h100();
    calibration_cache::store(QStringLiteral("cudnn"), QStringLiteral("NVIDIA H100"), c);
    const auto back = calibration_cache::load(QStringLiteral("cudnn"), QStringLiteral("NVIDIA H100"));
    REQUIRE(back);
    CHECK(back->peakGflops == c.peakGflops);
    CHECK(back->mathGflops == c.mathGflops);
    CHECK(back->mathMethods == c.mathMethods);

    // A recalibration that measured fewer modes leaves none of the old ones behind.
    DeviceCeilings fewer = c;
    fewer.mathGflops.erase("tf32");
    fewer.mathMethods.erase("tf32");
    calibration_cache::store(QStringLiteral("cudnn"), QStringLiteral("NVIDIA H100"), fewer);
    CHECK(calibration_cache::load(QStringLiteral("cudnn"), QStringLiteral("NVIDIA H100"))->mathGflops.size() == 2);

    // An entry stored before the Tensor Core ceilings (no version) is not used: the page measures again.
    {
        QSettings s;
        s.beginGroup(QStringLiteral("calibration/cuda/Old GPU"));
        s.setValue(QStringLiteral("device"), QStringLiteral("Old GPU"));
        s.setValue(QStringLiteral("peak_gflops"), 1000.0);
        s.setValue(QStringLiteral("bandwidth_gbs"), 100.0);
    }
    CHECK_FALSE(calibration_cache::load(QStringLiteral("cuda"), QStringLiteral("Old GPU")));
    calibration_cache::clear();
}

TEST_CASE("an FP16 run keeps its rounding bounds and Tensor Core ceilings through a saved session, and the window "
          "shows both",
    "[gui][roofline][bound]")
{
    auto outcome = fp16LikeOutcome();
    const auto& sel = outcome->result.selections[1];
    // The emulated FP16 errors are real rounding errors, and the bound covers every one of them.
    for (const auto& l : sel.layers) {
        INFO("layer " << l.index << ": relL2 " << l.error.relL2 << ", bound " << l.error.bound);
        CHECK(l.error.valid);
        CHECK(l.error.relL2 > 0);
        CHECK(l.error.bound > 0);
        CHECK_FALSE(exceedsBound(l.error));
    }

    TempDir dir;
    const QString folder = QString::fromStdString((dir.path / "fp16").string());
    writeSession(folder.toStdString(), outcome->network, outcome->input, outcome->result, { { "cudnn", h100() } });
    auto w = makeWindow();
    REQUIRE(w->openSession(folder));

    // The roofline: the FP16 Tensor Core ceiling, named by its method, not the FP32 one.
    RooflineChart* roof = w->roofline();
    CHECK(roof->runMathMode() == MathMode::FP16);
    REQUIRE(roof->hasCeilings(QStringLiteral("cudnn")));
    CHECK(roof->ceilings(QStringLiteral("cudnn")).mathGflops.at("fp16") == 650000);
    const auto [name, top] = roofOf(roof);
    CHECK(name == QStringLiteral("ceiling: NVIDIA H100 80GB HBM3 · cuBLAS FP16 GEMM 8192³: 650 TFLOP/s"));
    CHECK(top == 650000);
    CHECK(roof->caption().contains(QStringLiteral("FP16 ceiling 650 TFLOP/s by cuBLAS FP16 GEMM 8192³")));
    CHECK(roof->caption().contains(QStringLiteral("(FP32 51 TFLOP/s)")));
    // A mode the device has no ceiling for says so and draws the FP32 one.
    DeviceCeilings cpuOnly = h100();
    cpuOnly.mathGflops.clear();
    CHECK(RooflineChart::ceilingLabel(cpuOnly, MathMode::BF16) == QStringLiteral("FP32 51 TFLOP/s"));
    CHECK(RooflineChart::ceilingDetail(cpuOnly, MathMode::BF16).startsWith(QStringLiteral("no BF16 ceiling measured")));
    CHECK(RooflineChart::ceilingLabel(h100(), MathMode::FP32) == QStringLiteral("FP32 51 TFLOP/s"));

    // The |Δ| view: the layer's relL2 with its bound, in the ordinary colour.
    FeatureMapPanel* maps = w->featureMaps();
    w->networkPanel()->setCurrentLayer(2);
    REQUIRE(maps->selectionBox()->count() == 2);
    maps->selectionBox()->setCurrentIndex(1);
    maps->differenceBox()->setChecked(true);
    const ErrorMetrics& e2 = sel.layers[2].error;
    CHECK(maps->errorText().startsWith(QStringLiteral("max |Δ| = ")));
    CHECK(maps->errorText().contains(QStringLiteral(" · relL2 %1 (bound %2)")
                                         .arg(QString::fromStdString(shortScientific(e2.relL2)),
                                             QString::fromStdString(shortScientific(e2.bound)))));
    CHECK_FALSE(maps->errorAboveBound());
    // The shapes table's time says the same on hover.
    CHECK(w->shapesModel()
              ->index(2, ShapesModel::Time)
              .data(Qt::ToolTipRole)
              .toString()
              .contains(QStringLiteral("(bound ")));
    CHECK_FALSE(w->shapesModel()->index(2, ShapesModel::Time).data(Qt::ForegroundRole).isValid());
    if (const char* shots = std::getenv("CONVSCOPE_SCREENSHOT_DIR")) {
        w->resize(1600, 1000);
        QCoreApplication::processEvents();
        CHECK(w->grab().save(QString::fromLocal8Bit(shots) + QStringLiteral("/fp16-error-view.png")));
    }

    // The HTML report states the bound.
    const QString html = reportHtml(*outcome, {}, true);
    CHECK(html.contains(QStringLiteral("rel L2 error (rounding bound)")));
    CHECK(html.contains(QString::fromStdString(relL2Text(e2))));
    CHECK_FALSE(html.contains(QStringLiteral("above the bound")));
}

TEST_CASE("a layer whose error exceeds its rounding bound is marked in the window and the reports", "[gui][bound]")
{
    auto outcome = fp16LikeOutcome(4); // layer 4's output off by 10%
    const ErrorMetrics& e = outcome->result.selections[1].layers[4].error;
    REQUIRE(exceedsBound(e));
    CHECK_FALSE(exceedsBound(outcome->result.selections[1].layers[3].error));

    TempDir dir;
    const QString folder = QString::fromStdString((dir.path / "off").string());
    writeSession(folder.toStdString(), outcome->network, outcome->input, outcome->result, {});
    auto w = makeWindow();
    REQUIRE(w->openSession(folder));
    FeatureMapPanel* maps = w->featureMaps();
    maps->selectionBox()->setCurrentIndex(1);
    maps->differenceBox()->setChecked(true);
    w->networkPanel()->setCurrentLayer(4);
    CHECK(maps->errorAboveBound());
    CHECK(maps->errorText().endsWith(QStringLiteral("⚠ above the bound")));
    CHECK(maps->findChild<QLabel*>(QStringLiteral("maxError"))->styleSheet().contains(QStringLiteral("#b71c1c")));
    // The long line never widens a small window (it wraps; the tooltip repeats it).
    CHECK(maps->findChild<QLabel*>(QStringLiteral("maxError"))->toolTip().startsWith(maps->errorText()));
    w->resize(1366, 768);
    QCoreApplication::processEvents();
    CHECK(w->width() == 1366);
    if (const char* shots = std::getenv("CONVSCOPE_SCREENSHOT_DIR")) {
        w->resize(1600, 1000);
        QCoreApplication::processEvents();
        CHECK(w->grab().save(QString::fromLocal8Bit(shots) + QStringLiteral("/fp16-error-above-bound.png")));
    }
    // Another layer, within its bound, is back to the ordinary colour.
    w->networkPanel()->setCurrentLayer(3);
    CHECK_FALSE(maps->errorAboveBound());
    CHECK(maps->findChild<QLabel*>(QStringLiteral("maxError"))->styleSheet().isEmpty());

    // The shapes table shows the selection the maps show: layer 4's time in the failure colour.
    w->shapesModel()->setRun(outcome, 1);
    CHECK(
        w->shapesModel()->index(4, ShapesModel::Time).data(Qt::ForegroundRole).value<QColor>() == QColor(183, 28, 28));
    CHECK(w->shapesModel()
              ->index(4, ShapesModel::Time)
              .data(Qt::ToolTipRole)
              .toString()
              .contains(QStringLiteral("above the bound")));

    const QString html = reportHtml(*outcome, {}, true);
    CHECK(html.contains(QStringLiteral("<span class=\"over\"")));
    CHECK(html.count(QStringLiteral("above the bound")) == 1);
    CHECK(reportMarkdown(outcome->network, outcome->result).find("above the bound") != std::string::npos);
}
