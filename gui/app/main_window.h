// The ConvScope window. It only assembles: the document, the engine façade, the feature maps in the middle, the
// docks around them from one table of pages (network, graph, input, run, shapes, timing, roofline, explorer,
// sweep, device, interpolation, train, training timing, gradients: main_window.cpp), the menus
// (main_window_layout.cpp), and the wiring between panels that no panel owns.
#pragma once

#include "gui/document/engine.h"
#include "gui/document/live_budget.h"
#include "gui/document/network_document.h"

#include <QMainWindow>
#include <QTimer>

#include <functional>
#include <vector>

class QDockWidget;
class QTableView;

namespace convscope::gui {

class FeatureMapPanel;
class GraphView;
class Page;
class InputPanel;
class GradientsPanel;
class InterpolationPanel;
class TrainPanel;
class TrainingChart;
class MessageBanner;
class NetworkPanel;
class ChartView;
class DevicePanel;
class ExplorerPanel;
class ExportController;
class ProjectController;
class RooflineChart;
class RunPanel;
class RunStatus;
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
    GraphView* graphView() const { return m_graph; }
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
    InterpolationPanel* interpolationPanel() const { return m_interpolation; }
    TrainPanel* trainPanel() const { return m_train; }
    TrainingChart* trainingChart() const { return m_trainingChart; }
    GradientsPanel* gradientsPanel() const { return m_gradients; }
    ExportController* exporter() const { return m_export; }
    RunStatus* runStatus() const { return m_status; }
    // Raises a page's dock by its key: "network", "graph", "input", "run", "shapes", and the analysis pages that share
    // one dock area, "timing", "roofline", "explorer", "sweep", "device", "interpolation", "trainingTiming",
    // "gradients", and "train" (tabbed with "run"). False for an unknown key.
    bool showView(const QString& name);
    QDockWidget* dock(const QString& key) const;
    ChartView* currentChart() const;
    // Opens a folder written by `convscope-cli run --save-session` read-only; false (reason shown) if it
    // cannot. Opening or creating a network afterwards leaves the session.
    bool openSession(const QString& dir);
    bool isSessionOpen() const { return !m_sessionOrigin.isEmpty(); }
    // Starts the sweep the Sweep page describes; returns the job id or 0.
    int triggerSweep();
    void setPresentationMode(bool on);
    bool presentationMode() const;
    // The window state and geometry to keep for the next start (closeEvent): the user's, never presentation mode's.
    QByteArray layoutToSave(QByteArray* geometry) const;
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
    // One row of the pages table: the dock's key (its object name is key + "Dock", which the saved layout uses),
    // its title, where it goes, the key of the dock it shares tabs with (empty: none), whether it is the tab in
    // front, and the factory that makes its widget.
    struct PageSpec {
        QString key;
        QString title;
        Qt::DockWidgetArea area;
        QString tabWith;
        bool front;
        std::function<QWidget*()> make;
    };
    struct DockPage {
        QString key;
        QDockWidget* dock;
        Page* page; // null for docks that show no outcome (network, input, run, shapes)
    };
    void addPages(const std::vector<PageSpec>& pages);
    void buildMenus();
    void connectPanels();
    void onNetworkChanged();
    void startLive();
    void onFinished(int job, RunOutcomePtr outcome);
    void showProblem(const QString& message);
    void updateTitle();
    void updateLayerProblem();
    void showOutcome(RunOutcomePtr outcome);
    void leaveSession();
    void clearViews(); // another network replaces this one: nothing of its results stays on screen

    NetworkDocument m_doc;
    Engine* m_engine;
    ShapesModel* m_shapes;
    FeatureMapPanel* m_maps;
    MessageBanner* m_banner;
    ExportController* m_export;
    ProjectController* m_project;
    // The pages, made by the table in the constructor (typed here for the accessors and the wiring).
    NetworkPanel* m_network = nullptr;
    GraphView* m_graph = nullptr;
    InputPanel* m_input = nullptr;
    QTableView* m_shapesView = nullptr;
    RunPanel* m_run = nullptr;
    TimingChart* m_timing = nullptr;
    RooflineChart* m_roofline = nullptr;
    ExplorerPanel* m_explorer = nullptr;
    SweepPanel* m_sweep = nullptr;
    DevicePanel* m_device = nullptr;
    InterpolationPanel* m_interpolation = nullptr;
    TrainPanel* m_train = nullptr;
    TrainingChart* m_trainingChart = nullptr;
    GradientsPanel* m_gradients = nullptr;
    RunStatus* m_status = nullptr;
    std::vector<DockPage> m_docks; // in the table's order
    QAction* m_presentation = nullptr;
    QString m_sessionOrigin;
    QFont m_normalFont;
    struct SavedLayout {
        QByteArray state, geometry;
        QSize size;
    };
    SavedLayout m_beforePresentation; // what leaving presentation mode restores
    bool m_inPresentation = false;
    QAction* m_runAction = nullptr;
    QTimer m_live;
    LiveBudget m_liveBudget; // whether an edit reruns live, and on what
};

} // namespace convscope::gui
