// The gui suite's main: Catch2 with a QApplication on the offscreen platform, and Qt's test mode so the
// user's settings (recent files, layout) are never touched.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <QApplication>
#include <QStandardPaths>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>

#if CONVSCOPE_LEAK_CHECK_IN_MAIN
#include <sanitizer/lsan_interface.h>
#endif

namespace {

// The leak check at exit raced with Qt's thread teardown in this suite: about one run in three of the asan preset's
// GUI tests (ctest -j2) reported a "leak" of 152 bytes allocated inside QtCore by QThreadPrivate's constructor (a
// QThread's QThreadData), in whichever test happened to end as a thread was exiting (session 6: a sweep test in CI,
// a CPU-run test here). A QThreadData is freed by its OS thread's thread-local destructors, which run after
// QThread::wait() returns and, for Qt's pool threads, during static destruction after main(). Once ASan has retired
// an exiting thread, its storage no longer counts as reachable. So this main waits for the engines' worker
// threads ("convscope-engine", 15 characters as the kernel keeps names) to be gone, then, with the QApplication
// destroyed but before static destruction, runs LeakSanitizer's check itself: every window and engine of the tests
// is gone by then, Qt's global pool threads are idle and alive, and the end-of-process check, which would run in
// the middle of Qt's teardown, is skipped.
void waitForEngineThreadsToExit()
{
    for (int attempt = 0; attempt < 200; ++attempt) {
        bool alive = false;
        std::error_code ec;
        for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
            std::ifstream comm(task.path() / "comm");
            std::string name;
            std::getline(comm, name);
            alive = alive || name.rfind("convscope-engin", 0) == 0;
        }
        if (!alive)
            return;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

} // namespace

int main(int argc, char** argv)
{
    setenv("QT_QPA_PLATFORM", "offscreen", 0);
    QStandardPaths::setTestModeEnabled(true);
    int status = 0;
    {
        QApplication app(argc, argv);
        QApplication::setOrganizationName(QStringLiteral("ConvScopeTests"));
        QApplication::setApplicationName(QStringLiteral("convscope-gui-tests"));
        status = Catch::Session().run(argc, argv);
    } // the application gone, and with it what it holds (fontconfig's data, which LeakSanitizer cannot trace)
    waitForEngineThreadsToExit();
#if CONVSCOPE_LEAK_CHECK_IN_MAIN
    __lsan_do_leak_check(); // exits with LeakSanitizer's status when it finds a leak
#endif
    return status;
}
