// The ConvScope window. It only assembles: the document, the engine façade, the panels as dock widgets
// (network, input, shapes, timing, run) around the feature maps, the menus, and the wiring between them.
#pragma once

#include "gui/engine.h"
#include "gui/network_document.h"

#include <QMainWindow>
#include <QTimer>

class QDockWidget;
class QTableView;

namespace convscope::gui {

class FeatureMapPanel;
class InputPanel;
class MessageBanner;
class NetworkPanel;
class ProjectController;
class RunPanel;
class ShapesModel;
class TimingChart;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(bool restoreLayout = true, QWidget* parent = nullptr);
    ~MainWindow() override;

    NetworkDocument* document() { return &m_doc; }
    Engine* engine() { return m_engine; }
    NetworkPanel* networkPanel() const { return m_network; }
    InputPanel* inputPanel() const { return m_input; }
    ShapesModel* shapesModel() const { return m_shapes; }
    QTableView* shapesView() const { return m_shapesView; }
    FeatureMapPanel* featureMaps() const { return m_maps; }
    RunPanel* runPanel() const { return m_run; }
    TimingChart* timingChart() const { return m_timing; }
    ProjectController* project() const { return m_project; }
    QString bannerText() const;
    QAction* runAction() const { return m_runAction; }

    // Runs every checked selection; returns the job id, or 0 when the network cannot run (the reason is
    // shown in the window).
    int triggerRun();
    void setLiveDebounceMs(int ms) { m_live.setInterval(ms); }
    // Opens a network or uses a file as the input, by its kind (drag and drop, command line).
    bool openAny(const QString& path);
    // Dock sizes in proportion to the window (used when no saved layout exists).
    void resetLayout();

protected:
    void closeEvent(QCloseEvent* e) override;
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;

private:
    QDockWidget* addDock(QWidget* w, const QString& title, const QString& objectName, Qt::DockWidgetArea area);
    void buildMenus();
    void onNetworkChanged();
    void startLive();
    void onFinished(int job, RunOutcomePtr outcome);
    void showProblem(const QString& message);
    void updateTitle();
    void updateLayerProblem();

    NetworkDocument m_doc;
    Engine* m_engine;
    NetworkPanel* m_network;
    InputPanel* m_input;
    ShapesModel* m_shapes;
    QTableView* m_shapesView;
    FeatureMapPanel* m_maps;
    RunPanel* m_run;
    TimingChart* m_timing;
    MessageBanner* m_banner;
    ProjectController* m_project;
    QAction* m_runAction = nullptr;
    QTimer m_live;
    QDockWidget* m_networkDock = nullptr;
    QDockWidget* m_inputDock = nullptr;
    QDockWidget* m_shapesDock = nullptr;
    QDockWidget* m_timingDock = nullptr;
    QDockWidget* m_runDock = nullptr;
};

} // namespace convscope::gui
