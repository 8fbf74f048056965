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
class ChartView;
class DevicePanel;
class ExplorerPanel;
class ExportController;
class ProjectController;
class RooflineChart;
class RunPanel;
class ShapesModel;
class SweepPanel;
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
    RooflineChart* roofline() const { return m_roofline; }
    ExplorerPanel* explorer() const { return m_explorer; }
    SweepPanel* sweepPanel() const { return m_sweep; }
    DevicePanel* devicePanel() const { return m_device; }
    ExportController* exporter() const { return m_export; }
    // The analysis pages share one dock area: "timing", "roofline", "explorer", "sweep", "device".
    bool showView(const QString& name);
    ChartView* currentChart() const;
    // Opens a folder written by `convscope-cli run --save-session` read-only; false (reason shown) if it
    // cannot. Opening or creating a network afterwards leaves the session.
    bool openSession(const QString& dir);
    bool isSessionOpen() const { return !m_sessionOrigin.isEmpty(); }
    // Starts the sweep the Sweep page describes; returns the job id or 0.
    int triggerSweep();
    void setPresentationMode(bool on);
    bool presentationMode() const;
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
    void showOutcome(RunOutcomePtr outcome);
    void leaveSession();

    NetworkDocument m_doc;
    Engine* m_engine;
    NetworkPanel* m_network;
    InputPanel* m_input;
    ShapesModel* m_shapes;
    QTableView* m_shapesView;
    FeatureMapPanel* m_maps;
    RunPanel* m_run;
    TimingChart* m_timing;
    RooflineChart* m_roofline;
    ExplorerPanel* m_explorer;
    SweepPanel* m_sweep;
    DevicePanel* m_device;
    MessageBanner* m_banner;
    ExportController* m_export;
    QAction* m_presentation = nullptr;
    QString m_sessionOrigin;
    int m_sweepJob = 0;
    QFont m_normalFont;
    ProjectController* m_project;
    QAction* m_runAction = nullptr;
    QTimer m_live;
    QDockWidget* m_networkDock = nullptr;
    QDockWidget* m_inputDock = nullptr;
    QDockWidget* m_shapesDock = nullptr;
    QDockWidget* m_timingDock = nullptr;
    QDockWidget* m_runDock = nullptr;
    QDockWidget* m_rooflineDock = nullptr;
    QDockWidget* m_explorerDock = nullptr;
    QDockWidget* m_sweepDock = nullptr;
    QDockWidget* m_deviceDock = nullptr;
};

} // namespace convscope::gui
