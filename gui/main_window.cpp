#include "gui/main_window.h"

#include "compute/error.h"
#include "compute/onnx_model.h"
#include "gui/autosave.h"
#include "gui/device_panel.h"
#include "gui/explorer_chart.h"
#include "gui/explorer_panel.h"
#include "gui/export_controller.h"
#include "gui/feature_map_grid.h"
#include "gui/feature_map_panel.h"
#include "gui/input_panel.h"
#include "gui/interpolation_panel.h"
#include "gui/layer_editor.h"
#include "gui/message_banner.h"
#include "gui/network_panel.h"
#include "gui/project_controller.h"
#include "gui/roofline_chart.h"
#include "gui/run_panel.h"
#include "gui/session_loader.h"
#include "gui/shapes_model.h"
#include "gui/sweep_chart.h"
#include "gui/sweep_panel.h"
#include "gui/timing_chart.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QMenuBar>
#include <QScrollArea>
#include <QMimeData>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>

namespace convscope::gui {

MainWindow::MainWindow(bool restoreLayout, QWidget* parent)
    : QMainWindow(parent)
    , m_engine(new Engine(this))
    , m_network(new NetworkPanel(&m_doc, this))
    , m_input(new InputPanel(&m_doc, this))
    , m_shapes(new ShapesModel(this))
    , m_shapesView(new QTableView(this))
    , m_maps(new FeatureMapPanel(this))
    , m_run(new RunPanel(this))
    , m_timing(new TimingChart(this))
    , m_roofline(new RooflineChart(m_engine, this))
    , m_explorer(new ExplorerPanel(this))
    , m_sweep(new SweepPanel(this))
    , m_device(new DevicePanel(this))
    , m_banner(new MessageBanner(this))
    , m_export(new ExportController(this))
    , m_project(new ProjectController(&m_doc, this))
{
    setObjectName(QStringLiteral("ConvScopeMainWindow"));
    setAcceptDrops(true);
    setDockNestingEnabled(true);
    auto* central = new QWidget(this);
    auto* box = new QVBoxLayout(central);
    box->setContentsMargins(0, 0, 0, 0);
    box->setSpacing(0);
    box->addWidget(m_banner);
    box->addWidget(m_maps, 1);
    setCentralWidget(central);

    m_shapesView->setObjectName(QStringLiteral("shapesTable"));
    m_shapesView->setModel(m_shapes);
    m_shapesView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_shapesView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_shapesView->verticalHeader()->hide();
    m_shapesView->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_shapesView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_shapesView->horizontalHeader()->setStretchLastSection(true);
    m_shapesView->horizontalHeader()->setMinimumSectionSize(28);
    m_shapesView->setWordWrap(false);
    m_shapesView->setAlternatingRowColors(true);

    m_networkDock = addDock(m_network, tr("Network"), QStringLiteral("networkDock"), Qt::LeftDockWidgetArea);
    m_inputDock = addDock(m_input, tr("Input"), QStringLiteral("inputDock"), Qt::LeftDockWidgetArea);
    // Scrollable: one row of checkboxes per backend, so the panel grows with the modules found (cpu, onednn, cuda,
    // cudnn) and must not push the window past a laptop screen.
    auto* runScroll = new QScrollArea;
    runScroll->setWidget(m_run);
    runScroll->setWidgetResizable(true);
    runScroll->setFrameShape(QFrame::NoFrame);
    m_runDock = addDock(runScroll, tr("Run"), QStringLiteral("runDock"), Qt::LeftDockWidgetArea);
    tabifyDockWidget(m_inputDock, m_runDock);
    m_runDock->raise();
    m_shapesDock = addDock(m_shapesView, tr("Shapes"), QStringLiteral("shapesDock"), Qt::RightDockWidgetArea);
    m_timingDock = addDock(m_timing, tr("Timing"), QStringLiteral("timingDock"), Qt::RightDockWidgetArea);
    m_rooflineDock = addDock(m_roofline, tr("Roofline"), QStringLiteral("rooflineDock"), Qt::RightDockWidgetArea);
    m_explorerDock = addDock(m_explorer, tr("Explorer"), QStringLiteral("explorerDock"), Qt::RightDockWidgetArea);
    m_sweepDock = addDock(m_sweep, tr("Sweep"), QStringLiteral("sweepDock"), Qt::RightDockWidgetArea);
    m_deviceDock = addDock(m_device, tr("Device"), QStringLiteral("deviceDock"), Qt::RightDockWidgetArea);
    for (QDockWidget* d : { m_rooflineDock, m_explorerDock, m_sweepDock, m_deviceDock })
        tabifyDockWidget(m_timingDock, d);
    tabifyDockWidget(m_timingDock, addDock(new InterpolationPanel(m_engine, &m_doc, m_run, this), tr("Interpolation"),
                                       QStringLiteral("interpolationDock"), Qt::RightDockWidgetArea));
    m_timingDock->raise();
    connect(m_rooflineDock, &QDockWidget::visibilityChanged, m_roofline, &RooflineChart::setActive);
    m_export->setSources({ [this] { return m_maps->outcome(); }, [this] { return currentChart(); },
        [this] {
            QList<ChartView*> charts { m_timing };
            if (m_roofline->pointCount() > 0)
                charts << m_roofline;
            return charts;
        },
        m_maps->grid(), [this] { return m_sessionOrigin; }, [this] { return &m_doc.network(); } });
    connect(m_export, &ExportController::problem, this, &MainWindow::showProblem);
    connect(m_export, &ExportController::exported, this,
        [this](const QString& path) { statusBar()->showMessage(tr("Exported %1").arg(path), 5000); });
    buildMenus();

    m_live.setSingleShot(true);
    m_live.setInterval(30);
    connect(&m_live, &QTimer::timeout, this, &MainWindow::startLive);

    connect(&m_doc, &NetworkDocument::networkChanged, this, &MainWindow::onNetworkChanged);
    connect(&m_doc, &NetworkDocument::modifiedChanged, this, &MainWindow::updateTitle);
    connect(&m_doc, &NetworkDocument::filePathChanged, this, &MainWindow::updateTitle);
    connect(m_engine, &Engine::shapesAvailable, this, [this](const ShapeReport& shapes) {
        m_shapes->setNetwork(m_doc.network(), shapes);
        m_run->setBlockedReason(shapes.ok() ? QString() : QString::fromStdString(shapes.firstError()));
        updateLayerProblem();
    });
    connect(m_engine, &Engine::started, this, [this](int, bool live) {
        m_run->setRunning(true, live);
        if (!live)
            m_run->setMessage(tr("Running…"));
    });
    connect(
        m_engine, &Engine::progress, this, [this](int, double f, const QString& what) { m_run->setProgress(f, what); });
    connect(m_engine, &Engine::finished, this, &MainWindow::onFinished);
    connect(m_engine, &Engine::failed, this, [this](int job, const QString& message) {
        m_run->setRunning(false, false);
        if (job == m_sweepJob) {
            m_sweep->setRunning(false);
            m_sweep->setMessage(message);
        }
        m_run->setMessage(message);
        if (message != tr("run cancelled") && !message.startsWith(tr("Cannot run")))
            showProblem(message);
    });
    connect(m_engine, &Engine::layerResultAvailable, this,
        [this](int, int, int, RunOutcomePtr outcome) { m_timing->setRun(outcome); }); // coalesced by the chart
    connect(m_timing, &TimingChart::layerClicked, this, [this](int layer) { m_network->setCurrentLayer(layer); });
    connect(m_explorer, &ExplorerPanel::pinRequested, this, [this](const Selection& s) {
        if (m_run->pin(s))
            statusBar()->showMessage(tr("%1 pinned for the next run").arg(QString::fromStdString(s.str())), 5000);
        else
            showProblem(m_run->message());
    });
    connect(m_sweep, &SweepPanel::sweepRequested, this, &MainWindow::triggerSweep);
    connect(m_sweep, &SweepPanel::cancelRequested, m_engine, &Engine::cancel);
    connect(m_sweep, &SweepPanel::presetSelectionsSuggested, this,
        [this](const std::vector<Selection>& s) { m_run->setSelections(s); });
    connect(m_engine, &Engine::sweepUpdated, this, [this](int job, SweepResultPtr r, double) {
        if (job == m_sweepJob)
            m_sweep->chart()->setResult(r);
    });
    connect(m_engine, &Engine::sweepFinished, this, [this](int job, SweepResultPtr r) {
        if (job != m_sweepJob)
            return;
        m_sweep->chart()->setResult(r);
        m_sweep->setRunning(false);
        m_run->setRunning(false, false);
        const QString done
            = tr("Sweep done: %1 points × %2 selections").arg(r->samples.size()).arg(r->selections.size());
        m_sweep->setMessage(done);
        m_run->setMessage(done);
    });
    connect(m_network, &NetworkPanel::currentLayerChanged, this, [this](int index) {
        m_maps->setLayer(index);
        m_explorer->setLayer(index);
        updateLayerProblem();
        if (index >= 0)
            m_shapesView->selectRow(index);
    });
    connect(
        m_shapesView->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& i) {
            if (i.isValid() && !m_shapes->isTotalsRow(i.row()))
                m_network->setCurrentLayer(i.row());
        });
    // The shapes table times whichever selection the feature maps show.
    connect(m_maps->selectionBox(), &QComboBox::currentIndexChanged, this, [this] {
        if (m_maps->outcome())
            m_shapes->setRun(m_maps->outcome(), std::max(0, m_maps->selectionBox()->currentData().toInt()));
    });
    connect(m_input, &InputPanel::problem, this, &MainWindow::showProblem);
    connect(m_project, &ProjectController::problem, this, &MainWindow::showProblem);
    connect(m_project, &ProjectController::status, this, [this](const QString& m) { statusBar()->showMessage(m, 15000); });
    connect(m_project, &ProjectController::opened, this, [this] {
        leaveSession();
        m_banner->dismiss();
    });
    connect(m_project->newAction(), &QAction::triggered, this, &MainWindow::leaveSession);
    connect(m_run, &RunPanel::runRequested, this, &MainWindow::triggerRun);
    connect(m_run, &RunPanel::cancelRequested, m_engine, &Engine::cancel);
    connect(m_run, &RunPanel::liveToggled, this, [this](bool on) {
        if (on)
            m_live.start();
    });

    // Nothing lost (gui/autosave.h): autosave while editing; the real window (not tests, not headless) offers
    // to restore what a crashed session left, once the event loop runs.
    auto* autosave = new Autosave(&m_doc, this);
    connect(autosave, &Autosave::problem, this, &MainWindow::showProblem);
    if (restoreLayout)
        QTimer::singleShot(0, autosave, &Autosave::offerRestore);

    resize(1600, 1000);
    bool restored = false;
    if (restoreLayout) {
        QSettings settings;
        restored = restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())
            && restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    }
    if (!restored)
        resetLayout();
    onNetworkChanged();
    updateTitle();
}

MainWindow::~MainWindow() = default;

QDockWidget* MainWindow::addDock(QWidget* w, const QString& title, const QString& objectName, Qt::DockWidgetArea area)
{
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(objectName);
    dock->setWidget(w);
    dock->setFeatures(
        QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
    addDockWidget(area, dock);
    return dock;
}

void MainWindow::resetLayout()
{
    const int w = std::max(width(), 800), h = std::max(height(), 600);
    resizeDocks({ m_networkDock, m_shapesDock }, { int(w * 0.24), int(w * 0.33) }, Qt::Horizontal);
    resizeDocks({ m_networkDock, m_runDock }, { int(h * 0.66), int(h * 0.34) }, Qt::Vertical);
    resizeDocks({ m_shapesDock, m_timingDock }, { int(h * 0.5), int(h * 0.5) }, Qt::Vertical);
}

void MainWindow::buildMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(m_project->newAction());
    file->addAction(m_project->openAction());
    file->addMenu(m_project->recentMenu());
    file->addMenu(m_project->examplesMenu());
    QAction* openSessionAction = file->addAction(tr("Open &session…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a saved session folder"));
        if (!dir.isEmpty())
            openSession(dir);
    });
    openSessionAction->setObjectName(QStringLiteral("openSession"));
    openSessionAction->setToolTip(tr("A folder written by convscope-cli run --save-session, shown read-only"));
    file->addSeparator();
    file->addAction(m_project->saveAction());
    file->addAction(m_project->saveAsAction());
    file->addSeparator();
    QMenu* exportMenu = file->addMenu(tr("&Export"));
    exportMenu->addActions(
        { m_export->reportAction(), m_export->chartAction(), m_export->mapsAction(), m_export->traceAction(),
            m_export->onnxAction() });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* undo = m_doc.undoStack()->createUndoAction(this, tr("&Undo"));
    undo->setShortcut(QKeySequence::Undo);
    undo->setIcon(style()->standardIcon(QStyle::SP_ArrowBack));
    undo->setObjectName(QStringLiteral("undo"));
    QAction* redo = m_doc.undoStack()->createRedoAction(this, tr("&Redo"));
    redo->setShortcut(QKeySequence::Redo);
    redo->setIcon(style()->standardIcon(QStyle::SP_ArrowForward));
    redo->setObjectName(QStringLiteral("redo"));
    edit->addAction(undo);
    edit->addAction(redo);

    QMenu* layer = menuBar()->addMenu(tr("&Layer"));
    layer->addMenu(m_network->addMenu());
    layer->addSeparator();
    layer->addActions(m_network->editActions());

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    m_runAction = run->addAction(
        style()->standardIcon(QStyle::SP_MediaPlay), tr("&Run checked selections"), this, &MainWindow::triggerRun);
    m_runAction->setShortcut(QKeySequence(Qt::Key_F5));
    m_runAction->setObjectName(QStringLiteral("runAction"));
    QAction* cancel
        = run->addAction(style()->standardIcon(QStyle::SP_MediaStop), tr("&Cancel"), m_engine, &Engine::cancel);
    cancel->setShortcut(QKeySequence(Qt::Key_Escape));

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : { m_networkDock, m_inputDock, m_shapesDock, m_runDock, m_timingDock, m_rooflineDock,
             m_explorerDock, m_sweepDock, m_deviceDock })
        view->addAction(d->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("Reset layout"), this, &MainWindow::resetLayout);
    m_presentation = view->addAction(tr("&Presentation mode"), this, &MainWindow::setPresentationMode);
    m_presentation->setCheckable(true);
    m_presentation->setShortcut(QKeySequence(Qt::Key_F11));
    m_presentation->setObjectName(QStringLiteral("presentationMode"));

    QToolBar* bar = addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setIconSize(QSize(18, 18));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->addAction(m_project->newAction());
    bar->addAction(m_project->openAction());
    bar->addAction(m_project->saveAction());
    bar->addSeparator();
    bar->addAction(undo);
    bar->addAction(redo);
    bar->addSeparator();
    bar->addAction(m_runAction);
    bar->addAction(cancel);
    bar->addSeparator();
    bar->addAction(m_export->reportAction());
}

void MainWindow::onNetworkChanged()
{
    m_engine->publishShapes(m_doc.shapes());
    const RunOutcomePtr shown = m_maps->outcome();
    m_maps->setStale(shown && !shown->network.sameDescription(m_doc.network()));
    const ShapeReport& s = m_doc.shapes();
    if (!s.ok() || isSessionOpen())
        return;
    if (s.total.flops <= Engine::kLiveFlopsLimit && m_run->liveEnabled()) {
        // The first edit after a quiet moment runs at once; the rest of a burst (spin-box steps, typing)
        // is debounced into one run that supersedes whatever is still running.
        if (!m_engine->isBusy() && !m_live.isActive())
            startLive();
        else
            m_live.start();
    } else if (s.total.flops > Engine::kLiveFlopsLimit)
        statusBar()->showMessage(
            tr("%1 FLOPs: too large for the live preview; press Run").arg(s.total.flops, 0, 'g', 3), 5000);
}

void MainWindow::startLive()
{
    m_live.stop();
    const ShapeReport& s = m_doc.shapes();
    if (!s.ok() || s.total.flops > Engine::kLiveFlopsLimit || !m_run->liveEnabled() || m_doc.network().layers.empty())
        return;
    m_engine->startRun(m_doc.network(), RunRequest { { Engine::liveSelection() }, 0, 1, true, false });
}

void MainWindow::updateLayerProblem()
{
    const int i = m_network->currentLayer();
    const ShapeReport& s = m_doc.shapes();
    QString problem;
    if (!s.inputError.empty())
        problem = QString::fromStdString(s.inputError);
    else if (i >= 0 && size_t(i) < s.layers.size() && !s.layers[size_t(i)].ok)
        problem = QString::fromStdString(s.layers[size_t(i)].error);
    m_maps->setLayerProblem(problem);
}

int MainWindow::triggerRun()
{
    const ShapeReport& s = m_doc.shapes();
    if (!s.ok()) {
        const QString why = tr("Cannot run: %1").arg(QString::fromStdString(s.firstError()));
        m_run->setMessage(why);
        m_banner->showError(why);
        return 0;
    }
    m_live.stop();
    return m_engine->startRun(m_doc.network(), m_run->request());
}

void MainWindow::onFinished(int, RunOutcomePtr outcome)
{
    m_run->setRunning(false, outcome->live);
    showOutcome(outcome);
    QStringList failures;
    for (const auto& sel : outcome->result.selections)
        if (!sel.ok)
            failures << tr("%1 did not run: %2")
                            .arg(QString::fromStdString(sel.selection.str()), QString::fromStdString(sel.failure));
    const QString done = outcome->live
        ? tr("Live preview updated (%1 ms)").arg(outcome->wallMs, 0, 'f', 1)
        : tr("Ran %1 in %2 ms")
              .arg(outcome->result.selections.size() == 1
                      ? QString::fromStdString(outcome->result.selections[0].selection.str())
                      : tr("%1 selections").arg(outcome->result.selections.size()))
              .arg(outcome->wallMs, 0, 'f', 1);
    m_run->setMessage(failures.isEmpty() ? done : done + QLatin1Char('\n') + failures.join(QLatin1Char('\n')));
    statusBar()->showMessage(done, 4000);
}

void MainWindow::showOutcome(RunOutcomePtr outcome)
{
    m_maps->setOutcome(outcome);
    m_maps->setStale(!outcome->network.sameDescription(m_doc.network()));
    m_shapes->setRun(outcome, std::max(0, m_maps->selectionBox()->currentData().toInt()));
    m_timing->setRun(outcome);
    m_roofline->setRun(outcome);
    m_explorer->setOutcome(outcome);
    m_explorer->setLayer(m_network->currentLayer());
    m_device->setOutcome(outcome, m_sessionOrigin);
}

bool MainWindow::showView(const QString& name)
{
    const QMap<QString, QDockWidget*> docks { { QStringLiteral("timing"), m_timingDock },
        { QStringLiteral("roofline"), m_rooflineDock }, { QStringLiteral("explorer"), m_explorerDock },
        { QStringLiteral("sweep"), m_sweepDock }, { QStringLiteral("device"), m_deviceDock } };
    QDockWidget* d = docks.value(name);
    if (!d)
        return false;
    d->show();
    d->raise();
    return true;
}

ChartView* MainWindow::currentChart() const
{
    // The chart page in front of the shared dock area (the first visible one, timing when in doubt).
    for (QDockWidget* d : { m_rooflineDock, m_explorerDock, m_sweepDock })
        if (d->isVisible() && !d->visibleRegion().isEmpty()) {
            if (d == m_rooflineDock)
                return m_roofline;
            if (d == m_sweepDock)
                return m_sweep->chart();
            return m_explorer->chart();
        }
    return m_timing;
}

bool MainWindow::openSession(const QString& dir)
{
    if (!m_project->maybeDiscard())
        return false;
    LoadedSession s;
    try {
        s = loadSessionFolder(dir);
    } catch (const std::exception& e) {
        showProblem(tr("Cannot open the session %1: %2").arg(dir, QString::fromStdString(e.what())));
        return false;
    }
    m_live.stop();
    m_engine->cancel();
    m_sessionOrigin = s.origin; // set first: the reset below must not start a live preview
    m_doc.reset(s.outcome->network, QString());
    m_network->editor()->setEnabled(false);
    m_input->setEnabled(false);
    m_runAction->setEnabled(false);
    m_run->setEnabled(false);
    m_roofline->setSessionCeilings(s.ceilings);
    showOutcome(s.outcome);
    if (s.sweep)
        m_sweep->chart()->setResult(s.sweep);
    m_sweep->setReadOnly(true);
    m_banner->showInfo(s.origin);
    setWindowTitle(
        tr("%1 (session, read-only) — ConvScope").arg(QString::fromStdString(s.outcome->result.networkName)));
    return true;
}

void MainWindow::leaveSession()
{
    if (!isSessionOpen())
        return;
    m_sessionOrigin.clear();
    m_network->editor()->setEnabled(true);
    m_input->setEnabled(true);
    m_runAction->setEnabled(true);
    m_run->setEnabled(true);
    m_roofline->clearSession();
    m_sweep->setReadOnly(false);
    updateTitle();
}

int MainWindow::triggerSweep()
{
    SweepSpec spec;
    try {
        spec = m_sweep->spec();
    } catch (const std::exception& e) {
        m_sweep->setMessage(QString::fromStdString(e.what()));
        return 0;
    }
    RunRequest request = m_run->request();
    request.explore = false;
    m_live.stop();
    m_sweepJob = m_engine->startSweep(m_doc.network(), spec, request);
    if (m_sweepJob) {
        m_sweep->setRunning(true);
        m_sweep->setMessage(
            tr("Sweeping %1 values × %2 selections…").arg(spec.points.size()).arg(request.selections.size()));
    }
    return m_sweepJob;
}

void MainWindow::setPresentationMode(bool on)
{
    if (m_presentation->isChecked() != on)
        m_presentation->setChecked(on);
    if (m_normalFont == QFont())
        m_normalFont = QApplication::font();
    QFont f = m_normalFont;
    if (on)
        f.setPointSizeF(f.pointSizeF() * 1.4);
    QApplication::setFont(f);
    for (ChartView* c : findChildren<ChartView*>())
        c->setPresentation(on);
}

bool MainWindow::presentationMode() const { return m_presentation->isChecked(); }

void MainWindow::showProblem(const QString& message)
{
    m_banner->showError(message);
    statusBar()->showMessage(message, 8000);
}

QString MainWindow::bannerText() const { return m_banner->text(); }

void MainWindow::updateTitle()
{
    if (isSessionOpen())
        return;
    const QString path = m_doc.filePath();
    const QString name = path.isEmpty() ? QString::fromStdString(m_doc.network().name) : QFileInfo(path).fileName();
    setWindowTitle(tr("%1[*] — ConvScope").arg(name));
    setWindowModified(m_doc.isModified());
}

bool MainWindow::openAny(const QString& path)
{
    if (QFileInfo(path).isDir())
        return openSession(path);
    if (QFileInfo(path).suffix().compare(QLatin1String("json"), Qt::CaseInsensitive) == 0
        || isOnnxFile(path.toStdString()))
        return m_project->openFile(path);
    if (InputPanel::isInputFile(path))
        return m_input->openInputFile(path);
    showProblem(tr("%1: not a network (.json), an ONNX model, an image or an .npy file").arg(path));
    return false;
}

void MainWindow::closeEvent(QCloseEvent* e)
{
    if (!m_project->maybeDiscard()) {
        e->ignore();
        return;
    }
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    e->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e)
{
    if (e->mimeData()->hasUrls())
        e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e)
{
    const auto urls = e->mimeData()->urls();
    if (urls.isEmpty() || !urls.first().isLocalFile())
        return;
    openAny(urls.first().toLocalFile());
    e->acceptProposedAction();
}

} // namespace convscope::gui
