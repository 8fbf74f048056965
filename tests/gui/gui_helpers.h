// Helpers for driving the window in tests.
#pragma once

#include "gui/app/main_window.h"
#include "gui/app/project_controller.h"
#include "gui/document/engine.h"
#include "gui/models/shapes_model.h"
#include "gui/pages/network_panel.h"
#include "gui/views/layer_editor.h"
#include "gui/views/param_widgets.h"

#include <catch2/catch.hpp>

#include <QAction>
#include <QComboBox>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>

#include <memory>

namespace convscope::test {

// A window on an empty network, live preview on, nothing asked on discard.
inline std::unique_ptr<gui::MainWindow> makeWindow()
{
    auto w = std::make_unique<gui::MainWindow>(false);
    w->project()->setDiscardQuestion([] { return gui::ProjectController::Answer::Discard; });
    w->resize(1400, 900);
    w->show();
    return w;
}

inline QString shapeText(gui::MainWindow& w, int row)
{
    return w.shapesModel()->index(row, gui::ShapesModel::OutputShape).data().toString();
}

inline gui::PairEditor* pairField(gui::MainWindow& w, const char* key)
{
    return qobject_cast<gui::PairEditor*>(w.networkPanel()->editor()->field(QString::fromLatin1(key)));
}

inline QSpinBox* intField(gui::MainWindow& w, const char* key)
{
    return qobject_cast<QSpinBox*>(w.networkPanel()->editor()->field(QString::fromLatin1(key)));
}

inline gui::PaddingEditor* paddingField(gui::MainWindow& w)
{
    return qobject_cast<gui::PaddingEditor*>(w.networkPanel()->editor()->field(QStringLiteral("padding")));
}

inline void addLayer(gui::MainWindow& w, const char* type)
{
    QAction* a = w.networkPanel()->addLayerAction(QString::fromLatin1(type));
    REQUIRE(a);
    a->trigger();
}

// Waits for the engine to finish job `job` (any job when 0); returns the outcome or null.
inline gui::RunOutcomePtr waitForRun(gui::MainWindow& w, int job = 0, int timeoutMs = 60000)
{
    QSignalSpy finished(w.engine(), &gui::Engine::finished);
    QSignalSpy failed(w.engine(), &gui::Engine::failed);
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < timeoutMs) {
        for (const auto& args : finished)
            if (job == 0 || args.at(0).toInt() == job)
                return args.at(1).value<gui::RunOutcomePtr>();
        for (const auto& args : failed)
            if (job == 0 || args.at(0).toInt() == job) {
                FAIL("run failed: " << args.at(1).toString().toStdString());
                return nullptr;
            }
        finished.wait(50);
    }
    return nullptr;
}

// With CONVSCOPE_TEST_SHOTS set, saves the window as NAME.png there (to look at states tests reach).
inline void maybeShoot(gui::MainWindow& w, const char* name)
{
    const QByteArray dir = qgetenv("CONVSCOPE_TEST_SHOTS");
    if (!dir.isEmpty()) {
        QCoreApplication::processEvents(); // pending layouts, as a person would see them
        w.grab().save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name) + QStringLiteral(".png"));
        w.networkPanel()->editor()->grab().save(
            QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name) + QStringLiteral("-editor.png"));
    }
}

// LeNet-5 built through the window's own actions and editor widgets.
inline void buildLeNet(gui::MainWindow& w)
{
    w.project()->newNetwork();
    addLayer(w, "conv2d");
    intField(w, "out_channels")->setValue(6);
    pairField(w, "kernel_size")->heightBox()->setValue(5);
    paddingField(w)->side(0)->setValue(2);
    addLayer(w, "relu");
    addLayer(w, "maxpool2d");
    addLayer(w, "conv2d");
    intField(w, "out_channels")->setValue(16);
    pairField(w, "kernel_size")->heightBox()->setValue(5);
    addLayer(w, "relu");
    addLayer(w, "maxpool2d");
    addLayer(w, "flatten");
    addLayer(w, "linear");
    intField(w, "out_features")->setValue(120);
    addLayer(w, "relu");
    addLayer(w, "linear");
    intField(w, "out_features")->setValue(84);
    addLayer(w, "relu");
    addLayer(w, "linear");
    intField(w, "out_features")->setValue(10);
    addLayer(w, "softmax");
}

} // namespace convscope::test
