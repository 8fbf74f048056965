// Training in the window (issue 33): the engine's train job, the Train page's proposed target, the training chart's
// phases, the Gradients page's weight gradients and saliency map.
#include "gui_helpers.h"

#include "compute/network_json.h"
#include "gui/charts/training_chart.h"
#include "gui/document/network_document.h"
#include "gui/pages/gradients_panel.h"
#include "gui/pages/train_panel.h"
#include "gui/views/filters_view.h"
#include "gui/views/saliency_view.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QPushButton>
#include <QSpinBox>

#include <cstdlib>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {
// The three pages on one engine and one document, as the window has them.
struct TrainingPages {
    Engine engine;
    NetworkDocument doc;
    TrainPanel panel { &engine, &doc };
    TrainingChart chart { &engine };
    GradientsPanel gradients { &engine };

    explicit TrainingPages(const char* network, std::vector<Selection> selections = { { "cpu", "direct" } })
    {
        doc.reset(loadNetwork(examplesDir() / network), QString());
        RunSettings s = engine.runSettings();
        s.selections = std::move(selections);
        engine.setRunSettings(s);
    }

    // Starts a run with the page's fields and waits for it; the outcome, or a failed check naming the message.
    TrainOutcomePtr train(int steps, int warmup = 0)
    {
        panel.stepsBox()->setValue(steps);
        panel.warmupBox()->setValue(warmup);
        QSignalSpy done(&engine, &Engine::trainingFinished);
        QSignalSpy failed(&engine, &Engine::failed);
        const int job = panel.start();
        INFO(panel.message().toStdString());
        REQUIRE(job > 0);
        for (int i = 0; i < 1200 && done.isEmpty() && failed.isEmpty(); ++i)
            done.wait(100);
        if (!failed.isEmpty())
            FAIL(failed.first().at(1).toString().toStdString());
        REQUIRE(done.size() == 1);
        CHECK(done.first().at(0).toInt() == job);
        QCoreApplication::processEvents();
        return done.first().at(1).value<TrainOutcomePtr>();
    }
};

// The share of the saliency on the digit's ink (pixels above 0.25) and the share of the pixels that are ink.
std::pair<double, double> inkShares(const Tensor& input, const std::vector<float>& saliency, int64_t item)
{
    const int64_t area = input.shape().h * input.shape().w;
    double onInk = 0, all = 0, ink = 0;
    for (int64_t p = 0; p < area; ++p) {
        const bool isInk = input.data()[item * area + p] > 0.25f;
        all += saliency[size_t(p)];
        onInk += isInk ? saliency[size_t(p)] : 0;
        ink += isInk ? 1 : 0;
    }
    return { onInk / all, ink / double(area) };
}
} // namespace

TEST_CASE("the Train page proposes the trained LeNet-5's class-ordered digits as its target", "[gui][train]")
{
    TrainingPages pages("lenet5_trained.json");
    CHECK(pages.panel.targetBox()->currentText().contains(QStringLiteral("digits_test_0to9.npy")));
    CHECK(pages.panel.lossBox()->currentData().toInt() == int(LossKind::CrossEntropy));
    CHECK(pages.panel.targetText().contains(QStringLiteral("targets 0 … 9")));
    CHECK(pages.panel.targetText().contains(QStringLiteral("softmax probabilities left out")));
    const TrainingData d = pages.panel.data();
    CHECK(d.network.input.batch == 10);
    CHECK(d.network.layers.size() == pages.doc.network().layers.size() - 1);
    REQUIRE(d.target->numel() == 10);
    for (int i = 0; i < 10; ++i)
        CHECK(d.target->data()[i] == float(i));

    // A loss the target does not fit is refused on the page, naming why, and nothing starts.
    pages.panel.lossBox()->setCurrentIndex(pages.panel.lossBox()->findData(int(LossKind::MSE)));
    CHECK(pages.panel.targetText().contains(QStringLiteral("choose the cross-entropy loss")));
    QSignalSpy started(&pages.engine, &Engine::started);
    CHECK(pages.panel.start() == 0);
    CHECK(pages.panel.message().contains(QStringLiteral("Cannot train")));
    CHECK(started.isEmpty());
    // mse with one value for every output trains the output's shape.
    pages.panel.targetBox()->setCurrentIndex(pages.panel.targetBox()->findData(int(TargetKind::ValueForAll)));
    CHECK(pages.panel.data().target->shape() == Shape::features(10, 10));
}

TEST_CASE("the colour CNN proposes the test set its description names", "[gui][train]")
{
    const Network net = loadNetwork(examplesDir() / "colour_cnn.json");
    const auto set = classOrderedSet(net);
    REQUIRE(set);
    CHECK(set->source == "colour_shapes_test.npy");
    CHECK(set->items == 9);
    // A network without labels has none: it trains on its own input with a class or value for every item.
    Network plain = net;
    plain.labels.clear();
    CHECK_FALSE(classOrderedSet(plain));
}

TEST_CASE(
    "a training run of LeNet-5 on the worker: the training chart has every phase, the loss goes down", "[gui][train]")
{
    TrainingPages pages("lenet5_trained.json", { { "cpu", "direct" }, { "cpu", "im2col_gemm" }, { "cpu", "fft" } });
    const TrainOutcomePtr out = pages.train(3);
    REQUIRE(out);
    const TrainResult& r = out->result;
    // cpu.fft has no training path: left out and named, the others trained.
    REQUIRE(r.selections.size() == 2);
    CHECK(r.selections[0].selection.str() == "cpu.direct");
    REQUIRE(out->skipped.size() == 1);
    CHECK(out->skipped[0].first.str() == "cpu.fft");
    CHECK(pages.panel.summary().contains(QStringLiteral("cpu.fft left out")));
    CHECK(r.selections[0].steps.back().loss < r.selections[0].steps.front().loss);
    CHECK(r.selections[1].maxParamRelL2 < 1e-4);

    // The phases chart: every (selection, phase) a series over the layers and the loss row.
    const size_t layers = r.network.layers.size();
    const auto series = pages.chart.series();
    REQUIRE(series.size() == 2 * 5);
    CHECK(pages.chart.tickLabels().size() == int(layers) + 1);
    for (const auto& s : series) {
        INFO(s.selection.toStdString() << " " << s.phase.toStdString());
        CHECK(TrainingChart::phaseNames().contains(s.phase));
        CHECK(s.keys.size() == (s.phase == QStringLiteral("loss") ? 1 : int(layers)));
    }
    auto phase = [&](const char* name) {
        for (const auto& s : series)
            if (s.selection == QStringLiteral("cpu.direct") && s.phase == QLatin1String(name))
                return s.values;
        return QVector<double> {};
    };
    // c1 (layer 0) has every phase (its backward-data too: the input gradient was asked for); relu1 has no weights.
    for (const char* p : { "forward", "backward-data", "backward-weights", "update" })
        CHECK(phase(p).at(0) > 0);
    CHECK(phase("backward-weights").at(1) == 0);
    CHECK(phase("update").at(1) == 0);
    CHECK(phase("backward-data").at(1) > 0);

    pages.chart.setMode(TrainingChart::Mode::Loss);
    REQUIRE(pages.chart.series().size() == 2);
    CHECK(pages.chart.series()[0].keys == QVector<double> { 1, 2, 3 });
    CHECK(pages.chart.series()[0].values[0] == Approx(r.selections[0].steps[0].loss));
}

TEST_CASE(
    "the Gradients page draws LeNet-5's weight gradients and a saliency map that lies on the strokes", "[gui][train]")
{
    TrainingPages pages("lenet5_trained.json");
    const TrainOutcomePtr out = pages.train(1);
    REQUIRE(out);
    const SelectionTraining& sel = out->result.selections[0];

    // The weight gradient of c1, drawn by the filters view: one tile per output, the gradient's values.
    FiltersView* view = pages.gradients.weightGradients();
    REQUIRE(view->hasFilters());
    CHECK(view->titleText() == QStringLiteral("Weight gradient of c1"));
    CHECK(view->grid()->tileCount() == 6);
    REQUIRE(sel.weightGradients.size() == out->result.network.layers.size());
    const Tensor& g1 = *sel.weightGradients[0];
    CHECK(view->grid()->filters().gradient);
    CHECK(view->grid()->filters().values == std::vector<float>(g1.data(), g1.data() + g1.numel()));
    // Selecting c3 in the window shows its 16 × 6 kernels' gradients.
    pages.gradients.showLayer(3);
    CHECK(view->titleText() == QStringLiteral("Weight gradient of c3"));
    CHECK(view->grid()->tileCount() == 16 * 6);

    // The saliency map: one tile per digit, captioned with its class; on every digit the saliency lies on the ink
    // more than the ink's share of the picture, and on average twice as densely as on the background.
    SaliencyView* sal = pages.gradients.saliency();
    REQUIRE(sal->tileCount() == 10);
    const Tensor& input = *out->input;
    double inkDensity = 0, backgroundDensity = 0;
    for (int i = 0; i < 10; ++i) {
        const auto [onInk, inkArea] = inkShares(input, sal->saliency(i), i);
        INFO("digit " << i << ": " << onInk << " of the saliency on " << inkArea << " of the pixels");
        CHECK(onInk > inkArea);
        inkDensity += onInk / inkArea;
        backgroundDensity += (1 - onInk) / (1 - inkArea);
    }
    CHECK(inkDensity / backgroundDensity > 1.5);
    // The map is |∂L/∂x| divided by its largest, and it is drawn: the tile is not the plain picture.
    const std::vector<float> s0 = saliencyOf(*sel.inputGradient, 0);
    CHECK(*std::max_element(s0.begin(), s0.end()) == 1.0f);
    const QImage tile = sal->tileImage(0), picture = pictureOf(input, 0);
    CHECK(tile.size() == picture.size());
    CHECK(tile != picture.convertToFormat(tile.format()));
    pages.gradients.overlayBox()->setChecked(false);
    CHECK_FALSE(sal->overlay());
    CHECK(pages.gradients.saliencyCaption().contains(QStringLiteral("cpu.direct")));
}

TEST_CASE(
    "the colour CNN trains on its test set and its first layer's gradient shows as colour kernels", "[gui][train]")
{
    TrainingPages pages("colour_cnn.json");
    CHECK(pages.panel.targetBox()->currentText().contains(QStringLiteral("colour_shapes_test.npy")));
    const TrainOutcomePtr out = pages.train(1);
    REQUIRE(out);
    CHECK(out->input->shape() == Shape::nchw(9, 3, 64, 64));
    CHECK(pages.gradients.weightGradients()->grid()->filters().colourable);
    REQUIRE(pages.gradients.saliency()->tileCount() == 9);
}

TEST_CASE("the Train page trains in the Run panel's math, and names a selection that refuses it", "[gui][train]")
{
    TrainingPages pages("lenet5_trained.json", { { "cpu", "direct" }, { "cpu", "im2col_gemm" } });
    RunSettings s = pages.engine.runSettings();
    s.math = MathMode::BF16;
    pages.engine.setRunSettings(s);
    CHECK(pages.panel.selectionsNote().contains(QStringLiteral("in bf16")));
    // The CPU trains bf16 as mixed precision (compute/training/mixed_products.h), and each selection says so.
    const TrainOutcomePtr mixed = pages.train(1);
    REQUIRE(mixed);
    REQUIRE(mixed->result.selections.size() == 2);
    CHECK(mixed->skipped.empty());
    for (const SelectionTraining& t : mixed->result.selections) {
        INFO(t.selection.str());
        CHECK(t.metadata.at("math").rfind("bf16 mixed precision", 0) == 0);
    }
    // A selection without a training path is left out and named; the others train.
    s.selections = { { "cpu", "direct" }, { "cpu", "fft" } };
    s.math = MathMode::FP16;
    pages.engine.setRunSettings(s);
    const TrainOutcomePtr some = pages.train(1);
    REQUIRE(some);
    REQUIRE(some->result.selections.size() == 1);
    CHECK(some->result.selections[0].metadata.at("math").rfind("fp16 mixed precision", 0) == 0);
    REQUIRE(some->skipped.size() == 1);
    CHECK(some->skipped[0].first.str() == "cpu.fft");
    CHECK(some->skipped[0].second.find("no training path") != std::string::npos);
    // None left: the run fails naming each selection and why.
    s.selections = { { "cpu", "fft" } };
    pages.engine.setRunSettings(s);
    QSignalSpy failed(&pages.engine, &Engine::failed);
    REQUIRE(pages.panel.start() > 0);
    for (int i = 0; i < 300 && failed.isEmpty(); ++i)
        failed.wait(100);
    REQUIRE(failed.size() == 1);
    const QString why = failed.first().at(1).toString();
    INFO(why.toStdString());
    CHECK(why.contains(QStringLiteral("no selection can train")));
    CHECK(why.contains(QStringLiteral("cpu.fft")));
    CHECK(why.contains(QStringLiteral("train on cpu.direct or cpu.im2col_gemm")));
}

TEST_CASE("a training run is cancelled and a superseded one is dropped", "[gui][train]")
{
    // LeNet-5: a cancel stops a run after the step at work, so the steps' cost is the test's (the colour CNN's steps
    // took 23 s of the asan preset's tests).
    TrainingPages pages("lenet5_trained.json");
    pages.panel.stepsBox()->setValue(1000);
    QSignalSpy done(&pages.engine, &Engine::trainingFinished);
    QSignalSpy failed(&pages.engine, &Engine::failed);
    const int first = pages.panel.start();
    REQUIRE(first > 0);
    CHECK(pages.engine.isBusy());
    pages.engine.cancel();
    REQUIRE(failed.size() == 1);
    CHECK(failed.first().at(1).toString() == QStringLiteral("run cancelled"));
    CHECK(pages.panel.message().contains(QStringLiteral("run cancelled")));

    // Two in a row: only the second reports.
    pages.panel.stepsBox()->setValue(1000);
    const int superseded = pages.panel.start();
    pages.panel.stepsBox()->setValue(1);
    const int second = pages.panel.start();
    REQUIRE(second > superseded);
    for (int i = 0; i < 1200 && done.isEmpty(); ++i)
        done.wait(100);
    REQUIRE(done.size() == 1);
    CHECK(done.first().at(0).toInt() == second);
    QTest::qWait(100);
    CHECK(done.size() == 1);
}

TEST_CASE("in the window the Train page's run reaches the training chart and the Gradients page, and opening "
          "another network clears them",
    "[gui][train]")
{
    auto w = makeWindow();
    RunSettings s = w->engine()->runSettings();
    s.selections = { { "cpu", "direct" } };
    s.livePreview = false; // a live run after the edit would supersede the training run
    w->engine()->setRunSettings(s);
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5_trained.json").string())));
    QTest::qWait(100);
    REQUIRE(w->showView(QStringLiteral("train")));
    w->trainPanel()->stepsBox()->setValue(2);
    QSignalSpy done(w->engine(), &Engine::trainingFinished);
    REQUIRE(w->trainPanel()->start() > 0);
    REQUIRE(done.wait(120000));
    QCoreApplication::processEvents();
    CHECK(w->trainingChart()->series().size() == 5);
    CHECK(w->gradientsPanel()->saliency()->tileCount() == 10);
    CHECK(w->gradientsPanel()->weightGradients()->hasFilters());
    // The window's selected layer picks the conv layer whose gradient is shown.
    w->networkPanel()->setCurrentLayer(3);
    QCoreApplication::processEvents();
    CHECK(w->gradientsPanel()->weightGradients()->titleText() == QStringLiteral("Weight gradient of c3"));

    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
    QCoreApplication::processEvents();
    CHECK(w->trainingChart()->series().isEmpty());
    CHECK(w->gradientsPanel()->saliency()->tileCount() == 0);
    CHECK(w->trainPanel()->summary().isEmpty());
    // lenet5.json has no labels: no class-ordered set, one class for every item.
    CHECK(w->trainPanel()->targetBox()->currentData().toInt() == int(TargetKind::ClassForAll));
}

// Not run by CI (hidden tag): the pictures for docs/screenshots. CONVSCOPE_SCREENSHOT_DIR=DIR convscope_tests_gui
// "[.screenshot]" writes DIR/gradients-lenet5.png (c1's weight gradient and the saliency of the ten digits),
// DIR/training-timing-lenet5.png and DIR/gradients-colour-cnn.png. The pictures in docs/screenshots were taken with
// OMP_NUM_THREADS=1: on a machine shared with other builds the fast path's threads waited on each other for tens of
// milliseconds, times no training step of LeNet-5 takes.
TEST_CASE("screenshot: the trained LeNet-5's gradients and saliency, the training step's phases", "[.screenshot]")
{
    const char* dir = std::getenv("CONVSCOPE_SCREENSHOT_DIR");
    if (!dir) {
        WARN("set CONVSCOPE_SCREENSHOT_DIR to write the pictures");
        return;
    }
    const QString folder = QString::fromLocal8Bit(dir);
    {
        TrainingPages pages("lenet5_trained.json", { { "cpu", "direct" }, { "cpu", "im2col_gemm" } });
        REQUIRE(pages.train(10, 1));
        pages.gradients.resize(1100, 900);
        pages.gradients.show();
        QCoreApplication::processEvents();
        CHECK(pages.gradients.grab().save(folder + QStringLiteral("/gradients-lenet5.png")));
        pages.chart.resize(1100, 560);
        pages.chart.show();
        QCoreApplication::processEvents();
        CHECK(pages.chart.grab().save(folder + QStringLiteral("/training-timing-lenet5.png")));
    }
    TrainingPages pages("colour_cnn.json");
    REQUIRE(pages.train(1));
    pages.gradients.resize(1100, 900);
    pages.gradients.show();
    QCoreApplication::processEvents();
    CHECK(pages.gradients.grab().save(folder + QStringLiteral("/gradients-colour-cnn.png")));
}
