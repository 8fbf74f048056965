#include "gui/app/main_window.h"

#include "compute/cpu_threads.h"

#include "compute/error.h"
#include "compute/onnx_model.h"
#include "gui/app/autosave.h"
#include "gui/app/export_controller.h"
#include "gui/app/project_controller.h"
#include "gui/app/session_loader.h"
#include "gui/charts/explorer_chart.h"
#include "gui/charts/roofline_chart.h"
#include "gui/charts/sweep_chart.h"
#include "gui/charts/timing_chart.h"
#include "gui/charts/training_chart.h"
#include "gui/models/shapes_model.h"
#include "gui/pages/device_panel.h"
#include "gui/pages/explorer_panel.h"
#include "gui/pages/feature_map_panel.h"
#include "gui/pages/gradients_panel.h"
#include "gui/pages/input_panel.h"
#include "gui/pages/interpolation_panel.h"
#include "gui/pages/network_panel.h"
#include "gui/pages/page.h"
#include "gui/pages/run_panel.h"
#include "gui/pages/sweep_panel.h"
#include "gui/pages/train_panel.h"
#include "gui/views/feature_map_grid.h"
#include "gui/views/graph_view.h"
#include "gui/views/layer_editor.h"
#include "gui/views/message_banner.h"
#include "gui/views/run_status.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QMenuBar>
#include <QMimeData>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>

namespace convscope::gui {

namespace {
    // The Run panel scrolls: one row of checkboxes per backend, so it grows with the modules found (cpu, onednn,
    // cuda, cudnn) and must not push the window past a laptop screen.
    QWidget* scrolled(QWidget* w)
    {
        auto* scroll = new QScrollArea;
        scroll->setWidget(w);
        scroll->setWidgetResizable(true);
        scroll->setFrameShape(QFrame::NoFrame);
        return scroll;
    }

    QTableView* makeShapesView(ShapesModel* model, QWidget* parent)
    {
        auto* view = new QTableView(parent);
        view->setObjectName(QStringLiteral("shapesTable"));
        view->setModel(model);
        view->setSelectionBehavior(QAbstractItemView::SelectRows);
        view->setSelectionMode(QAbstractItemView::SingleSelection);
        view->verticalHeader()->hide();
        view->verticalHeader()->setDefaultSectionSize(view->fontMetrics().height() + 6);
        view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
        view->horizontalHeader()->setStretchLastSection(true);
        view->horizontalHeader()->setMinimumSectionSize(28);
        view->setWordWrap(false);
        view->setAlternatingRowColors(true);
        return view;
    }
} // namespace

MainWindow::MainWindow(bool restoreLayout, QWidget* parent)
    : QMainWindow(parent)
    , m_engine(new Engine(this))
    , m_shapes(new ShapesModel(&m_doc, this))
    , m_maps(new FeatureMapPanel(this))
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

    // The pages: one line each (a page that shows outcomes implements gui/pages/page.h and gets them all).
    const auto left = Qt::LeftDockWidgetArea, right = Qt::RightDockWidgetArea;
    addPages({
        { QStringLiteral("network"), tr("Network"), left, {}, true,
            [this] { return m_network = new NetworkPanel(&m_doc, this); } },
        { QStringLiteral("graph"), tr("Graph"), left, QStringLiteral("network"), false,
            [this] { return m_graph = new GraphView(&m_doc, this); } },
        { QStringLiteral("input"), tr("Input"), left, {}, false,
            [this] { return m_input = new InputPanel(&m_doc, this); } },
        { QStringLiteral("run"), tr("Run"), left, QStringLiteral("input"), true,
            [this] { return scrolled(m_run = new RunPanel(m_engine, this)); } },
        { QStringLiteral("shapes"), tr("Shapes"), right, {}, true,
            [this] { return m_shapesView = makeShapesView(m_shapes, this); } },
        { QStringLiteral("timing"), tr("Timing"), right, {}, true,
            [this] { return m_timing = new TimingChart(this); } },
        { QStringLiteral("roofline"), tr("Roofline"), right, QStringLiteral("timing"), false,
            [this] { return m_roofline = new RooflineChart(m_engine, this); } },
        { QStringLiteral("explorer"), tr("Explorer"), right, QStringLiteral("timing"), false,
            [this] { return m_explorer = new ExplorerPanel(this); } },
        { QStringLiteral("sweep"), tr("Sweep"), right, QStringLiteral("timing"), false,
            [this] { return m_sweep = new SweepPanel(m_engine, this); } },
        { QStringLiteral("device"), tr("Device"), right, QStringLiteral("timing"), false,
            [this] { return m_device = new DevicePanel(this); } },
        { QStringLiteral("interpolation"), tr("Interpolation"), right, QStringLiteral("timing"), false,
            [this] { return m_interpolation = new InterpolationPanel(m_engine, &m_doc, this); } },
        { QStringLiteral("train"), tr("Train"), left, QStringLiteral("run"), false,
            [this] { return scrolled(m_train = new TrainPanel(m_engine, &m_doc, this)); } },
        { QStringLiteral("trainingTiming"), tr("Training timing"), right, QStringLiteral("timing"), false,
            [this] { return m_trainingChart = new TrainingChart(m_engine, this); } },
        { QStringLiteral("gradients"), tr("Gradients"), right, QStringLiteral("timing"), false,
            [this] { return m_gradients = new GradientsPanel(m_engine, this); } },
    });
    m_export->setSources({ [this] { return m_maps->outcome(); }, [this] { return currentChart(); },
        [this] {
            QList<ChartView*> charts { m_timing };
            if (m_roofline->pointCount() > 0)
                charts << m_roofline;
            return charts;
        },
        // The report's feature maps: the layer on show, or the network's output when none is.
        [this] {
            const int shown = m_network->currentLayer();
            const int layers = int(m_doc.network().layers.size());
            return shown >= 0 ? QList<int> { shown } : layers > 0 ? QList<int> { layers - 1 } : QList<int> {};
        },
        m_maps->shownMaps(), [this] { return m_sessionOrigin; }, [this] { return &m_doc.network(); } });
    buildMenus();
    m_status = new RunStatus(m_engine, this);
    statusBar()->addPermanentWidget(m_status);

    connectPanels();

    // Nothing lost (gui/app/autosave.h): autosave while editing; the real window (not tests, not headless) offers
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

void MainWindow::addPages(const std::vector<PageSpec>& pages)
{
    for (const PageSpec& spec : pages) {
        QWidget* w = spec.make();
        auto* dock = new QDockWidget(spec.title, this);
        dock->setObjectName(spec.key + QStringLiteral("Dock"));
        dock->setWidget(w);
        dock->setFeatures(
            QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
        addDockWidget(spec.area, dock);
        if (QDockWidget* with = this->dock(spec.tabWith))
            tabifyDockWidget(with, dock);
        m_docks.push_back({ spec.key, dock, dynamic_cast<Page*>(w) });
    }
    for (const PageSpec& spec : pages)
        if (spec.front)
            dock(spec.key)->raise();
}

QDockWidget* MainWindow::dock(const QString& key) const
{
    for (const DockPage& d : m_docks)
        if (d.key == key)
            return d.dock;
    return nullptr;
}

// The wiring between panels that no panel owns: the document, the engine's results, the selected layer.
void MainWindow::connectPanels()
{
    connect(m_export, &ExportController::problem, this, &MainWindow::showProblem);
    connect(m_export, &ExportController::exported, this,
        [this](const QString& path) { statusBar()->showMessage(tr("Exported %1").arg(path), 5000); });
    connect(dock(QStringLiteral("roofline")), &QDockWidget::visibilityChanged, m_roofline, &RooflineChart::setActive);

    m_live.setSingleShot(true);
    m_live.setInterval(30);
    connect(&m_live, &QTimer::timeout, this, &MainWindow::startLive);

    connect(&m_doc, &NetworkDocument::replacing, this, &MainWindow::clearViews);
    connect(&m_doc, &NetworkDocument::networkChanged, this, &MainWindow::onNetworkChanged);
    connect(&m_doc, &NetworkDocument::modifiedChanged, this, &MainWindow::updateTitle);
    connect(&m_doc, &NetworkDocument::filePathChanged, this, &MainWindow::updateTitle);
    connect(m_engine, &Engine::finished, this, &MainWindow::onFinished);
    // A selection that drops out is named as soon as it does, not only when the others have finished.
    connect(m_engine, &Engine::runProgress, this, [this](int, const RunProgress& p) {
        if (!p.dropped.empty())
            m_banner->showError(
                tr("%1 dropped out: %2").arg(QString::fromStdString(p.selection), QString::fromStdString(p.dropped)));
    });
    connect(m_engine, &Engine::failed, this, [this](int, const QString& message) {
        if (message != tr("run cancelled") && !message.startsWith(tr("Cannot run")))
            showProblem(message);
    });
    connect(m_timing, &TimingChart::layerClicked, this, [this](int layer) { m_network->setCurrentLayer(layer); });
    connect(m_graph, &GraphView::layerClicked, this, [this](int layer) { m_network->setCurrentLayer(layer); });
    // A pin joins the engine's run settings (the Run panel shows it checked).
    connect(m_explorer, &ExplorerPanel::pinRequested, this, [this](const Selection& s) {
        QString why;
        if (m_engine->pinSelection(s, &why))
            statusBar()->showMessage(tr("%1 pinned for the next run").arg(QString::fromStdString(s.str())), 5000);
        else
            showProblem(tr("Cannot pin %1: %2").arg(QString::fromStdString(s.str()), why));
    });
    connect(m_sweep, &SweepPanel::sweepRequested, this, &MainWindow::triggerSweep);
    connect(m_network, &NetworkPanel::currentLayerChanged, this, [this](int index) {
        m_maps->setLayer(index);
        for (const DockPage& d : m_docks)
            if (d.page)
                d.page->showLayer(index);
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
    connect(
        m_project, &ProjectController::status, this, [this](const QString& m) { statusBar()->showMessage(m, 15000); });
    connect(m_project, &ProjectController::opened, this, [this] {
        leaveSession();
        m_banner->dismiss();
    });
    connect(m_project->newAction(), &QAction::triggered, this, &MainWindow::leaveSession);
    connect(m_run, &RunPanel::runRequested, this, &MainWindow::triggerRun);
    connect(m_run, &RunPanel::liveToggled, this, [this](bool on) {
        if (on)
            m_live.start();
    });
}

void MainWindow::onNetworkChanged()
{
    const ShapeReport& s = m_doc.shapes();
    m_run->setBlockedReason(s.ok() ? QString() : QString::fromStdString(s.firstError()));
    updateLayerProblem();
    const RunOutcomePtr shown = m_maps->outcome();
    m_maps->setStale(shown && !shown->network.sameDescription(m_doc.network()));
    if (!s.ok() || isSessionOpen())
        return;
    if (m_liveBudget.fits(s.total.flops) && m_engine->runSettings().livePreview) {
        // The first edit after a quiet moment runs at once; the rest of a burst (spin-box steps, typing)
        // is debounced into one run that supersedes whatever is still running.
        if (!m_engine->isBusy() && !m_live.isActive())
            startLive();
        else
            m_live.start();
    } else if (m_engine->runSettings().livePreview)
        statusBar()->showMessage(tr("%1 GFLOP: about %2 ms on %3, over the live preview's %4 ms; press Run")
                                     .arg(s.total.flops / 1e9, 0, 'g', 3)
                                     .arg(m_liveBudget.estimateMs(s.total.flops), 0, 'f', 0)
                                     .arg(QString::fromStdString(LiveBudget::selection().str()))
                                     .arg(LiveBudget::kBudgetMs, 0, 'f', 0),
            5000);
}

void MainWindow::startLive()
{
    m_live.stop();
    const ShapeReport& s = m_doc.shapes();
    if (!s.ok() || !m_liveBudget.fits(s.total.flops) || !m_engine->runSettings().livePreview
        || m_doc.network().layers.empty())
        return;
    m_engine->startRun(m_doc.network(), RunRequest { { LiveBudget::selection() }, 0, 1, true, false });
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
    return m_engine->startRun(m_doc.network(), m_engine->runSettings().request());
}

void MainWindow::onFinished(int, RunOutcomePtr outcome)
{
    showOutcome(outcome);
    // A selection that dropped out (a backend refused a layer, or failed on it) is named where it cannot be missed.
    QStringList dropped;
    for (const auto& sel : outcome->result.selections)
        if (!sel.ok)
            dropped << tr("%1 dropped out: %2")
                           .arg(QString::fromStdString(sel.selection.str()), QString::fromStdString(sel.failure));
    if (!dropped.isEmpty())
        m_banner->showError(dropped.join(QLatin1Char('\n')));
    if (outcome->live && !outcome->result.selections.empty() && outcome->result.selections[0].ok) {
        // What ran and how long it took; a large network's time also sets the budget's rate for the next edit.
        const double ms = outcome->result.selections[0].totalMs.median;
        m_liveBudget.record(outcome->result.shapes.total.flops, ms);
        statusBar()->showMessage(tr("Live preview: %1 in %2 ms on %3 CPU threads")
                                     .arg(QString::fromStdString(outcome->result.selections[0].selection.str()))
                                     .arg(ms, 0, 'f', ms < 10 ? 2 : 1)
                                     .arg(cpuThreadCount()),
            4000);
        return;
    }
    statusBar()->showMessage(m_run->message().section(QLatin1Char('\n'), 0, 0), 4000); // the Run panel's summary
}

void MainWindow::showOutcome(RunOutcomePtr outcome)
{
    m_maps->setOutcome(outcome);
    m_maps->setStale(!outcome->network.sameDescription(m_doc.network()));
    m_shapes->setRun(outcome, std::max(0, m_maps->selectionBox()->currentData().toInt()));
    for (const DockPage& d : m_docks)
        if (d.page)
            d.page->showOutcome(outcome, m_sessionOrigin);
}

bool MainWindow::showView(const QString& name)
{
    QDockWidget* d = dock(name);
    if (!d)
        return false;
    d->show();
    d->raise();
    return true;
}

ChartView* MainWindow::currentChart() const
{
    // The chart page in front of the shared dock area (the first visible one, timing when in doubt).
    for (const DockPage& d : m_docks) {
        if (d.key == QLatin1String("timing") || !d.dock->isVisible() || d.dock->visibleRegion().isEmpty())
            continue;
        if (d.key == QLatin1String("sweep"))
            return m_sweep->chart();
        if (d.key == QLatin1String("explorer"))
            return m_explorer->chart();
        if (auto* chart = qobject_cast<ChartView*>(d.dock->widget()))
            return chart;
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

void MainWindow::clearViews()
{
    m_live.stop();
    m_engine->cancel(); // a run of the previous network must not land on the new one
    m_maps->setOutcome(nullptr);
    m_maps->setStale(false);
    m_shapes->setRun(nullptr, 0);
    for (const DockPage& d : m_docks)
        if (d.page)
            d.page->clearOutcome();
    m_sweep->chart()->setResult(nullptr);
    m_interpolation->setResult(nullptr);
    m_banner->dismiss();
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
    RunRequest request = m_engine->runSettings().request();
    request.explore = false;
    m_live.stop();
    const int job = m_engine->startSweep(m_doc.network(), spec, request);
    m_sweep->setJob(job);
    if (job)
        m_sweep->setMessage(
            tr("Sweeping %1 values × %2 selections…").arg(spec.points.size()).arg(request.selections.size()));
    return job;
}

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
    if (InputPanel::isInputFile(path)) {
        if (!m_input->openInputFile(path))
            return false;
        const QString what = tr("%1 is the input of %2 now (a picture or an array is an input, not a network: "
                                "File ▸ Open reads networks)")
                                 .arg(QFileInfo(path).fileName(), QString::fromStdString(m_doc.network().name));
        m_banner->showInfo(what);
        statusBar()->showMessage(what, 15000);
        return true;
    }
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
    QByteArray geometry;
    const QByteArray state = layoutToSave(&geometry);
    settings.setValue(QStringLiteral("window/geometry"), geometry);
    settings.setValue(QStringLiteral("window/state"), state);
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
