#include "gui/pages/network_panel.h"

#include "gui/models/layer_list_model.h"
#include "gui/views/layer_editor.h"

#include "compute/layer_kinds.h"

#include <QAction>
#include <QLabel>
#include <QListView>
#include <QMenu>
#include <QScrollArea>
#include <QSplitter>
#include <QStyle>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace convscope::gui {

namespace {
    QString menuLabel(const QString& type)
    {
        const LayerKindInfo* kind = findLayerKind(type.toStdString());
        return kind ? QString::fromUtf8(kind->label) : type;
    }
} // namespace

NetworkPanel::NetworkPanel(NetworkDocument* doc, QWidget* parent)
    : QWidget(parent)
    , m_doc(doc)
    , m_model(new LayerListModel(doc, this))
    , m_view(new QListView(this))
    , m_editor(new LayerEditor(doc, this))
    , m_addMenu(new QMenu(tr("&Add layer"), this))
{
    m_view->setObjectName(QStringLiteral("layerList"));
    m_view->setModel(m_model);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setDragEnabled(true);
    m_view->setAcceptDrops(true);
    m_view->setDropIndicatorShown(true);
    m_view->setDragDropMode(QAbstractItemView::DragDrop);
    m_view->setDefaultDropAction(Qt::MoveAction);
    m_view->setAlternatingRowColors(true);

    for (const char* type : layerTypeNames()) {
        const QString t = QString::fromLatin1(type);
        auto* a = m_addMenu->addAction(menuLabel(t));
        a->setObjectName(QStringLiteral("add_") + t);
        a->setToolTip(tr("Add a %1 layer after the selected one").arg(menuLabel(t)));
        connect(a, &QAction::triggered, this, [this, type] {
            Layer layer;
            layer.spec = makeLayerSpec(type);
            const int at = currentLayer() < 0 ? int(m_doc->network().layers.size()) : currentLayer() + 1;
            // layer_norm has no default normalized_shape (PyTorch requires one): the last axis of what it reads.
            if (auto* ln = std::get_if<LayerNorm>(&layer.spec)) {
                const ShapeReport& shapes = m_doc->shapes();
                const bool above = at > 0 && size_t(at - 1) < shapes.layers.size() && shapes.layers[size_t(at - 1)].ok;
                const std::vector<int64_t> dims
                    = above ? shapes.layers[size_t(at - 1)].out.dims() : shapes.input.dims();
                if (!dims.empty() && dims.back() > 0)
                    ln->normalized_shape = { dims.back() };
            }
            m_doc->insertLayer(at, std::move(layer));
        });
        m_addActions.insert(t, a);
        // A separator between families (convolutions | pooling | normalisation | activations | ...), from the table.
        const LayerKindInfo* kind = findLayerKind(type);
        if (kind && kind->index + 1 < kLayerKinds.size() && kLayerKinds[kind->index + 1].family != kind->family)
            m_addMenu->addSeparator();
    }
    auto* style = this->style();
    m_remove = new QAction(style->standardIcon(QStyle::SP_TrashIcon), tr("&Remove layer"), this);
    m_remove->setShortcut(QKeySequence::Delete);
    m_remove->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_duplicate = new QAction(style->standardIcon(QStyle::SP_FileDialogNewFolder), tr("D&uplicate layer"), this);
    m_duplicate->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
    m_up = new QAction(style->standardIcon(QStyle::SP_ArrowUp), tr("Move &up"), this);
    m_up->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Up));
    m_down = new QAction(style->standardIcon(QStyle::SP_ArrowDown), tr("Move &down"), this);
    m_down->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Down));
    m_remove->setObjectName(QStringLiteral("removeLayer"));
    m_duplicate->setObjectName(QStringLiteral("duplicateLayer"));
    m_up->setObjectName(QStringLiteral("moveLayerUp"));
    m_down->setObjectName(QStringLiteral("moveLayerDown"));
    connect(m_remove, &QAction::triggered, this, [this] { m_doc->removeLayer(currentLayer()); });
    connect(m_duplicate, &QAction::triggered, this, [this] { m_doc->duplicateLayer(currentLayer()); });
    connect(m_up, &QAction::triggered, this, [this] { m_doc->moveLayer(currentLayer(), currentLayer() - 1); });
    connect(m_down, &QAction::triggered, this, [this] { m_doc->moveLayer(currentLayer(), currentLayer() + 1); });

    auto* toolbar = new QToolBar(this);
    toolbar->setIconSize(QSize(16, 16));
    auto* addButton = new QToolButton(toolbar);
    addButton->setText(tr("Add layer"));
    addButton->setIcon(style->standardIcon(QStyle::SP_FileDialogNewFolder));
    addButton->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    addButton->setPopupMode(QToolButton::InstantPopup);
    addButton->setMenu(m_addMenu);
    addButton->setObjectName(QStringLiteral("addLayerButton"));
    toolbar->addWidget(addButton);
    // The common kinds one click away.
    for (const char* quick : { "conv2d", "relu", "maxpool2d", "linear" })
        toolbar->addAction(m_addActions.value(QString::fromLatin1(quick)));
    toolbar->addSeparator();
    toolbar->addActions(editActions());

    auto* scroll = new QScrollArea(this);
    scroll->setWidget(m_editor);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(m_view);
    splitter->addWidget(scroll);
    splitter->setStretchFactor(0, 2);
    splitter->setStretchFactor(1, 3);
    splitter->setChildrenCollapsible(false);
    splitter->setSizes({ 300, 520 });

    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    box->setSpacing(0);
    // What the network is: for trained weights the data, the command, the seed and the test accuracy. The first
    // line is always shown (a teacher reads the accuracy off it); the rest is the tooltip.
    m_about = new QLabel(this);
    m_about->setObjectName(QStringLiteral("networkDescription"));
    m_about->setWordWrap(true);
    m_about->setTextFormat(Qt::PlainText);
    m_about->setMinimumWidth(1);
    m_about->setContentsMargins(6, 4, 6, 4);
    // A palette role rather than a style sheet: a style-sheeted label keeps its font when presentation mode enlarges
    // the application's.
    m_about->setAutoFillBackground(true);
    m_about->setBackgroundRole(QPalette::AlternateBase);
    m_about->hide();
    box->addWidget(m_about);
    box->addWidget(toolbar);
    // An edit the document refused (removing a layer others read, a move past a layer's source): said here until
    // the next change.
    m_refusal = new QLabel(this);
    m_refusal->setObjectName(QStringLiteral("editRefused"));
    m_refusal->setWordWrap(true);
    m_refusal->setStyleSheet(QStringLiteral("QLabel { color: #b71c1c; background: #ffebee; padding: 4px; }"));
    m_refusal->hide();
    box->addWidget(m_refusal);
    box->addWidget(splitter, 1);
    connect(m_doc, &NetworkDocument::editRefused, this, [this](const QString& message) {
        m_refusal->setText(QStringLiteral("⚠ ") + message);
        m_refusal->show();
    });

    connect(m_view->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& i) {
        if (i.isValid())
            m_lastCurrent = i.row();
        m_editor->setLayerIndex(i.isValid() ? i.row() : -1);
        updateActions();
        Q_EMIT currentLayerChanged(i.isValid() ? i.row() : -1);
    });
    connect(m_doc, &NetworkDocument::networkChanged, this, [this](int select) {
        m_refusal->hide();
        const QString about = QString::fromStdString(m_doc->network().description).trimmed();
        m_about->setText(about.section(QLatin1Char('\n'), 0, 0));
        m_about->setToolTip(about);
        m_about->setVisible(!about.isEmpty());
        const int rows = m_model->rowCount();
        int want = select >= 0 ? select : (currentLayer() >= 0 ? currentLayer() : m_lastCurrent);
        if (want < 0 && rows > 0)
            want = 0;
        setCurrentLayer(std::min(want, rows - 1));
        updateActions();
    });
    updateActions();
}

QString NetworkPanel::aboutText() const { return m_about->isHidden() ? QString() : m_about->text(); }

QList<QAction*> NetworkPanel::editActions() const { return { m_remove, m_duplicate, m_up, m_down }; }

int NetworkPanel::currentLayer() const
{
    const QModelIndex i = m_view->currentIndex();
    return i.isValid() ? i.row() : -1;
}

void NetworkPanel::setCurrentLayer(int index)
{
    if (index < 0 || index >= m_model->rowCount()) {
        if (m_view->currentIndex().isValid())
            m_view->setCurrentIndex({});
        m_editor->setLayerIndex(-1);
        return;
    }
    if (currentLayer() != index)
        m_view->setCurrentIndex(m_model->index(index));
    m_editor->setLayerIndex(index);
}

void NetworkPanel::updateActions()
{
    const int i = currentLayer(), n = m_model->rowCount();
    m_remove->setEnabled(i >= 0);
    m_duplicate->setEnabled(i >= 0);
    m_up->setEnabled(i > 0);
    m_down->setEnabled(i >= 0 && i + 1 < n);
}

} // namespace convscope::gui
