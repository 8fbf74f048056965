// The window's menus, tool bar and layout (reset, presentation mode): MainWindow's members that only arrange, kept
// apart from the wiring in main_window.cpp.
#include "gui/app/main_window.h"

#include "gui/app/export_controller.h"
#include "gui/app/project_controller.h"
#include "gui/charts/chart_view.h"
#include "gui/pages/network_panel.h"

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QLayout>
#include <QMenuBar>
#include <QStyle>
#include <QTimer>
#include <QToolBar>

namespace convscope::gui {

void MainWindow::resetLayout()
{
    const int w = std::max(width(), 800), h = std::max(height(), 600);
    const auto d = [this](const char* key) { return dock(QString::fromLatin1(key)); };
    resizeDocks({ d("network"), d("shapes") }, { int(w * 0.24), int(w * 0.33) }, Qt::Horizontal);
    resizeDocks({ d("network"), d("run") }, { int(h * 0.66), int(h * 0.34) }, Qt::Vertical);
    resizeDocks({ d("shapes"), d("timing") }, { int(h * 0.5), int(h * 0.5) }, Qt::Vertical);
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
    exportMenu->addActions({ m_export->reportAction(), m_export->chartAction(), m_export->mapsAction(),
        m_export->traceAction(), m_export->onnxAction() });
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
    for (const DockPage& d : m_docks)
        view->addAction(d.dock->toggleViewAction());
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

// Presentation mode enlarges every font and chart line for a projector. Leaving it restores exactly what was there
// before: the application font, the dock sizes and the window's geometry (larger fonts raise the docks' minimum sizes,
// which narrowed the docks beside them and could grow the window by itself), so toggling twice changes nothing.
void MainWindow::setPresentationMode(bool on)
{
    if (m_presentation->isChecked() != on)
        m_presentation->setChecked(on);
    if (on == m_inPresentation)
        return;
    m_inPresentation = on;
    if (on) {
        m_normalFont = QApplication::font();
        m_beforePresentation = { saveState(), saveGeometry(), size() };
    }
    QFont f = m_normalFont;
    if (on)
        f.setPointSizeF(f.pointSizeF() * 1.4);
    QApplication::setFont(f);
    for (ChartView* c : findChildren<ChartView*>())
        c->setPresentation(on);
    if (on)
        return;
    // Let the normal fonts' layouts settle first (until then the larger minimum sizes would clamp the restored size),
    // then put the user's layout back over them; once more after the events still queued, which may move docks.
    const auto restoreUserLayout = [this] {
        QCoreApplication::sendPostedEvents();
        if (layout())
            layout()->activate();
        restoreGeometry(m_beforePresentation.geometry);
        resize(m_beforePresentation.size);
        restoreState(m_beforePresentation.state);
    };
    restoreUserLayout();
    QTimer::singleShot(0, this, [this, restoreUserLayout] {
        if (!m_inPresentation)
            restoreUserLayout();
    });
}

bool MainWindow::presentationMode() const { return m_inPresentation; }

QByteArray MainWindow::layoutToSave(QByteArray* geometry) const
{
    // What the user set: in presentation mode, the layout it will return to, not the enlarged one.
    *geometry = m_inPresentation ? m_beforePresentation.geometry : saveGeometry();
    return m_inPresentation ? m_beforePresentation.state : saveState();
}

} // namespace convscope::gui
