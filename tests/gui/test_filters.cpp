// The filters view: which kernel each tile shows (conv2d and the transposed layout with groups), the shared scale,
// colour kernels for a first layer on a colour picture, and the real window showing the trained LeNet-5's filters.
// Also the window polish it came with: the network's description, the Run dock's whole algorithm names and the
// hidden legend of an empty chart.
#include "gui_helpers.h"

#include "compute/network_json.h"
#include "compute/npy.h"
#include "gui/charts/chart_view.h"
#include "gui/charts/sweep_chart.h"
#include "gui/pages/feature_map_panel.h"
#include "gui/pages/input_panel.h"
#include "gui/pages/run_panel.h"
#include "gui/pages/sweep_panel.h"
#include "gui/views/filters_view.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QCheckBox>
#include <QDockWidget>
#include <QLabel>
#include <QScrollArea>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {

// A weight tensor whose every element says where it is: 1000·d0 + 100·d1 + 10·row + col.
std::shared_ptr<const Tensor> labelledWeight(int64_t d0, int64_t d1, int64_t kh, int64_t kw)
{
    auto t = std::make_shared<Tensor>(Shape::nchw(d0, d1, kh, kw));
    for (int64_t a = 0; a < d0; ++a)
        for (int64_t b = 0; b < d1; ++b)
            for (int64_t y = 0; y < kh; ++y)
                for (int64_t x = 0; x < kw; ++x)
                    t->at(a, b, y, x) = float(1000 * a + 100 * b + 10 * y + x);
    return t;
}

Network oneLayer(LayerSpec spec, std::shared_ptr<const Tensor> weight, int64_t inChannels)
{
    Network net;
    net.input = { 1, inChannels, 8, 8, false, "random:1" };
    Layer l;
    l.name = "k";
    l.spec = std::move(spec);
    l.weight = std::move(weight);
    net.layers.push_back(l);
    return net;
}

// The shown outcome's output of layer `layer` for the first selection.
const Tensor* waitlessOutput(MainWindow& w, int layer)
{
    const RunOutcomePtr o = w.featureMaps()->outcome();
    return o ? &*o->result.selections.at(0).layers.at(size_t(layer)).output : nullptr;
}

} // namespace

TEST_CASE("filtersOf reads conv2d kernels as outputs by inputs", "[gui][filters]")
{
    Conv2d c;
    c.out_channels = 4;
    c.kernel_size = { 2, 3 };
    const FilterSet f = filtersOf(oneLayer(c, labelledWeight(4, 2, 2, 3), 2), 0);
    REQUIRE_FALSE(f.empty());
    CHECK(f.layerName == QStringLiteral("k"));
    CHECK_FALSE(f.transposed);
    CHECK(f.outChannels == 4);
    CHECK(f.inChannels == 2);
    CHECK(f.kh == 2);
    CHECK(f.kw == 3);
    CHECK(f.absMax == 3112.0f); // weight[3][1][1][2], the largest
    CHECK_FALSE(f.colourable); // two input channels
    CHECK(f.kernel(3, 1)[0] == 3100.0f);
    CHECK(f.kernel(2, 0)[1 * 3 + 2] == 2012.0f); // row 1, col 2

    // At most maxOut × maxIn kernels are copied; the scale still covers them all.
    const FilterSet part = filtersOf(oneLayer(c, labelledWeight(4, 2, 2, 3), 2), 0, 2, 1);
    CHECK(part.shownOut == 2);
    CHECK(part.shownIn == 1);
    CHECK(part.values.size() == 2 * 1 * 6);
    CHECK(part.absMax == 3112.0f);
    CHECK(part.kernel(1, 0)[0] == 1000.0f);

    // Layers without filters give none.
    CHECK(filtersOf(oneLayer(ReLU {}, nullptr, 2), 0).empty());
    CHECK(filtersOf(oneLayer(c, nullptr, 2), 0).empty()); // not materialised yet
    CHECK(filtersOf(oneLayer(c, labelledWeight(4, 2, 2, 3), 2), 1).empty());
}

TEST_CASE("filtersOf follows PyTorch's transposed layout with groups", "[gui][filters]")
{
    // conv_transpose2d, C_in 4, C_out 6, groups 2: weight [C_in, C_out/g, kh, kw] = [4, 3, 1, 1]. Output o of group
    // g = o / 3 reads inputs 2g and 2g+1 through weight[2g + i][o mod 3].
    ConvTranspose2d t;
    t.out_channels = 6;
    t.kernel_size = { 1, 1 };
    t.groups = 2;
    const FilterSet f = filtersOf(oneLayer(t, labelledWeight(4, 3, 1, 1), 4), 0);
    REQUIRE_FALSE(f.empty());
    CHECK(f.transposed);
    CHECK(f.groups == 2);
    CHECK(f.outChannels == 6);
    CHECK(f.inChannels == 2);
    for (int64_t o = 0; o < 6; ++o)
        for (int64_t i = 0; i < 2; ++i) {
            CAPTURE(o, i);
            const int64_t g = o / 3;
            CHECK(f.kernel(o, i)[0] == float(1000 * (2 * g + i) + 100 * (o % 3)));
        }
}

TEST_CASE("a first layer on a colour picture shows each output's kernels as one colour image", "[gui][filters]")
{
    Conv2d c;
    c.out_channels = 2;
    c.kernel_size = { 1, 2 };
    auto w = std::make_shared<Tensor>(Shape::nchw(2, 3, 1, 2));
    std::fill(w->data(), w->data() + w->numel(), 0.0f); // a Tensor starts uninitialised
    // Output 0: pure positive red at column 0, negative blue at column 1. Output 1: all zero.
    w->at(0, 0, 0, 0) = 0.5f;
    w->at(0, 2, 0, 1) = -0.5f;
    const Network net = oneLayer(c, w, 3);
    const FilterSet f = filtersOf(net, 0);
    REQUIRE(f.colourable);

    FiltersView view;
    view.resize(300, 400);
    view.show();
    REQUIRE(view.setLayer(net, 0));
    CHECK(view.colourBox()->isVisible());
    FilterGrid* grid = view.grid();
    CHECK(grid->colourShown());
    REQUIRE(grid->tileCount() == 2);
    CHECK(grid->tileKernel(0) == std::make_pair(0, -1));
    const QImage red = grid->tileImage(0), zero = grid->tileImage(1);
    CHECK(red.pixel(0, 0) == qRgb(255, 128, 128)); // +max on red: full red, the others at grey
    CHECK(red.pixel(1, 0) == qRgb(128, 128, 0)); // −max on blue
    CHECK(zero.pixel(0, 0) == qRgb(128, 128, 128)); // zero is grey
    CHECK(view.noteText().contains(QStringLiteral("colour kernel")));

    // Per channel: out × in tiles on the diverging scale, zero white.
    view.colourBox()->setChecked(false);
    CHECK_FALSE(grid->colourShown());
    REQUIRE(grid->tileCount() == 6);
    CHECK(grid->tileKernel(5) == std::make_pair(1, 2));
    CHECK(grid->tileImage(0).pixel(0, 0) == qRgb(178, 24, 43)); // +max: the map's red end
    CHECK(grid->tileImage(2).pixel(1, 0) == qRgb(33, 102, 172)); // −max: its blue end
    const QRgb white = grid->tileImage(3).pixel(0, 0); // zero: the map's white middle
    CHECK((qRed(white) > 240 && qGreen(white) > 240 && qBlue(white) > 240));
    CHECK(view.noteText().contains(QStringLiteral("rows: outputs")));

    // The same kernels behind a first layer of another kind of input are not colour.
    Network grey = net;
    grey.input.channels = 1;
    CHECK_FALSE(filtersOf(grey, 0).colourable);
}

TEST_CASE("the trained LeNet-5 shows its filters beside the feature maps", "[gui][filters][window]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    const auto path = examplesDir() / "lenet5_trained.json";
    REQUIRE(w->project()->openFile(QString::fromStdString(path.string())));
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    w->networkPanel()->setCurrentLayer(0);
    const int job = w->triggerRun();
    REQUIRE(job > 0);
    REQUIRE(waitForRun(*w, job));
    QCoreApplication::processEvents();

    FiltersView* filters = w->featureMaps()->filters();
    REQUIRE(filters->isVisible());
    CHECK(filters->titleText() == QStringLiteral("Filters of c1"));
    FilterGrid* grid = filters->grid();
    REQUIRE(grid->tileCount() == 6); // six 5×5 kernels on one input channel
    CHECK_FALSE(filters->colourBox()->isVisible());

    // The tiles show the file's weights: hover a pixel and read the weight back.
    const NpyArray c1 = readNpy((examplesDir() / "lenet5_c1.weight.npy").string());
    REQUIRE(c1.dims == std::vector<int64_t> { 6, 1, 5, 5 });
    float absMax = 0;
    for (float v : c1.data)
        absMax = std::max(absMax, std::fabs(v));
    CHECK(grid->filters().absMax == absMax);
    QTest::qWait(50); // every posted layout applied before aiming: the grid must not move under the pointer
    const QRect tile = grid->tileRect(4);
    const int s = grid->pixelScale();
    REQUIRE(s >= 2);
    QTest::mouseMove(grid, tile.topLeft() + QPoint(3 * s + s / 2, 1 * s + s / 2)); // row 1, col 3
    const float expected = c1.data[size_t(4 * 25 + 1 * 5 + 3)];
    CHECK(filters->statusText().startsWith(QStringLiteral("output 4 · input 0 · row 1 · col 3 · weight ")));
    CHECK(filters->statusText().endsWith(QString::number(double(expected), 'g', 4)));

    // The second conv layer: a matrix of 16 outputs × 6 inputs; a ReLU has no filters and the pane goes.
    w->networkPanel()->setCurrentLayer(3);
    CHECK(filters->isVisible());
    CHECK(grid->tileCount() == 16 * 6);
    CHECK(grid->tileKernel(16 * 6 - 1) == std::make_pair(15, 5));
    CHECK(filters->noteText().startsWith(QStringLiteral("16 outputs × 6 inputs, 5×5")));
    w->networkPanel()->setCurrentLayer(1);
    CHECK_FALSE(filters->isVisible());

    // The ten test digits are the batch: any of them can be shown, an eleventh cannot.
    FeatureMapPanel* maps = w->featureMaps();
    CHECK(maps->batchItems() == 10);
    CHECK(maps->setBatchItem(7));
    CHECK_FALSE(maps->setBatchItem(10));
    CHECK(maps->grid()->planes().values == planesOf(*waitlessOutput(*w, 1), 7).values);

    // The file's description: its first line above the layer list, all of it as the tooltip.
    const Network net = loadNetwork(path);
    REQUIRE_FALSE(net.description.empty());
    CHECK(w->networkPanel()->aboutText()
        == QString::fromStdString(net.description.substr(0, net.description.find('\n'))));
    CHECK(w->networkPanel()->aboutText().contains(QStringLiteral("97.33%")));
    maybeShoot(*w, "lenet-filters");
}

TEST_CASE("the Run dock keeps every algorithm name whole at a laptop's width", "[gui][polish]")
{
    auto w = makeWindow();
    w->resize(1366, 768);
    QCoreApplication::processEvents();
    auto* scroll = qobject_cast<QScrollArea*>(w->dock(QStringLiteral("run"))->widget());
    REQUIRE(scroll);
    QWidget* viewport = scroll->viewport();
    int boxes = 0;
    for (QCheckBox* box : w->runPanel()->findChildren<QCheckBox*>()) {
        if (!box->objectName().startsWith(QStringLiteral("select_")))
            continue;
        ++boxes;
        CAPTURE(box->objectName().toStdString());
        CHECK(box->width() >= box->sizeHint().width());
        CHECK(box->mapTo(viewport, QPoint(box->width(), 0)).x() <= viewport->width());
    }
    CHECK(boxes >= 4); // cpu's algorithms at least
    // A backend that cannot run says why in full (its label wraps rather than eliding).
    for (QLabel* why : w->runPanel()->findChildren<QLabel*>())
        if (why->objectName().startsWith(QStringLiteral("unavailable_"))) {
            CAPTURE(why->objectName().toStdString());
            CHECK(why->height() >= why->heightForWidth(why->width()));
        }
}

TEST_CASE("an empty chart shows no legend box", "[gui][polish]")
{
    auto w = makeWindow();
    REQUIRE(w->showView(QStringLiteral("sweep")));
    QCoreApplication::processEvents();
    SweepChart* chart = w->sweepPanel()->chart();
    chart->plot()->replot();
    CHECK_FALSE(chart->plot()->legend->visible());
}

TEST_CASE("the photographs are inputs one choice away", "[gui][photos]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "vgg_block.json").string())));
    auto* source = w->inputPanel()->findChild<QComboBox*>(QStringLiteral("inputSource"));
    REQUIRE(source);
    QStringList photos;
    for (int i = 0; i < source->count(); ++i)
        if (source->itemText(i).startsWith(QStringLiteral("Photo: ")))
            photos << source->itemText(i).mid(7);
    CHECK(photos == QStringList { QStringLiteral("astronaut"), QStringLiteral("chelsea"), QStringLiteral("coffee") });

    source->setCurrentIndex(source->findText(QStringLiteral("Photo: chelsea")));
    const InputSpec& in = w->document()->network().input;
    CHECK(QString::fromStdString(in.source).endsWith(QStringLiteral("samples/chelsea.png")));
    CHECK(in.channels == 3);
    CHECK(source->currentText() == QStringLiteral("Photo: chelsea")); // the panel shows it by name, not as a file
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "im2col_gemm" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    const int job = w->triggerRun();
    REQUIRE(job > 0);
    const RunOutcomePtr outcome = waitForRun(*w, job);
    REQUIRE(outcome);
    // A real photograph: its three channels differ (a cat is not grey) and span most of [0, 1].
    const Tensor& x = outcome->input;
    REQUIRE(x.shape().c == 3);
    const int64_t plane = x.shape().h * x.shape().w;
    double differ = 0, lo = 1, hi = 0;
    for (int64_t i = 0; i < plane; ++i) {
        differ += std::fabs(x.data()[i] - x.data()[2 * plane + i]);
        lo = std::min(lo, double(x.data()[i]));
        hi = std::max(hi, double(x.data()[i]));
    }
    CHECK(differ / double(plane) > 0.02);
    CHECK(hi - lo > 0.5);
    // The input grid shows the three channels and the picture itself, in colour, as a last tile.
    QCoreApplication::processEvents();
    FeatureMapGrid* input = w->featureMaps()->inputGrid();
    REQUIRE(input->hasComposite());
    REQUIRE(input->tileCount() == 4);
    const QImage& composite = input->grab(input->tileRect(3)).toImage();
    int coloured = 0;
    for (int y = 0; y < composite.height(); ++y)
        for (int x = 0; x < composite.width(); ++x) {
            const QRgb p = composite.pixel(x, y);
            coloured += std::abs(qRed(p) - qBlue(p)) > 20;
        }
    CHECK(coloured > composite.width() * composite.height() / 10); // a cat is orange, not grey
}
