// Nothing lost, nothing leaked: autosave while editing and restore after a crash (gui/app/autosave.h), and the run
// lifecycle a person can put the window through — cancel mid-run, start another while one runs, close the
// window mid-run. Under the asan preset these also check that nothing crashes or leaks.
#include "gui_helpers.h"

#include "compute/network_json.h"
#include "gui/app/autosave.h"
#include "gui/pages/run_panel.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {

Autosave* autosaveOf(MainWindow& w)
{
    auto* a = w.findChild<Autosave*>(QStringLiteral("autosave"));
    REQUIRE(a);
    return a;
}

// A pid that is certainly not running: a child that has already exited.
qint64 deadPid()
{
    QProcess p;
    p.start(QStringLiteral("/bin/true"), {});
    REQUIRE(p.waitForFinished(10000));
    return p.processId() > 0 ? p.processId() : 999999;
}

void waitMs(int ms)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
}

} // namespace

TEST_CASE("the window autosaves a changed network atomically and a clean close removes it", "[gui][autosave]")
{
    QString path;
    {
        auto w = makeWindow();
        Autosave* a = autosaveOf(*w);
        a->setIntervalMs(20);
        path = a->filePath();
        QFile::remove(path);
        w->project()->newNetwork();
        waitMs(80);
        CHECK_FALSE(QFile::exists(path)); // nothing changed yet: nothing written

        addLayer(*w, "conv2d");
        intField(*w, "out_channels")->setValue(5);
        QSignalSpy saved(a, &Autosave::saved);
        REQUIRE(saved.wait(2000));
        REQUIRE(QFile::exists(path));
        QFile f(path);
        REQUIRE(f.open(QIODevice::ReadOnly));
        const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
        CHECK(o.value(QStringLiteral("convscope-autosave")).toInt() == 1);
        const Network back = parseNetwork(o.value(QStringLiteral("network")).toString().toStdString(), "autosave", "");
        CHECK(back.sameDescription(w->document()->network()));
        // No temporary files are left beside it (QSaveFile renames into place).
        CHECK(QDir(Autosave::folder())
                  .entryList({ QFileInfo(path).fileName() + QLatin1Char('*') }, QDir::Files | QDir::Hidden)
                  .size()
            == 1);

        // Saving the document makes the autosave unnecessary.
        QTemporaryDir dir;
        REQUIRE(w->project()->saveTo(dir.filePath(QStringLiteral("net.json"))));
        CHECK_FALSE(QFile::exists(path));
        intField(*w, "out_channels")->setValue(7);
        REQUIRE(saved.wait(2000));
        CHECK(QFile::exists(path));
        w->close();
    }
    CHECK_FALSE(QFile::exists(path)); // the window is gone cleanly: nothing to restore
}

TEST_CASE("after a crash the window offers the autosaved network and restores it as unsaved work", "[gui][autosave]")
{
    QTemporaryDir dir;
    const QString original = dir.filePath(QStringLiteral("mine.json"));
    Network net = loadNetwork(examplesDir() / "lenet5.json");
    net.name = "restored after a crash";
    QJsonObject o;
    o[QStringLiteral("convscope-autosave")] = 1;
    o[QStringLiteral("file")] = original;
    o[QStringLiteral("saved")] = QStringLiteral("2026-01-01T00:00:00Z");
    o[QStringLiteral("network")] = QString::fromStdString(serializeNetwork(net));
    QDir().mkpath(Autosave::folder());
    const QString orphan = Autosave::folder() + QStringLiteral("/autosave-%1.json").arg(deadPid());
    {
        QFile f(orphan);
        REQUIRE(f.open(QIODevice::WriteOnly));
        f.write(QJsonDocument(o).toJson());
    }
    REQUIRE(Autosave::orphans().contains(orphan));

    auto w = makeWindow();
    Autosave* a = autosaveOf(*w);
    QString askedFile;
    a->setRestoreQuestion([&](const QString& file, const QString&) {
        askedFile = file;
        return file == original; // only ours, should another test's crash have left one too
    });
    REQUIRE(a->offerRestore());
    CHECK(askedFile == original);
    CHECK(w->document()->network().sameDescription(net));
    CHECK(w->document()->network().name == "restored after a crash");
    CHECK(w->document()->isModified());
    CHECK(w->document()->filePath() == original);
    CHECK_FALSE(QFile::exists(orphan));

    // A broken autosave file is reported, and the document stays as it is.
    const QString broken = Autosave::folder() + QStringLiteral("/autosave-%1.json").arg(deadPid());
    {
        QFile f(broken);
        REQUIRE(f.open(QIODevice::WriteOnly));
        f.write("{\"convscope-autosave\": 1, \"network\": \"{ not json\"}");
    }
    QSignalSpy problem(a, &Autosave::problem);
    CHECK_FALSE(a->restoreFrom(broken));
    CHECK(problem.size() == 1);
    CHECK(w->document()->network().name == "restored after a crash");
    QFile::remove(broken);
}

// The U-Net runs use the GEMM algorithms: a cancel lands between layers, and cpu.direct's double-precision loops
// under ASan made one layer take seconds (the test took 138 s under the asan preset).
TEST_CASE(
    "cancel mid-run, a run started while one runs, and closing mid-run neither crash nor leak", "[gui][run][lifecycle]")
{
    const QString unet = QString::fromStdString((examplesDir() / "unet_encoder_block.json").string());
    SECTION("cancel, then start again at once, several times")
    {
        auto w = makeWindow();
        w->runPanel()->setLiveEnabled(false);
        REQUIRE(w->project()->openFile(unet));
        REQUIRE(w->runPanel()->setSelections({ { "cpu", "im2col_gemm" } }));
        w->runPanel()->setWarmupRepeat(0, 1000);
        QSignalSpy failed(w->engine(), &Engine::failed);
        for (int i = 0; i < 3; ++i) {
            REQUIRE(w->triggerRun() > 0);
            waitMs(30);
            w->engine()->cancel();
        }
        CHECK(failed.size() == 3);
        w->runPanel()->setWarmupRepeat(0, 1);
        REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
        const int last = w->triggerRun();
        REQUIRE(waitForRun(*w, last, 120000));
    }
    SECTION("a second run supersedes the first; only the second reports")
    {
        auto w = makeWindow();
        w->runPanel()->setLiveEnabled(false);
        REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
        REQUIRE(w->runPanel()->setSelections({ { "cpu", "im2col_gemm" }, { "cpu", "tap_gemm" } }));
        w->runPanel()->setWarmupRepeat(0, 200);
        QSignalSpy finished(w->engine(), &Engine::finished);
        const int first = w->triggerRun();
        REQUIRE(first > 0);
        w->runPanel()->setWarmupRepeat(0, 1);
        const int second = w->triggerRun();
        REQUIRE(second > first);
        REQUIRE(waitForRun(*w, second, 120000));
        waitMs(50);
        for (const auto& args : finished)
            CHECK(args.at(0).toInt() == second);
    }
    SECTION("closing and destroying the window while a long run is in flight")
    {
        auto w = makeWindow();
        w->runPanel()->setLiveEnabled(false);
        REQUIRE(w->project()->openFile(unet));
        REQUIRE(w->runPanel()->setSelections({ { "cpu", "im2col_gemm" }, { "cpu", "tap_gemm" } }));
        w->runPanel()->setWarmupRepeat(0, 1000);
        REQUIRE(w->triggerRun() > 0);
        waitMs(50);
        CHECK(w->engine()->isBusy());
        CHECK(w->close());
        w.reset(); // joins the worker after cancelling it; the test then ends without waiting for the 1000 passes
        waitMs(10);
    }
}
