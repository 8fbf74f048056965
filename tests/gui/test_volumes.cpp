// Volume feature maps in the window: slices along each axis with a slider, three orthogonal cuts through a voxel and
// a maximum-intensity projection, checked value by value against an input whose every voxel says where it is.
#include "gui_helpers.h"

#include "compute/npy.h"
#include "gui/pages/feature_map_panel.h"
#include "gui/pages/interpolation_panel.h"
#include "gui/pages/run_panel.h"
#include "gui/views/tensor_plot_view.h"
#include "gui/views/volume_param_widgets.h"
#include "gui/views/volume_view.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QApplication>
#include <QDockWidget>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QSlider>
#include <QTableWidget>
#include <QUndoStack>

#include <algorithm>
#include <fstream>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {

// Voxel (c, d, h, w) holds c·1000 + d·100 + h·10 + w, so a shown value names its own position.
constexpr int64_t kC = 2, kD = 6, kH = 5, kW = 4;
float coded(int64_t c, int64_t d, int64_t h, int64_t w) { return float(c * 1000 + d * 100 + h * 10 + w); }

// identity (the input exactly) → sigmoid → flatten: a volume, a volume again, and a feature vector after it.
std::string writeVolumeNetwork(const TempDir& dir)
{
    std::vector<float> values;
    for (int64_t c = 0; c < kC; ++c)
        for (int64_t d = 0; d < kD; ++d)
            for (int64_t h = 0; h < kH; ++h)
                for (int64_t w = 0; w < kW; ++w)
                    values.push_back(coded(c, d, h, w));
    writeNpy(dir.path / "coded.npy", { 1, kC, kD, kH, kW }, values.data());
    const auto path = dir.path / "volume.json";
    std::ofstream(path) << R"({ "format": "convscope-network", "version": 1, "name": "coded volume",
  "input": { "batch": 1, "channels": 2, "depth": 6, "height": 5, "width": 4, "source": "coded.npy" },
  "layers": [ { "type": "identity", "name": "same" }, { "type": "sigmoid", "name": "squash" },
              { "type": "flatten", "name": "flat" } ] })";
    return path.string();
}

RunOutcomePtr runVolume(MainWindow& w, const std::string& file)
{
    w.runPanel()->setLiveEnabled(false);
    REQUIRE(w.project()->openFile(QString::fromStdString(file)));
    REQUIRE(w.runPanel()->setSelections({ { "cpu", "direct" } }));
    w.runPanel()->setWarmupRepeat(0, 1);
    w.networkPanel()->setCurrentLayer(0);
    const int job = w.triggerRun();
    REQUIRE(job > 0);
    RunOutcomePtr outcome = waitForRun(w, job);
    REQUIRE(outcome);
    REQUIRE(outcome->result.selections.at(0).ok);
    return outcome;
}

} // namespace

TEST_CASE("volume slices, projections and cuts show exactly the voxels they name", "[gui][volume]")
{
    VolumeSet v;
    v.channels = kC;
    v.depth = kD;
    v.height = kH;
    v.width = kW;
    for (int64_t c = 0; c < kC; ++c)
        for (int64_t d = 0; d < kD; ++d)
            for (int64_t h = 0; h < kH; ++h)
                for (int64_t w = 0; w < kW; ++w)
                    v.values.push_back(coded(c, d, h, w));

    const PlaneSet d3 = sliceOf(v, VolumeAxis::D, 3, false);
    REQUIRE(d3.channels == kC);
    CHECK(d3.height == kH);
    CHECK(d3.width == kW);
    CHECK(d3.plane(1)[2 * kW + 1] == coded(1, 3, 2, 1));
    const PlaneSet h4 = sliceOf(v, VolumeAxis::H, 4, false);
    CHECK(h4.height == kD);
    CHECK(h4.width == kW);
    CHECK(h4.plane(0)[5 * kW + 3] == coded(0, 5, 4, 3));
    const PlaneSet w1 = sliceOf(v, VolumeAxis::W, 1, true, 1);
    REQUIRE(w1.channels == 1);
    CHECK(w1.channelIds.at(0) == 1);
    CHECK(w1.height == kD);
    CHECK(w1.width == kH);
    CHECK(w1.plane(0)[2 * kH + 3] == coded(1, 2, 3, 1));
    // Colour ranges are the volume's, not the slice's: shared over all channels, or the channel's own.
    CHECK(w1.ranges.at(0) == std::pair<float, float>(0.f, coded(1, kD - 1, kH - 1, kW - 1)));
    CHECK(d3.ranges.at(1) == std::pair<float, float>(coded(1, 0, 0, 0), coded(1, kD - 1, kH - 1, kW - 1)));
    CHECK(sliceOf(v, VolumeAxis::D, kD, false).empty());

    // The maximum along an axis is the last voxel of each ray here; a NaN anywhere on a ray shows.
    const PlaneSet mipH = maxProjection(v, VolumeAxis::H, false);
    CHECK(mipH.height == kD);
    CHECK(mipH.plane(1)[4 * kW + 2] == coded(1, 4, kH - 1, 2));
    CHECK(argmaxAlong(v, 1, VolumeAxis::H, 4, 2) == kH - 1);
    v.values[size_t(((0 * kD + 2) * kH + 1) * kW + 3)] = std::numeric_limits<float>::quiet_NaN();
    const PlaneSet mipD = maxProjection(v, VolumeAxis::D, false);
    CHECK(std::isnan(mipD.plane(0)[1 * kW + 3]));
    CHECK(mipD.plane(0)[1 * kW + 2] == coded(0, kD - 1, 1, 2));
    CHECK(argmaxAlong(v, 0, VolumeAxis::D, 1, 3) == 2);
    CHECK(voxelOf(VolumeAxis::W, 3, 1, 2) == std::array<int64_t, 3> { 1, 2, 3 });
}

TEST_CASE(
    "a volume layer's maps are slices with a slider, three orthogonal cuts and a max projection", "[gui][volume][run]")
{
    TempDir dir;
    auto w = makeWindow();
    RunOutcomePtr outcome = runVolume(*w, writeVolumeNetwork(dir));

    // The shapes table names the axes, D, H and W among them; the flattened layer merges them.
    CHECK(shapeText(*w, 0) == QStringLiteral("1×2×6×5×4 (N, C, D, H, W)"));
    CHECK(shapeText(*w, 2) == QStringLiteral("1×240 (N, C·D·H·W)"));

    FeatureMapPanel* maps = w->featureMaps();
    VolumeView* view = maps->volumeView();
    REQUIRE(maps->isVolumeShown());
    CHECK(view->mode() == VolumeView::Mode::Slices);
    // Opens in the middle of the volume, along D: one H×W tile per channel.
    CHECK(view->slice() == kD / 2);
    FeatureMapGrid* grid = view->sliceGrid();
    REQUIRE(grid->tileCount() == kC);
    CHECK(grid->planes().height == kH);
    CHECK(grid->planes().width == kW);
    CHECK(grid->planes().plane(1)[0] == coded(1, kD / 2, 0, 0));
    CHECK(view->slider()->maximum() == kD - 1);

    // The slider walks the slices; the input beside follows.
    view->slider()->setValue(1);
    CHECK(grid->planes().plane(0)[2 * kW + 3] == coded(0, 1, 2, 3));
    CHECK(view->caption().startsWith(QStringLiteral("slice D = 1")));
    CHECK(maps->inputGrid()->planes().plane(0)[0] == coded(0, 1, 0, 0));

    // Along W: D×H tiles, the slider over W.
    view->axisBox()->setCurrentIndex(view->axisBox()->findText(QStringLiteral("W")));
    CHECK(view->axis() == VolumeAxis::W);
    CHECK(view->slider()->maximum() == kW - 1);
    CHECK(grid->planes().height == kD);
    CHECK(grid->planes().width == kH);
    view->slider()->setValue(2);
    CHECK(grid->planes().plane(1)[4 * kH + 1] == coded(1, 4, 1, 2));

    // Hover reads out the voxel and its value.
    // Sent to the grid itself: QTest::mouseMove moves the platform cursor, which the offscreen platform delivers to
    // whichever window it thinks is under it.
    const QPoint at = grid->tileRect(1).topLeft() + QPoint(1, 1);
    QMouseEvent move(QEvent::MouseMove, at, grid->mapToGlobal(at), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(grid, &move);
    CHECK(maps->statusText() == QStringLiteral("channel 1 · d 0 · h 0 · w 2 · value 1002"));
    maybeShoot(*w, "volume-slices");

    // Max projection along D: every ray's maximum is its last voxel; the slider has nothing to choose.
    view->axisBox()->setCurrentIndex(view->axisBox()->findText(QStringLiteral("D")));
    view->modeBox()->setCurrentIndex(int(VolumeView::Mode::Projection));
    CHECK_FALSE(view->slider()->isEnabled());
    CHECK(grid->planes().plane(0)[3 * kW + 1] == coded(0, kD - 1, 3, 1));
    CHECK(maps->inputGrid()->planes().plane(1)[0] == coded(1, kD - 1, 0, 0));
    maybeShoot(*w, "volume-projection");

    // A click on a projection opens the orthogonal cuts of that channel through the voxel holding the maximum.
    const QRect tile = grid->tileRect(1);
    QTest::mouseClick(grid, Qt::LeftButton, {},
        tile.topLeft() + QPoint(tile.width() * 3 / kW - tile.width() / (2 * kW), tile.height() / (2 * kH)));
    CHECK(view->mode() == VolumeView::Mode::Orthogonal);
    CHECK(view->channel() == 1);
    CHECK(view->point() == std::array<int64_t, 3> { kD - 1, 0, 2 });
    const PlaneSet& cutD = view->orthogonalGrid(VolumeAxis::D)->planes();
    const PlaneSet& cutH = view->orthogonalGrid(VolumeAxis::H)->planes();
    const PlaneSet& cutW = view->orthogonalGrid(VolumeAxis::W)->planes();
    CHECK((cutD.height == kH && cutD.width == kW && cutH.height == kD && cutH.width == kW && cutW.height == kD
        && cutW.width == kH));
    CHECK(cutD.plane(0)[1 * kW + 3] == coded(1, kD - 1, 1, 3));
    CHECK(cutH.plane(0)[2 * kW + 1] == coded(1, 2, 0, 1));
    CHECK(cutW.plane(0)[3 * kH + 4] == coded(1, 3, 4, 2));
    // The slider moves the voxel along the chosen axis; a click in a cut moves it within the cut.
    view->slider()->setValue(2);
    CHECK(view->point() == std::array<int64_t, 3> { 2, 0, 2 });
    FeatureMapGrid* hCut = view->orthogonalGrid(VolumeAxis::H);
    const QRect r = hCut->tileRect(0);
    QTest::mouseClick(hCut, Qt::LeftButton, {}, r.topLeft() + QPoint(r.width() / (2 * kW), r.height() * 9 / (2 * kD)));
    CHECK(view->point() == std::array<int64_t, 3> { 4, 0, 0 });
    CHECK(view->caption() == QStringLiteral("channel 1 cut through voxel d 4 · h 0 · w 0 · D×H×W 6×5×4"));
    maybeShoot(*w, "volume-orthogonal");

    // The next layer keeps the view (mode, voxel, channel); its values are the sigmoid of the input's.
    w->networkPanel()->setCurrentLayer(1);
    REQUIRE(maps->isVolumeShown());
    CHECK(view->mode() == VolumeView::Mode::Orthogonal);
    CHECK(view->point() == std::array<int64_t, 3> { 4, 0, 0 });
    const Tensor& squashed = *outcome->result.selections[0].layers[1].output;
    CHECK(view->orthogonalGrid(VolumeAxis::D)->planes().plane(0)[0] == squashed.at(0, 1, 4, 0, 0));

    // A feature vector after the volume is a heat map of its features; the volume input stays a slice.
    w->networkPanel()->setCurrentLayer(2);
    CHECK_FALSE(maps->isVolumeShown());
    REQUIRE(maps->isPlotShown());
    CHECK(maps->tensorPlot()->heatMap().cols == kC * kD * kH * kW);
    CHECK(maps->inputGrid()->planes().height == kH);
}

TEST_CASE("the interpolation panel decodes a strip of volumes along t and times both decoders",
    "[gui][volume][interpolation]")
{
    TempDir dir;
    const auto path = dir.path / "ae.json";
    std::ofstream(path) << R"({ "format": "convscope-network", "version": 1, "name": "tiny autoencoder",
  "input": { "batch": 1, "channels": 1, "depth": 8, "height": 8, "width": 8, "source": "sample:voxels:sphere" },
  "layers": [
    { "type": "conv3d", "name": "enc", "out_channels": 4, "kernel_size": [3, 3, 3], "stride": [2, 2, 2], "padding": "same" },
    { "type": "relu", "name": "latent" },
    { "type": "conv_transpose3d", "name": "dec", "out_channels": 1, "kernel_size": [2, 2, 2], "stride": [2, 2, 2] },
    { "type": "tanh", "name": "out" } ] })";
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString(path.string())));
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" }, { "cpu", "im2col_gemm" } }));
    w->runPanel()->setWarmupRepeat(0, 2);

    auto* panel = w->findChild<InterpolationPanel*>();
    REQUIRE(panel);
    CHECK(panel->latentBox()->currentText() == QStringLiteral("latent"));
    CHECK(panel->latentBox()->count() == 3); // every layer but the last
    panel->fromEdit()->setText(QStringLiteral("sample:voxels:cube"));
    panel->stepsBox()->setValue(5);
    QSignalSpy done(w->engine(), &Engine::interpolationFinished);
    const int job = panel->start();
    REQUIRE(job > 0);
    REQUIRE(done.wait(60000));
    const InterpolationResultPtr r = panel->result();
    REQUIRE(r);
    REQUIRE(r->runs.size() == 2);
    REQUIRE(r->runs[0].ok);
    CHECK(r->ts.front() == 0.0);
    CHECK(r->ts.back() == 1.0);

    // Both selections have a row with the encoder and both decoders timed, and the speed-up of batching.
    QTableWidget* table = panel->timingTable();
    REQUIRE(table->rowCount() == 2);
    for (int c = 0; c < 4; ++c)
        CHECK_FALSE(table->item(0, c)->text().isEmpty());

    // One tile per step: channel 0's maximum along D of each decoded volume, step k the k-th batch item.
    FeatureMapGrid* strip = panel->strip();
    REQUIRE(strip->tileCount() == 5);
    const Tensor& decoded = r->runs[0].decodes.at(0).decoded;
    REQUIRE(decoded.shape() == Shape::ncdhw(5, 1, 8, 8, 8));
    CHECK(strip->planes().height == 8);
    for (int k : { 0, 4 }) {
        float m = -2;
        for (int64_t d = 0; d < 8; ++d)
            m = std::max(m, decoded.at(k, 0, d, 3, 5));
        CHECK(strip->planes().plane(k)[3 * 8 + 5] == m);
    }
    CHECK(panel->caption().contains(QStringLiteral("t = 0 … 1")));
    // The middle slice along H instead: D × W tiles of item k at h = 4.
    panel->viewBox()->setCurrentIndex(4);
    CHECK(strip->planes().plane(2)[6 * 8 + 1] == decoded.at(2, 0, 6, 4, 1));
    if (auto* dock = w->findChild<QDockWidget*>(QStringLiteral("interpolationDock")))
        dock->raise();
    maybeShoot(*w, "interpolation");

    // A bad input source fails with the loader's message, in the panel.
    panel->toEdit()->setText(QStringLiteral("sample:voxels:pyramid"));
    QSignalSpy failed(w->engine(), &Engine::failed);
    REQUIRE(panel->start() > 0);
    REQUIRE(failed.wait(30000));
    CHECK(panel->message().contains(QStringLiteral("pyramid")));
}

TEST_CASE("the layer editor edits a conv3d's kernel, stride and padding as depth × height × width", "[gui][volume]")
{
    TempDir dir;
    const auto path = dir.path / "c3.json";
    std::ofstream(path) << R"({ "format": "convscope-network", "version": 1, "name": "one conv3d",
  "input": { "batch": 1, "channels": 2, "depth": 8, "height": 8, "width": 8, "source": "random" },
  "layers": [ { "type": "conv3d", "name": "c", "out_channels": 4, "kernel_size": [3, 5, 3], "stride": [2, 2, 2],
                "padding": "same" }, { "type": "maxpool3d", "name": "p", "kernel_size": [2, 2, 2] } ] })";
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString(path.string())));
    w->networkPanel()->setCurrentLayer(0);
    auto* editor = w->networkPanel()->editor();
    auto* kernel = qobject_cast<TripleEditor*>(editor->field(QStringLiteral("kernel_size")));
    auto* stride = qobject_cast<TripleEditor*>(editor->field(QStringLiteral("stride")));
    auto* padding = qobject_cast<Padding3dEditor*>(editor->field(QStringLiteral("padding")));
    REQUIRE(kernel);
    REQUIRE(stride);
    REQUIRE(padding);
    CHECK(kernel->value() == Triple { 3, 5, 3 });
    CHECK_FALSE(kernel->linked()); // the sizes differ
    CHECK(stride->value() == Triple { 2, 2, 2 });
    CHECK(padding->value().mode == Padding3d::Mode::Same);
    CHECK(shapeText(*w, 0) == QStringLiteral("1×4×4×4×4 (N, C, D, H, W)"));

    // Stride 1 along depth only: 'same' keeps D at 8.
    stride->setLinked(false);
    stride->box(0)->setValue(1);
    CHECK(std::get<Conv3d>(w->document()->network().layers[0].spec).stride == Triple { 1, 2, 2 });
    CHECK(shapeText(*w, 0) == QStringLiteral("1×4×8×4×4 (N, C, D, H, W)"));
    // Explicit padding, all six sides linked.
    padding->modeBox()->setCurrentIndex(0);
    padding->side(0)->setValue(1);
    const Padding3d p = std::get<Conv3d>(w->document()->network().layers[0].spec).padding;
    CHECK((p.mode == Padding3d::Mode::Explicit && p.front == 1 && p.back == 1 && p.right == 1));
    w->document()->undoStack()->undo();
    w->document()->undoStack()->undo();
    CHECK(std::get<Conv3d>(w->document()->network().layers[0].spec).stride == Triple { 2, 2, 2 });

    // The pool's stride defaults to its kernel and shows it.
    w->networkPanel()->setCurrentLayer(1);
    auto* poolStride = qobject_cast<TripleEditor*>(editor->field(QStringLiteral("stride")));
    REQUIRE(poolStride);
    CHECK(poolStride->value() == Triple { 2, 2, 2 });
}
