// The gui suite's main: Catch2 with a QApplication on the offscreen platform, and Qt's test mode so the
// user's settings (recent files, layout) are never touched.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <QApplication>
#include <QStandardPaths>

#include <cstdlib>

int main(int argc, char** argv)
{
    setenv("QT_QPA_PLATFORM", "offscreen", 0);
    QStandardPaths::setTestModeEnabled(true);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("ConvScopeTests"));
    QApplication::setApplicationName(QStringLiteral("convscope-gui-tests"));
    return Catch::Session().run(argc, argv);
}
