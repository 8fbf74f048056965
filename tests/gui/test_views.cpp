// Issue 31: opening or creating a network clears every view of the previous one; a run's progress shows wherever the
// user is; presentation mode toggled twice gives the layout back.
#include "gui_helpers.h"

#include "gui/charts/roofline_chart.h"
#include "gui/charts/sweep_chart.h"
#include "gui/charts/timing_chart.h"
#include "gui/pages/device_panel.h"
#include "gui/pages/explorer_panel.h"
#include "gui/pages/feature_map_panel.h"
#include "gui/pages/interpolation_panel.h"
#include "gui/pages/run_panel.h"
#include "gui/pages/sweep_panel.h"
#include "gui/views/feature_map_grid.h"
#include "gui/views/run_status.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {

QString examplePath(const char* name) { return QString::fromStdString((examplesDir() / name).string()); }

// Every page as a person would see it, after a network was replaced and before anything ran on it.
void checkNothingOfTheLastNetwork(MainWindow& w, const QString& deviceBefore, const QString& explorerBefore)
{
    INFO("network now: " << w.document()->network().name);
    CHECK_FALSE(w.featureMaps()->outcome());
    CHECK(w.featureMaps()->grid()->tileCount() == 0);
    CHECK(w.featureMaps()->statusText().isEmpty());
    CHECK(w.featureMaps()->selectionBox()->count() == 0);
    CHECK_FALSE(w.timingChart()->run());
    CHECK(w.timingChart()->barSeriesCount() == 0);
    CHECK(w.roofline()->pointCount() == 0);
    CHECK(w.explorer()->status() == explorerBefore);
    CHECK(w.devicePanel()->text() == deviceBefore);
    CHECK_FALSE(w.sweepPanel()->chart()->result());
    CHECK_FALSE(w.interpolationPanel()->result());
    for (int row = 0; row < w.shapesModel()->rowCount(); ++row)
        CHECK(w.shapesModel()->index(row, ShapesModel::Time).data().toString().isEmpty());
    CHECK(w.bannerText().isEmpty());
}

RunOutcomePtr runDirect(MainWindow& w)
{
    REQUIRE(w.runPanel()->setSelections({ { "cpu", "direct" } }));
    w.runPanel()->setWarmupRepeat(0, 1);
    const int job = w.triggerRun();
    REQUIRE(job > 0);
    return waitForRun(w, job);
}

} // namespace

TEST_CASE("opening or creating a network clears every view of the previous one", "[gui][window][clear]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    const QString deviceBefore = w->devicePanel()->text();
    const QString explorerBefore = w->explorer()->status();

    REQUIRE(w->project()->openFile(examplePath("lenet5_trained.json")));
    w->networkPanel()->setCurrentLayer(0);
    RunOutcomePtr first = runDirect(*w);
    REQUIRE(first);
    QCoreApplication::processEvents();
    w->timingChart()->redrawNow();
    REQUIRE(w->featureMaps()->outcome() == first);
    REQUIRE(w->featureMaps()->grid()->tileCount() == 6);
    REQUIRE(w->timingChart()->run() == first);
    REQUIRE(w->timingChart()->barSeriesCount() > 0);
    REQUIRE(w->devicePanel()->text() != deviceBefore);
    REQUIRE_FALSE(w->shapesModel()->index(0, ShapesModel::Time).data().toString().isEmpty());

    // A second model: nothing of LeNet's results stays on any page.
    REQUIRE(w->project()->openFile(examplePath("colour_cnn.json")));
    w->timingChart()->redrawNow();
    checkNothingOfTheLastNetwork(*w, deviceBefore, explorerBefore);

    // Its own run shows its own results, and File ▸ New clears them in turn.
    w->networkPanel()->setCurrentLayer(0);
    RunOutcomePtr second = runDirect(*w);
    REQUIRE(second);
    CHECK(second->network.name == w->document()->network().name);
    CHECK(w->featureMaps()->outcome() == second);
    REQUIRE(w->project()->newNetwork());
    w->timingChart()->redrawNow();
    checkNothingOfTheLastNetwork(*w, deviceBefore, explorerBefore);
}

TEST_CASE("a run shows its selection, pass and time left in the status bar with Cancel, whatever page is open",
    "[gui][run][progress]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(examplePath("lenet5.json")));
    w->dock(QStringLiteral("run"))->hide(); // the Run panel's own bar is out of sight
    w->showView(QStringLiteral("graph"));
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" } }));
    w->runPanel()->setWarmupRepeat(0, 20000);
    RunStatus* status = w->runStatus();
    CHECK_FALSE(status->isActive());
    QStringList seen;
    bool cancelShown = false;
    QObject::connect(w->engine(), &Engine::progress, status, [&] {
        seen << status->text();
        cancelShown = cancelShown || (status->isActive() && status->cancelButton()->isVisible());
    });
    QSignalSpy failed(w->engine(), &Engine::failed);
    REQUIRE(w->triggerRun() > 0);
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 20000 && (seen.size() < 3 || !seen.last().contains(QStringLiteral("left"))))
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    REQUIRE_FALSE(seen.isEmpty());
    INFO(seen.last().toStdString());
    CHECK(seen.last().contains(QStringLiteral("cpu.direct pass")));
    CHECK(seen.last().contains(QStringLiteral("left")));
    CHECK(cancelShown);
    status->cancelButton()->click();
    REQUIRE(failed.size() == 1);
    CHECK(failed.at(0).at(1).toString() == QStringLiteral("run cancelled"));
    CHECK_FALSE(status->isActive());
}

TEST_CASE("a selection that drops out is named in a banner with its reason", "[gui][run][progress]")
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("strided.json"));
    QFile f(path);
    REQUIRE(f.open(QIODevice::WriteOnly));
    f.write(R"({ "format": "convscope-network", "version": 1, "name": "strided",
        "input": { "batch": 1, "channels": 1, "height": 16, "width": 16, "source": "random:1" },
        "layers": [ { "type": "conv2d", "name": "down", "out_channels": 2, "kernel_size": [3, 3], "stride": [2, 2] } ] })");
    f.close();
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(path));
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" }, { "cpu", "fft" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    // Named as soon as it drops out, before the run ends.
    QString bannerWhileRunning;
    QObject::connect(w->engine(), &Engine::runProgress, w.get(), [&](int, const RunProgress& p) {
        if (!p.dropped.empty() && bannerWhileRunning.isEmpty())
            bannerWhileRunning = w->bannerText();
    });
    RunOutcomePtr o = waitForRun(*w, w->triggerRun());
    REQUIRE(o);
    CHECK(bannerWhileRunning.startsWith(QStringLiteral("cpu.fft dropped out: ")));
    REQUIRE(o->result.selections.size() == 2);
    REQUIRE_FALSE(o->result.selections[1].ok);
    INFO(w->bannerText().toStdString());
    CHECK(w->bannerText().contains(QStringLiteral("cpu.fft dropped out: ")));
    CHECK(w->bannerText().contains(QString::fromStdString(o->result.selections[1].failure)));
}

TEST_CASE(
    "presentation mode toggled twice restores the exact layout, and is never what is saved", "[gui][presentation]")
{
    auto w = makeWindow();
    QSignalSpy finished(w->engine(), &Engine::finished);
    REQUIRE(w->project()->openFile(examplePath("lenet5_trained.json")));
    REQUIRE(finished.wait(30000)); // the live preview: its maps and filters set the window's size first
    QTest::qWait(50);
    const QByteArray state = w->saveState();
    const QSize size = w->size();
    const double font = QApplication::font().pointSizeF();
    std::map<QString, QRect> docks;
    for (const char* key : { "network", "shapes", "timing", "run" })
        docks[QString::fromLatin1(key)] = w->dock(QString::fromLatin1(key))->geometry();
    auto* caption = w->timingChart()->findChild<QLabel*>();
    REQUIRE(caption);
    const double captionSize = caption->font().pointSizeF();

    for (int round = 0; round < 2; ++round) {
        QTest::keyClick(w.get(), Qt::Key_F11);
        CHECK(w->presentationMode());
        CHECK(QApplication::font().pointSizeF() > font);
        QCoreApplication::processEvents();
        QTest::keyClick(w.get(), Qt::Key_F11);
        CHECK_FALSE(w->presentationMode());
        QCoreApplication::processEvents();
        CHECK(QApplication::font().pointSizeF() == font);
        CHECK(caption->font().pointSizeF() == captionSize);
        INFO("window " << w->width() << "x" << w->height() << ", was " << size.width() << "x" << size.height());
        CHECK(w->size() == size);
        for (const auto& [key, rect] : docks) {
            const QRect now = w->dock(key)->geometry();
            INFO(key.toStdString() << ": " << now.width() << "x" << now.height() << " at " << now.x() << "," << now.y()
                                   << ", was " << rect.width() << "x" << rect.height() << " at " << rect.x() << ","
                                   << rect.y());
            CHECK(w->dock(key)->geometry() == rect);
        }
        CHECK((w->saveState() == state));
    }

    // Closed in presentation mode, the window keeps the user's layout for the next start.
    w->setPresentationMode(true);
    QCoreApplication::processEvents();
    QByteArray geometry;
    CHECK((w->layoutToSave(&geometry) == state));
    w->close();
    QSettings settings;
    CHECK((settings.value(QStringLiteral("window/state")).toByteArray() == state));
    w->setPresentationMode(false);
}
