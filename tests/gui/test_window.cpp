#include "gui_helpers.h"

#include "compute/network_json.h"
#include "compute/npy.h"
#include "gui/pages/feature_map_panel.h"
#include "gui/pages/input_panel.h"
#include "gui/pages/run_panel.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QPushButton>
#include <QTimer>

#include <fstream>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

TEST_CASE("LeNet-5 built through the window's actions has the textbook shapes", "[gui][window]")
{
    auto w = makeWindow();
    buildLeNet(*w);
    const char* expected[] = { "1×6×28×28 (N, C, H, W)", "1×6×28×28 (N, C, H, W)", "1×6×14×14 (N, C, H, W)",
        "1×16×10×10 (N, C, H, W)", "1×16×10×10 (N, C, H, W)", "1×16×5×5 (N, C, H, W)", "1×400 (N, C·H·W)",
        "1×120 (N, features)", "1×120 (N, features)", "1×84 (N, features)", "1×84 (N, features)", "1×10 (N, features)",
        "1×10 (N, features)" };
    REQUIRE(w->shapesModel()->rowCount() == 14);
    for (int r = 0; r < 13; ++r) {
        INFO("row " << r);
        CHECK(shapeText(*w, r) == QString::fromUtf8(expected[r]));
    }
    // The example shipped with ConvScope describes the same layers.
    const Network lenet = loadNetwork(examplesDir() / "lenet5.json");
    REQUIRE(lenet.layers.size() == w->document()->network().layers.size());
    for (size_t i = 0; i < lenet.layers.size(); ++i)
        CHECK(layerTypeName(lenet.layers[i].spec) == layerTypeName(w->document()->network().layers[i].spec));
    CHECK(w->shapesModel()->index(13, ShapesModel::Params).data().toString() == QStringLiteral("61.7 k"));
}

TEST_CASE("changing a stride changes the shapes and the formula at once", "[gui][window]")
{
    auto w = makeWindow();
    buildLeNet(*w);
    w->networkPanel()->setCurrentLayer(0);
    CHECK(shapeText(*w, 0) == QStringLiteral("1×6×28×28 (N, C, H, W)"));
    pairField(*w, "stride")->heightBox()->setValue(2); // linked: both directions
    CHECK(shapeText(*w, 0) == QStringLiteral("1×6×14×14 (N, C, H, W)"));
    CHECK(shapeText(*w, 3) == QStringLiteral("1×16×3×3 (N, C, H, W)"));
    CHECK(w->networkPanel()->editor()->formulaText().contains(QStringLiteral("= 14")));
    CHECK(std::get<Conv2d>(w->document()->network().layers[0].spec).stride == Pair { 2, 2 });
}

TEST_CASE("an impossible value is marked with the engine's message and refuses to run", "[gui][window]")
{
    auto w = makeWindow();
    buildLeNet(*w);
    w->networkPanel()->setCurrentLayer(3); // c3 sees 14x14
    pairField(*w, "kernel_size")->heightBox()->setValue(20);
    const QString error = w->networkPanel()->editor()->errorText();
    CHECK_FALSE(error.isEmpty());
    CHECK(pairField(*w, "kernel_size")->property("invalid").toBool());
    CHECK(shapeText(*w, 3).startsWith(QStringLiteral("⚠")));
    // Editing goes on; running does not.
    CHECK(pairField(*w, "kernel_size")->isEnabled());
    CHECK_FALSE(w->runPanel()->runButton()->isEnabled());
    QSignalSpy started(w->engine(), &Engine::started);
    CHECK(w->triggerRun() == 0);
    CHECK(started.isEmpty());
    CHECK(w->runPanel()->message().startsWith(QStringLiteral("Cannot run")));
    CHECK(w->bannerText().contains(QStringLiteral("layer 3")));
    maybeShoot(*w, "invalid-kernel");
    // Fixing it unblocks the run.
    pairField(*w, "kernel_size")->heightBox()->setValue(5);
    CHECK(w->networkPanel()->editor()->errorText().isEmpty());
    CHECK(w->runPanel()->runButton()->isEnabled());
}

TEST_CASE("a CPU run reports through signals and feature maps show one tile per channel", "[gui][window][run]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" }, { "cpu", "im2col_gemm" } }));
    w->runPanel()->setWarmupRepeat(0, 2);
    w->networkPanel()->setCurrentLayer(0);
    const int job = w->triggerRun();
    REQUIRE(job > 0);
    RunOutcomePtr outcome = waitForRun(*w, job);
    REQUIRE(outcome);
    REQUIRE(outcome->result.selections.size() == 2);
    CHECK(outcome->result.selections[0].ok);
    CHECK(outcome->result.selections[1].ok);
    CHECK(outcome->result.selections[0].layers.size() == 13);

    FeatureMapPanel* maps = w->featureMaps();
    CHECK(maps->grid()->tileCount() == 6);
    w->networkPanel()->setCurrentLayer(3);
    CHECK(maps->grid()->tileCount() == 16);
    CHECK(w->shapesModel()->index(3, ShapesModel::Time).data().toString().endsWith(QStringLiteral("s")));

    // Whose output: both selections are listed; the difference view shows a tiny max error.
    CHECK(maps->selectionBox()->count() == 2);
    maps->selectionBox()->setCurrentIndex(1);
    maps->differenceBox()->setChecked(true);
    CHECK(maps->errorText().startsWith(QStringLiteral("max |Δ|")));
    maps->differenceBox()->setChecked(false);

    // Hover reads out the value; a click enlarges the channel and lights the receptive field. (The filters pane beside
    // the maps appeared with this conv layer: let the layout settle before aiming.)
    QTest::qWait(50); // posted layouts too (processEvents alone left some for the move to apply)
    const QRect tile = maps->grid()->tileRect(2);
    QTest::mouseMove(maps->grid(), tile.center());
    CHECK(maps->statusText().startsWith(QStringLiteral("channel 2")));
    // The hover read-out may reflow the panel: aim at where the tile is now.
    QTest::mouseClick(maps->grid(), Qt::LeftButton, {}, maps->grid()->tileRect(2).topLeft() + QPoint(1, 1));
    CHECK(maps->isEnlarged());
    CHECK(maps->enlarged()->tileCount() == 1);
    CHECK(maps->statusText().contains(QStringLiteral("depends on")));
    maybeShoot(*w, "enlarged-receptive-field");

    // Colour maps and ranges re-render without a run.
    maps->colorMapBox()->setCurrentIndex(2);
    maps->rangeBox()->setCurrentIndex(1);
    CHECK(maps->grid()->tileCount() == 16);
}

TEST_CASE(
    "the check against cpu.direct can be switched off, and the run then has no error columns", "[gui][window][run]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "im2col_gemm" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    const auto errorsValid = [](const RunOutcome& o) {
        int valid = 0;
        for (const LayerResult& l : o.result.selections.at(0).layers)
            valid += l.error.valid;
        return valid;
    };
    CHECK(w->runPanel()->referenceBox()->isChecked()); // on by default
    RunOutcomePtr checked = waitForRun(*w, w->triggerRun());
    REQUIRE(checked);
    CHECK(checked->result.meta.reference == "cpu.direct");
    CHECK(errorsValid(*checked) == 13);

    w->runPanel()->referenceBox()->setChecked(false);
    CHECK_FALSE(w->engine()->runSettings().checkReference);
    RunOutcomePtr unchecked = waitForRun(*w, w->triggerRun());
    REQUIRE(unchecked);
    REQUIRE(unchecked->result.selections.at(0).ok);
    CHECK(unchecked->result.meta.reference == "none");
    CHECK(errorsValid(*unchecked) == 0);
}

TEST_CASE("an edit reruns a small network live and supersedes older jobs", "[gui][window][run]")
{
    auto w = makeWindow();
    w->setLiveDebounceMs(1);
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
    RunOutcomePtr first = waitForRun(*w);
    REQUIRE(first);
    CHECK(first->live);
    w->networkPanel()->setCurrentLayer(0);
    CHECK(w->featureMaps()->grid()->tileCount() == 6);
    intField(*w, "out_channels")->setValue(4);
    RunOutcomePtr second = waitForRun(*w);
    REQUIRE(second);
    CHECK(w->featureMaps()->grid()->tileCount() == 4);
    pairField(*w, "stride")->heightBox()->setValue(2);
    REQUIRE(waitForRun(*w));
    CHECK(w->featureMaps()->grid()->planes().height == 14);
    maybeShoot(*w, "stride-2");

    // Two runs back to back: only the last one reports.
    QSignalSpy finished(w->engine(), &Engine::finished);
    const int a = w->triggerRun();
    const int b = w->triggerRun();
    REQUIRE(b > a);
    REQUIRE(waitForRun(*w, b));
    for (const auto& args : finished)
        CHECK(args.at(0).toInt() != a);
}

TEST_CASE("save and reopen give the same network", "[gui][project]")
{
    TempDir dir;
    auto w = makeWindow();
    buildLeNet(*w);
    w->networkPanel()->setCurrentLayer(0);
    pairField(*w, "dilation")->heightBox()->setValue(2);
    const QString path = QString::fromStdString((dir.path / "mine.json").string());
    REQUIRE(w->project()->saveTo(path));
    CHECK_FALSE(w->isWindowModified());
    CHECK(w->project()->recentFiles().contains(path));

    auto other = makeWindow();
    REQUIRE(other->project()->openFile(path));
    CHECK(other->document()->network().sameDescription(w->document()->network()));
    CHECK(other->document()->filePath() == path);
}

TEST_CASE("bad files leave the network untouched and say what is wrong", "[gui][project]")
{
    TempDir dir;
    auto w = makeWindow();
    buildLeNet(*w);
    const Network before = w->document()->network();

    const auto broken = dir.path / "broken.json";
    std::ofstream(broken) << R"({"format": "convscope-network", "version": 1, "layers": [ {"type": "conv2d", )";
    CHECK_FALSE(w->openAny(QString::fromStdString(broken.string())));
    CHECK(w->bannerText().contains(QStringLiteral("broken.json")));
    CHECK(w->document()->network().sameDescription(before));

    const auto image = dir.path / "picture.png";
    std::ofstream(image) << "this is not a png";
    CHECK_FALSE(w->openAny(QString::fromStdString(image.string())));
    CHECK(w->bannerText().contains(QStringLiteral("picture.png")));
    CHECK(w->document()->network().sameDescription(before));

    const auto npy = dir.path / "wrong.npy";
    const float data[5] = { 1, 2, 3, 4, 5 };
    writeNpy(npy, { 5 }, data);
    CHECK_FALSE(w->openAny(QString::fromStdString(npy.string())));
    CHECK(w->bannerText().contains(QStringLiteral("wrong.npy")));
    CHECK(w->document()->network().sameDescription(before));

    // A good .npy is taken, shape and all.
    const auto good = dir.path / "good.npy";
    std::vector<float> pixels(2 * 32 * 32, 0.5f);
    writeNpy(good, { 2, 32, 32 }, pixels.data());
    CHECK(w->openAny(QString::fromStdString(good.string())));
    CHECK(w->document()->network().input.channels == 2);
    CHECK(w->document()->network().input.height == 32);
}

TEST_CASE("screenshot mode renders the window after a run and writes a PNG", "[gui][screenshot]")
{
    TempDir dir;
    const QString out = QString::fromStdString((dir.path / "shot.png").string());
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral(CONVSCOPE_GUI_PATH),
        { QStringLiteral("--open"), QString::fromStdString((examplesDir() / "lenet5.json").string()),
            QStringLiteral("--run"), QStringLiteral("cpu.direct"), QStringLiteral("--select-layer"),
            QStringLiteral("0"), QStringLiteral("--screenshot"), out, QStringLiteral("--size"),
            QStringLiteral("1366x768") });
    REQUIRE(p.waitForFinished(120000));
    INFO(p.readAll().toStdString());
    CHECK(p.exitCode() == 0);
    QImage image(out);
    CHECK(image.width() == 1366);
    CHECK(image.height() == 768);

    // A selection that does not exist fails with a message and a non-zero status.
    p.start(QStringLiteral(CONVSCOPE_GUI_PATH),
        { QStringLiteral("--open"), QString::fromStdString((examplesDir() / "lenet5.json").string()),
            QStringLiteral("--run"), QStringLiteral("cpu.nonsense"), QStringLiteral("--screenshot"), out });
    REQUIRE(p.waitForFinished(120000));
    CHECK(p.exitCode() != 0);
    CHECK(p.readAll().contains("cpu.nonsense"));

    // A run past --timeout is cancelled with a message naming the option, and writes no picture; a timeout that is
    // not a number of seconds is refused.
    const QString late = QString::fromStdString((dir.path / "late.png").string());
    p.start(QStringLiteral(CONVSCOPE_GUI_PATH),
        { QStringLiteral("--open"), QString::fromStdString((examplesDir() / "resnet18.json").string()),
            QStringLiteral("--run"), QStringLiteral("cpu.direct"), QStringLiteral("--warmup"), QStringLiteral("0"),
            QStringLiteral("--repeat"), QStringLiteral("200"), QStringLiteral("--timeout"), QStringLiteral("1"),
            QStringLiteral("--screenshot"), late });
    REQUIRE(p.waitForFinished(120000));
    const QByteArray said = p.readAll();
    INFO(said.toStdString());
    CHECK(p.exitCode() != 0);
    CHECK(said.contains("the run did not finish within 1 s: cancelled, no screenshot written (--timeout SECONDS"));
    CHECK_FALSE(QFileInfo::exists(late));
    for (const char* bad : { "0", "soon" }) {
        p.start(QStringLiteral(CONVSCOPE_GUI_PATH),
            { QStringLiteral("--open"), QString::fromStdString((examplesDir() / "lenet5.json").string()),
                QStringLiteral("--timeout"), QString::fromLatin1(bad), QStringLiteral("--screenshot"), late });
        REQUIRE(p.waitForFinished(120000));
        CHECK(p.exitCode() == 2);
        CHECK(p.readAll().contains("--timeout"));
    }
}

TEST_CASE("screenshot mode expands or collapses the graph and toggles presentation mode, saying the layout held",
    "[gui][screenshot][presentation]")
{
    TempDir dir;
    const QString out = QString::fromStdString((dir.path / "graph.png").string());
    const QString resnet = QString::fromStdString((examplesDir() / "resnet18.json").string());
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral(CONVSCOPE_GUI_PATH),
        { resnet, QStringLiteral("--view"), QStringLiteral("graph"), QStringLiteral("--graph"),
            QStringLiteral("expanded"), QStringLiteral("--toggle-presentation"), QStringLiteral("2"),
            QStringLiteral("--screenshot"), out, QStringLiteral("--size"), QStringLiteral("1366x768") });
    REQUIRE(p.waitForFinished(120000));
    const QByteArray said = p.readAll();
    INFO(said.toStdString());
    CHECK(p.exitCode() == 0);
    CHECK(said.contains("presentation mode toggled 2 times: the layout is as it was, the window 1366x768"));
    CHECK(QImage(out).width() == 1366);

    p.start(QStringLiteral(CONVSCOPE_GUI_PATH),
        { resnet, QStringLiteral("--graph"), QStringLiteral("sideways"), QStringLiteral("--screenshot"), out });
    REQUIRE(p.waitForFinished(120000));
    CHECK(p.exitCode() != 0);
    CHECK(p.readAll().contains("--graph sideways: expected expanded or collapsed"));
}

TEST_CASE("a long run keeps the window responsive and can be cancelled", "[gui][run]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "unet_encoder_block.json").string())));
    REQUIRE(w->document()->shapes().ok());
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" } }));
    w->runPanel()->setWarmupRepeat(0, 1000);
    QSignalSpy failed(w->engine(), &Engine::failed);
    QSignalSpy finished(w->engine(), &Engine::finished);
    const int job = w->triggerRun();
    REQUIRE(job > 0);
    CHECK(w->runPanel()->cancelButton()->isEnabled());

    // The GUI thread keeps turning while the worker computes: timers fire on time.
    QElapsedTimer t;
    t.start();
    int ticks = 0;
    QTimer timer;
    QObject::connect(&timer, &QTimer::timeout, [&] { ++ticks; });
    timer.start(10);
    while (t.elapsed() < 300)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    CHECK(ticks >= 10);
    CHECK(finished.isEmpty());

    w->runPanel()->cancelButton()->click();
    REQUIRE(failed.size() == 1);
    CHECK(failed.at(0).at(0).toInt() == job);
    CHECK(failed.at(0).at(1).toString() == QStringLiteral("run cancelled"));
    CHECK_FALSE(w->runPanel()->cancelButton()->isEnabled());

    // The worker stops and takes the next job.
    w->runPanel()->setWarmupRepeat(0, 1);
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
    const int next = w->triggerRun();
    REQUIRE(waitForRun(*w, next, 60000));
    CHECK(finished.size() == 1);
}
