// The window shows every tensor: a network of convolutions, permutes, views, a channel shuffle and a linear head is
// run, and each layer's output is checked for the view chosen, its axis names and the values it draws.
#include "gui_helpers.h"

#include "compute/network_json.h"
#include "compute/onnx_model.h"
#include "gui/app/html_report.h"
#include "gui/pages/feature_map_panel.h"
#include "gui/pages/run_panel.h"
#include "gui/views/axis_picker.h"
#include "gui/views/feature_map_grid.h"
#include "gui/views/tensor_plot_view.h"
#include "gui/views/volume_view.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <qcustomplot.h>

#include <QApplication>
#include <QLabel>
#include <QSet>

#include <algorithm>
#include <fstream>
#include <iostream>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {
RunOutcomePtr openAndRun(MainWindow& w, const std::filesystem::path& path)
{
    w.runPanel()->setLiveEnabled(false);
    REQUIRE(w.project()->openFile(QString::fromStdString(path.string())));
    REQUIRE(w.runPanel()->setSelections({ { "cpu", "direct" } }));
    w.runPanel()->setWarmupRepeat(0, 1);
    const int job = w.triggerRun();
    REQUIRE(job > 0);
    RunOutcomePtr outcome = waitForRun(w, job);
    REQUIRE(outcome);
    REQUIRE(outcome->result.selections.at(0).ok);
    return outcome;
}

const Tensor& outputOf(const RunOutcome& o, int layer) { return *o.result.selections[0].layers[size_t(layer)].output; }
} // namespace

TEST_CASE("every rank is shown: maps, permuted maps, a volume, a heat map, sliced maps and bars, axes named",
    "[gui][rank][axes]")
{
    TempDir dir;
    const auto path = dir.path / "shuffle.json";
    std::ofstream(path) << R"({ "format": "convscope-network", "version": 1, "name": "shuffle",
  "input": { "batch": 1, "channels": 3, "height": 8, "width": 8, "source": "random:3" },
  "layers": [ { "type": "conv2d", "name": "stem", "out_channels": 8, "kernel_size": 3, "padding": 1 },
              { "type": "transpose", "name": "nhwc", "dims": [0, 2, 3, 1] },
              { "type": "transpose", "name": "nchw", "dims": [0, 3, 1, 2] },
              { "type": "reshape", "name": "groups", "shape": [1, 2, 4, 8, 8] },
              { "type": "transpose", "name": "swap", "dims": [0, 2, 1, 3, 4] },
              { "type": "reshape", "name": "shuffled", "shape": [1, 8, 8, 8] },
              { "type": "reshape", "name": "tokens", "shape": [1, 8, 64] },
              { "type": "reshape", "name": "six", "inputs": ["shuffled"], "shape": [1, 2, 4, 2, 4, 8] },
              { "type": "global_avgpool2d", "name": "gap", "inputs": ["shuffled"] },
              { "type": "flatten", "name": "flat" },
              { "type": "linear", "name": "fc", "out_features": 10 },
              { "type": "flatten", "name": "all", "inputs": ["shuffled"], "start_dim": 0 } ] })";
    auto w = makeWindow();
    RunOutcomePtr run = openAndRun(*w, path);
    // The shapes table: each size with its axis's name.
    CHECK(shapeText(*w, 0) == QStringLiteral("1×8×8×8 (N, C, H, W)"));
    CHECK(shapeText(*w, 1) == QStringLiteral("1×8×8×8 (N, H, W, C)"));
    CHECK(shapeText(*w, 3) == QStringLiteral("1×2×4×8×8 (N, C₁, C₂, H, W)"));
    CHECK(shapeText(*w, 4) == QStringLiteral("1×4×2×8×8 (N, C₂, C₁, H, W)"));
    CHECK(shapeText(*w, 5) == QStringLiteral("1×8×8×8 (N, C, H, W)"));
    CHECK(shapeText(*w, 6) == QStringLiteral("1×8×64 (N, C, H·W)"));
    CHECK(shapeText(*w, 7) == QStringLiteral("1×2×4×2×4×8 (N, C₁, C₂, H₁, H₂, W)"));
    CHECK(shapeText(*w, 10) == QStringLiteral("1×10 (N, features)"));
    CHECK(shapeText(*w, 11) == QStringLiteral("512 (C·H·W)"));

    FeatureMapPanel* maps = w->featureMaps();
    NetworkPanel* net = w->networkPanel();

    // Rank 4, N, C, H, W: the feature maps as always, nothing more to say about the axes.
    net->setCurrentLayer(0);
    CHECK(maps->outputView().form == OutputForm::FeatureMaps);
    CHECK(maps->axesText().isEmpty());
    REQUIRE(maps->grid()->tileCount() == 8);
    const PlaneSet stem = planesOf(outputOf(*run, 0), 0);
    CHECK(maps->grid()->planes().values == stem.values);

    // N×H×W×C: the same channels, one tile per C, the axes named; the pointer reads C, H and W.
    net->setCurrentLayer(1);
    CHECK(maps->outputView().form == OutputForm::PermutedMaps);
    CHECK(maps->axesText()
        == QStringLiteral(
            "Shown as permuted maps: tiles C (axis 3) · rows H (axis 1) · columns W (axis 2) · item N (axis 0)"));
    CHECK(maps->titleText().contains(QStringLiteral("1×8×8×8 (N, H, W, C)")));
    REQUIRE(maps->grid()->tileCount() == 8);
    CHECK(maps->grid()->planes().values == stem.values);
    CHECK(maps->grid()->tileLabels().at(2) == QStringLiteral("C 2"));
    const QRect tile = maps->grid()->tileRect(2);
    QTest::mouseMove(maps->grid(), tile.topLeft() + QPoint(tile.width() * 7 / 16, tile.height() * 3 / 16));
    CHECK(maps->statusText().startsWith(QStringLiteral("C 2 · H 1 · W 3 · value ")));
    CHECK(maps->statusText().endsWith(QString::number(double(stem.plane(2)[1 * 8 + 3]), 'g', 6)));
    maybeShoot(*w, "rank-permuted-maps");

    // Rank 5 stays a volume; its split channels are named.
    net->setCurrentLayer(3);
    CHECK(maps->isVolumeShown());
    CHECK(maps->axesText()
        == QStringLiteral("Shown as volume: channels C₁ (axis 1) · depth C₂ (axis 2) · rows H (axis 3) · columns W "
                          "(axis 4) · item N (axis 0)"));

    // The shuffle's result is N, C, H, W again: output channel 1 is input channel 4.
    net->setCurrentLayer(5);
    CHECK(maps->outputView().form == OutputForm::FeatureMaps);
    CHECK(maps->axesText().isEmpty());
    CHECK(std::equal(stem.plane(4), stem.plane(4) + 64, maps->grid()->planes().plane(1)));

    // Rank 3: a heat map of C × H·W, axes labelled, a colour scale beside it.
    net->setCurrentLayer(6);
    CHECK(maps->isPlotShown());
    TensorPlotView* plot = maps->tensorPlot();
    REQUIRE(plot->mode() == TensorPlotView::Mode::HeatMap);
    CHECK(plot->plot()->yAxis->label() == QStringLiteral("C (axis 1)"));
    CHECK(plot->plot()->xAxis->label() == QStringLiteral("H·W (axis 2)"));
    CHECK(plot->colorScale()->axis()->label() == QStringLiteral("value"));
    CHECK(plot->colorScale()->visible());
    REQUIRE((plot->heatMap().rows == 8 && plot->heatMap().cols == 64));
    CHECK(plot->heatMap().at(4, 19) == stem.plane(2)[19]); // shuffled channel 4 is stem channel 2
    CHECK(plot->note().isEmpty());
    CHECK(plot->cellLabelsShown() == 0); // 512 cells: too many to label
    CHECK(plot->readout(19, 4).startsWith(QStringLiteral("C 4 · H·W 19 · value ")));
    CHECK(maps->axesText()
        == QStringLiteral("Shown as heat map: rows C (axis 1) · columns H·W (axis 2) · at the item of N (axis 0)"));
    maybeShoot(*w, "rank-heat-map");

    // Rank 6: one slice's maps; the two axes not drawn are picked.
    net->setCurrentLayer(7);
    CHECK(maps->outputView().form == OutputForm::SlicedMaps);
    AxisPicker* picker = maps->axisPicker();
    CHECK(picker->isVisible());
    REQUIRE(picker->box(2));
    REQUIRE(picker->box(3));
    CHECK(picker->text() == QStringLiteral("C₂ = 0 of 0…3 · H₁ = 0 of 0…1"));
    picker->setIndex(2, 3);
    picker->setIndex(3, 1);
    const PlaneSet& six = maps->grid()->planes();
    REQUIRE((six.channels == 2 && six.height == 4 && six.width == 8));
    // [1, 2, 4, 2, 4, 8][0, c1, 3, 1, h2, w] is shuffled channel c1·4 + 3, row 4 + h2.
    const Tensor& shuffled = outputOf(*run, 5);
    CHECK(six.plane(1)[2 * 8 + 5] == shuffled.at(0, 7, 6, 5));
    CHECK(maps->axesText().startsWith(QStringLiteral("Shown as sliced maps: tiles C₁ (axis 1) · rows H₂ (axis 4)")));
    maybeShoot(*w, "rank-six-slices");

    // Rank 2: the heat map of every item's features.
    net->setCurrentLayer(10);
    REQUIRE(plot->mode() == TensorPlotView::Mode::HeatMap);
    CHECK(maps->isPlotShown());
    CHECK(plot->plot()->yAxis->label() == QStringLiteral("N (axis 0)"));
    CHECK(plot->plot()->xAxis->label() == QStringLiteral("features (axis 1)"));
    CHECK((plot->heatMap().rows == 1 && plot->heatMap().cols == 10));
    CHECK(plot->heatMap().at(0, 7) == outputOf(*run, 10).data()[7]);

    CHECK_FALSE(picker->isVisible());

    // Rank 1: bars, 500 to a page.
    net->setCurrentLayer(11);
    REQUIRE(plot->mode() == TensorPlotView::Mode::Bars);
    CHECK(plot->plot()->xAxis->label() == QStringLiteral("C·H·W (axis 0)"));
    CHECK(plot->bars()->data()->size() == 500);
    CHECK(plot->note() == QStringLiteral("elements 0–499 of 512 (page 1 of 2)"));
    CHECK_FALSE(plot->colorScale()->visible());
    plot->pageBox()->setValue(2);
    CHECK(plot->bars()->data()->size() == 12);
    CHECK(plot->bars()->data()->at(0)->value == double(shuffled.data()[500]));
    CHECK(plot->readout(511, 0).startsWith(QStringLiteral("C·H·W 511 · value ")));
    maybeShoot(*w, "rank-bars");

    // Back to the image: the grid again.
    net->setCurrentLayer(0);
    CHECK_FALSE(maps->isPlotShown());
    CHECK(maps->grid()->tileCount() == 8);
}

TEST_CASE("a tensor too large to draw whole is downsampled or paged, and says so", "[gui][rank][axes]")
{
    TempDir dir;
    const auto path = dir.path / "large.json";
    std::ofstream(path) << R"({ "format": "convscope-network", "version": 1, "name": "large",
  "input": { "batch": 1, "channels": 2, "height": 64, "width": 64, "source": "random:5" },
  "layers": [ { "type": "reshape", "name": "tall", "shape": [1, 4096, 2] },
              { "type": "reshape", "name": "many", "inputs": ["input"], "shape": [1, 8192, 1, 1] } ] })";
    auto w = makeWindow();
    RunOutcomePtr run = openAndRun(*w, path);
    FeatureMapPanel* maps = w->featureMaps();

    // 4096 rows: shown in blocks of 4, each the mean of its block.
    w->networkPanel()->setCurrentLayer(0);
    TensorPlotView* plot = maps->tensorPlot();
    REQUIRE(plot->mode() == TensorPlotView::Mode::HeatMap);
    const HeatMapData& h = plot->heatMap();
    REQUIRE((h.rows == 1024 && h.rowStep == 4 && h.cols == 2 && h.colStep == 1));
    const float* x = outputOf(*run, 0).data();
    CHECK(h.at(3, 1) == Approx((double(x[25]) + x[27] + x[29] + x[31]) / 4));
    CHECK(plot->note().startsWith(QStringLiteral("4096 × 2 shown as 1024 × 2 cells: each cell the mean of 4 × 1")));

    // 8192 tiles: the grid draws a page of as many as fit at a readable size (kMinTile pixels, at most 4096) and pages
    // through the rest.
    w->networkPanel()->setCurrentLayer(1);
    CHECK(maps->outputView().form == OutputForm::FeatureMaps);
    CHECK(maps->axesText().startsWith(QStringLiteral("Shown as feature maps: tiles C·H·W (axis 1)")));
    const int64_t page = maps->grid()->tilesThatFit(1, 1);
    REQUIRE(page > 0);
    REQUIRE(page < 4096);
    REQUIRE(maps->grid()->tileCount() == page);
    CHECK(maps->grid()->tileRect(0).height() >= FeatureMapGrid::kMinTile);
    QSpinBox* first = maps->axisPicker()->tileBox();
    CHECK(first->isVisible());
    CHECK(first->suffix() == QStringLiteral(" (%1 of 8192 shown)").arg(page));
    CHECK(first->singleStep() == page);
    first->setValue(8000);
    CHECK(maps->grid()->planes().channelIds.front() == 8000);
    CHECK(maps->grid()->tileCount() == std::min<int64_t>(page, 192));
    CHECK(maps->grid()->planes().plane(0)[0] == outputOf(*run, 1).data()[8000]);
    // A smaller window fits fewer: the page follows the grid's size.
    w->resize(w->width() * 2 / 3, w->height() * 2 / 3);
    QApplication::processEvents();
    const int64_t smaller = maps->grid()->tilesThatFit(1, 1);
    CHECK(smaller < page);
    first->setValue(0);
    CHECK(maps->grid()->tileCount() == smaller);
}

TEST_CASE("the permute-and-shuffle example shows a channels-last block, a shuffle, tokens and a 1-D vector",
    "[gui][rank][axes]")
{
    auto w = makeWindow();
    RunOutcomePtr run = openAndRun(*w, examplesDir() / "permute_shuffle.json");
    FeatureMapPanel* maps = w->featureMaps();
    const std::vector<std::string> names = [&] {
        std::vector<std::string> n;
        for (const Layer& l : run->network.layers)
            n.push_back(l.name);
        return n;
    }();
    auto layer = [&](const char* name) {
        const auto at = std::find(names.begin(), names.end(), name);
        REQUIRE(at != names.end());
        const int i = int(at - names.begin());
        w->networkPanel()->setCurrentLayer(i);
        return i;
    };
    CHECK(shapeText(*w, layer("to_nhwc")) == QStringLiteral("1×28×28×16 (N, H, W, C)"));
    CHECK(maps->outputView().form == OutputForm::PermutedMaps);
    CHECK(maps->grid()->tileCount() == 16);
    // The per-channel scale on the last axis scales channel 15 by 1.0 and channel 7 by 0.3.
    const Tensor& act = outputOf(*run, layer("act"));
    layer("layer_scale");
    CHECK(maps->outputView().form == OutputForm::PermutedMaps);
    CHECK(maps->grid()->planes().plane(7)[28 * 14 + 14] == Approx(0.3f * act.data()[(14 * 28 + 14) * 16 + 7]));
    CHECK(shapeText(*w, layer("groups")) == QStringLiteral("1×4×4×28×28 (N, C₁, C₂, H, W)"));
    CHECK(maps->isVolumeShown());
    CHECK(shapeText(*w, layer("shuffled")) == QStringLiteral("1×16×28×28 (N, C, H, W)"));
    CHECK(shapeText(*w, layer("halves")) == QStringLiteral("1×4×4×2×14×28 (N, C₁, C₂, H₁, H₂, W)"));
    CHECK(maps->outputView().form == OutputForm::SlicedMaps);
    CHECK(maps->axisPicker()->text() == QStringLiteral("C₂ = 0 of 0…3 · H₁ = 0 of 0…1"));
    CHECK(shapeText(*w, layer("tokens")) == QStringLiteral("1×16×196 (N, C, H·W)"));
    CHECK(maps->tensorPlot()->mode() == TensorPlotView::Mode::HeatMap);
    CHECK(shapeText(*w, layer("tokens_last")) == QStringLiteral("1×196×16 (N, H·W, C)"));
    CHECK(maps->tensorPlot()->plot()->xAxis->label() == QStringLiteral("C (axis 2)"));
    CHECK(shapeText(*w, layer("flatten")) == QStringLiteral("1×16 (N, C)"));
    CHECK(shapeText(*w, layer("fc")) == QStringLiteral("1×10 (N, features)"));
    CHECK(shapeText(*w, layer("logits_1d")) == QStringLiteral("10 (features)"));
    CHECK(maps->tensorPlot()->mode() == TensorPlotView::Mode::Bars);
    CHECK(maps->tensorPlot()->bars()->data()->size() == 10);
    const int prob = layer("prob");
    CHECK(maps->tensorPlot()->mode() == TensorPlotView::Mode::HeatMap);
    CHECK_FALSE(maps->predictionText().isEmpty()); // the classifier's top 5 over its heat map

    // A report draws each layer as the window does, its axes in the title.
    const int nhwc = layer("to_nhwc"), tokens = layer("tokens"), vector = layer("logits_1d");
    const ReportMaps report = reportMaps(*run, { nhwc, tokens, vector, prob });
    REQUIRE(report.size() == 4);
    CHECK(report[0].title.endsWith(QStringLiteral("output 1×28×28×16 (N, H, W, C) · permuted maps: tiles C (axis 3) · "
                                                  "rows H (axis 1) · columns W (axis 2) · item N (axis 0)")));
    CHECK(report[1].title.contains(QStringLiteral("heat map: rows C (axis 1) · columns H·W (axis 2)")));
    CHECK(report[2].title.contains(QStringLiteral("bars: one per element of features (axis 0)")));
    for (const auto& m : report) {
        CHECK(m.image.width() == 880);
        QSet<QRgb> colours;
        for (int y = 0; y < m.image.height(); y += 3)
            for (int x = 0; x < m.image.width(); x += 3)
                colours.insert(m.image.pixel(x, y));
        CHECK(colours.size() > 8); // drawn, not blank
    }
}

TEST_CASE("a small heat map prints its values on cells wide enough to hold them", "[gui][rank]")
{
    TensorPlotView view;
    view.resize(900, 300);
    view.show();
    HeatMapData h;
    h.rows = h.fullRows = 1;
    h.cols = h.fullCols = 10;
    for (int i = 0; i < 10; ++i)
        h.values.push_back(0.5f * float(i) - 2);
    view.setHeatMap(h, QStringLiteral("N (axis 0)"), QStringLiteral("features (axis 1)"));
    QCoreApplication::processEvents();
    view.plot()->replot();
    CHECK(view.cellLabelsShown() == 10);
    CHECK(view.readout(3, 0) == QStringLiteral("N 0 · features 3 · value -0.5"));
    // A larger font (presentation mode sets the application's) reaches the axes.
    const double before = view.plot()->xAxis->labelFont().pointSizeF();
    QFont big = view.font();
    big.setPointSizeF(before * 1.4);
    view.setFont(big);
    CHECK(view.plot()->xAxis->labelFont().pointSizeF() == Approx(before * 1.4));
    CHECK(view.colorScale()->axis()->tickLabelFont().pointSizeF() == Approx(before * 1.4));
    // Too narrow for the numbers: none, rather than numbers over each other.
    view.resize(200, 300);
    QCoreApplication::processEvents();
    view.plot()->replot();
    CHECK(view.cellLabelsShown() == 0);
}

TEST_CASE(
    "an ONNX model with a channels-last block and a channel shuffle opens with its axes named", "[gui][rank][onnx]")
{
    if (!onnxSupported()) {
        std::cout << "SKIPPED: " << onnxUnsupportedReason() << std::endl;
        return;
    }
    TempDir dir;
    const auto model = dir.path / "permute_shuffle.onnx";
    exportOnnxModel(loadNetwork(examplesDir() / "permute_shuffle.json"), model);
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->openAny(QString::fromStdString(model.string())));
    // However the importer reads the shuffle (a channel_shuffle, or the views and the transpose), the names come
    // through: find each output by its text.
    QStringList texts;
    for (int r = 0; r < w->shapesModel()->rowCount() - 1; ++r)
        texts << shapeText(*w, r);
    INFO(texts.join(QStringLiteral(" | ")).toStdString());
    CHECK(texts.count(QStringLiteral("1×28×28×16 (N, H, W, C)")) >= 3); // transpose, GELU, the scale
    CHECK(texts.contains(QStringLiteral("1×16×196 (N, C, H·W)")));
    CHECK(texts.contains(QStringLiteral("1×196×16 (N, H·W, C)")));
    CHECK(texts.contains(QStringLiteral("1×10 (N, features)")));
    CHECK(texts.contains(QStringLiteral("10 (features)")));
    // After the shuffle the channels are C again: every rank-4 output but the channels-last ones is N, C, H, W.
    for (const QString& t : texts)
        if (t.count(QChar(0x00D7)) == 3 && !t.contains(QStringLiteral("(N, H, W, C)")))
            CHECK(t.endsWith(QStringLiteral("(N, C, H, W)")));
}

TEST_CASE("a heat map and bars show |Δ| against the reference, and the pointer reads the named cell", "[gui][rank]")
{
    TempDir dir;
    const auto path = dir.path / "diff.json";
    std::ofstream(path) << R"({ "format": "convscope-network", "version": 1, "name": "diff",
  "input": { "batch": 1, "channels": 3, "height": 8, "width": 8, "source": "random:9" },
  "layers": [ { "type": "conv2d", "name": "stem", "out_channels": 8, "kernel_size": 3, "padding": 1 },
              { "type": "reshape", "name": "tokens", "shape": [1, 8, 64] },
              { "type": "flatten", "name": "all", "start_dim": 0 } ] })";
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString(path.string())));
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" }, { "cpu", "im2col_gemm" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    RunOutcomePtr run = waitForRun(*w, w->triggerRun());
    REQUIRE(run);
    FeatureMapPanel* maps = w->featureMaps();
    TensorPlotView* plot = maps->tensorPlot();
    w->networkPanel()->setCurrentLayer(1);
    REQUIRE(plot->mode() == TensorPlotView::Mode::HeatMap);

    // The pointer over cell (row 4, column 19) reads it by its axes' names.
    QCoreApplication::processEvents();
    plot->plot()->replot();
    const QPoint at(int(plot->plot()->xAxis->coordToPixel(19)), int(plot->plot()->yAxis->coordToPixel(4)));
    QTest::mouseMove(plot->plot(), at);
    CHECK(maps->statusText().startsWith(QStringLiteral("C 4 · H·W 19 · value ")));

    // |Δ| of the second selection against the first: the colour scale says so, the cells are |a − b|.
    const int other = maps->selectionBox()->findText(QStringLiteral("cpu.im2col_gemm"));
    REQUIRE(other >= 0);
    maps->selectionBox()->setCurrentIndex(other);
    maps->differenceBox()->setChecked(true);
    CHECK(maps->errorText().startsWith(QStringLiteral("max |Δ|")));
    REQUIRE(plot->mode() == TensorPlotView::Mode::HeatMap);
    CHECK(plot->heatMap().difference);
    CHECK(plot->colorScale()->axis()->label() == QStringLiteral("|Δ| vs reference"));
    const auto sel = [&](const char* name) -> const Tensor& {
        for (const auto& s : run->result.selections)
            if (s.selection.str() == name)
                return *s.layers[1].output;
        FAIL("no selection " << name);
        return *run->result.selections[0].layers[1].output;
    };
    CHECK(plot->heatMap().at(4, 19)
        == std::fabs(sel("cpu.im2col_gemm").data()[4 * 64 + 19] - sel("cpu.direct").data()[4 * 64 + 19]));
    w->networkPanel()->setCurrentLayer(2);
    REQUIRE(plot->mode() == TensorPlotView::Mode::Bars);
    CHECK(plot->plot()->yAxis->label() == QStringLiteral("|Δ| vs reference"));
    for (double v : plot->barValues())
        CHECK(v >= 0);
    maps->differenceBox()->setChecked(false);
    CHECK(plot->plot()->yAxis->label() == QStringLiteral("value"));
}
