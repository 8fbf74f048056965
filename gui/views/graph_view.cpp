#include "gui/views/graph_view.h"

#include "compute/layer_spec.h"
#include "gui/document/network_document.h"

#include <QAction>
#include <QComboBox>
#include <QFileDialog>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsView>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSvgGenerator>
#include <QToolBar>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <map>

namespace convscope::gui {

namespace {
    // Wheel zooms about the cursor, a drag pans, a click or double-click goes to the page.
    class GraphCanvas : public QGraphicsView {
    public:
        GraphCanvas(QGraphicsScene* scene, GraphView* page)
            : QGraphicsView(scene, page)
            , m_page(page)
        {
            setDragMode(QGraphicsView::ScrollHandDrag);
            setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
            setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
            setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
            setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
        }

        // A fixed hint: QGraphicsView's follows the scene, so every new layout changed the dock's hint and the
        // docks beside it (and the feature maps) moved.
        QSize sizeHint() const override { return { 240, 240 }; }

    protected:
        void wheelEvent(QWheelEvent* e) override
        {
            const double f = std::pow(1.0015, e->angleDelta().y());
            const double s = transform().m11() * f;
            if (s > 0.05 && s < 8)
                scale(f, f);
        }
        void mousePressEvent(QMouseEvent* e) override
        {
            m_pressAt = e->pos();
            QGraphicsView::mousePressEvent(e);
        }
        void mouseReleaseEvent(QMouseEvent* e) override
        {
            QGraphicsView::mouseReleaseEvent(e);
            if ((e->pos() - m_pressAt).manhattanLength() < 4) // a click, not the end of a pan
                m_page->clickAt(mapToScene(e->pos()), false);
        }
        void mouseDoubleClickEvent(QMouseEvent* e) override { m_page->clickAt(mapToScene(e->pos()), true); }

    private:
        GraphView* m_page;
        QPoint m_pressAt;
    };

    // Kinds by family, so a network's structure reads at a glance: convolutions blue, norms green, activations
    // yellow, pooling purple, joins grey, fully connected orange.
    QColor kindColour(const std::string& type)
    {
        auto has = [&](const char* s) { return type.find(s) != std::string::npos; };
        if (has("conv"))
            return QColor(0xa6, 0xc8, 0xe8);
        if (has("norm"))
            return QColor(0xb8, 0xe0, 0xb0);
        if (has("pool"))
            return QColor(0xd4, 0xc0, 0xe8);
        if (has("linear") || has("matmul"))
            return QColor(0xf8, 0xc8, 0x98);
        if (has("add") || has("concat") || has("mul"))
            return QColor(0xd8, 0xd8, 0xd8);
        if (has("relu") || has("sigmoid") || has("tanh") || has("elu") || has("swish") || has("silu") || has("softmax"))
            return QColor(0xf4, 0xe8, 0xa0);
        return QColor(0xee, 0xee, 0xee);
    }

    constexpr int kNodeMaxChars = 24;
} // namespace

GraphView::GraphView(const NetworkDocument* document, QWidget* parent)
    : QWidget(parent)
    , m_doc(document)
    , m_colourBox(new QComboBox(this))
    , m_message(new QLabel(this))
    , m_scene(new QGraphicsScene(this))
    , m_view(new GraphCanvas(m_scene, this))
{
    setObjectName(QStringLiteral("graphView"));
    m_colourBox->addItem(tr("kind"), int(Colour::Kind));
    m_colourBox->addItem(tr("time share"), int(Colour::TimeShare));
    m_colourBox->setToolTip(tr("Colour the nodes by layer kind, or by their share of the last run's time "
                               "(white: none, red: the slowest node)"));
    // A tool bar, not a row of buttons: in a narrow dock what does not fit goes behind its » menu instead of
    // widening the dock (and the window) to the row's width.
    auto* bar = new QToolBar(this);
    bar->setIconSize(QSize(16, 16));
    bar->addWidget(m_colourBox);
    QAction* expand = bar->addAction(tr("Expand"), this, &GraphView::expandAll);
    expand->setToolTip(tr("Expand every block (double-click a block to expand it, its frame to collapse it)"));
    QAction* collapse = bar->addAction(tr("Collapse"), this, &GraphView::collapseAll);
    collapse->setToolTip(tr("Collapse every name-scope block into one node"));
    bar->addAction(tr("Fit"), this, [this] { m_view->fitInView(m_scene->itemsBoundingRect(), Qt::KeepAspectRatio); });
    QAction* save = bar->addAction(tr("Export…"), this, &GraphView::exportAs);
    save->setToolTip(tr("Save the graph as SVG or PNG"));
    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(bar);
    box->addWidget(m_message);
    box->addWidget(m_view, 1);
    m_message->setWordWrap(true);
    m_message->setContentsMargins(6, 2, 6, 2);
    m_view->setObjectName(QStringLiteral("graphCanvas"));

    connect(m_colourBox, &QComboBox::currentIndexChanged, this, &GraphView::drawScene);
    connect(document, &NetworkDocument::networkChanged, this, &GraphView::onNetworkChanged);
    if (!layoutAvailable())
        m_message->setText(
            tr("No graph: %1. Install libgraphviz-dev and configure again.").arg(layoutUnavailableReason()));
    onNetworkChanged();
}

QString GraphView::message() const { return m_message->text(); }

void GraphView::showOutcome(RunOutcomePtr outcome, const QString&)
{
    if (outcome && outcome->live && m_outcome && !m_outcome->live)
        return; // a live preview's one pass says little about time shares: keep the last real run
    m_outcome = std::move(outcome);
    if (m_colourBox->currentData().toInt() == int(Colour::TimeShare))
        drawScene();
}

void GraphView::showLayer(int index)
{
    m_current = index;
    outline(index);
}

std::vector<std::string> GraphView::blocks() const
{
    std::vector<std::string> out;
    for (const auto& [scope, layers] : m_tree.members)
        out.push_back(scope);
    std::stable_sort(out.begin(), out.end(), [this](const std::string& a, const std::string& b) {
        return m_tree.members.at(a).front() < m_tree.members.at(b).front();
    });
    return out;
}

void GraphView::setCollapsed(const std::string& scope, bool collapsed)
{
    if (!m_tree.members.count(scope) || isCollapsed(scope) == collapsed)
        return;
    if (collapsed)
        m_collapsed.insert(scope);
    else
        m_collapsed.erase(scope);
    relayout();
}

void GraphView::expandAll()
{
    m_collapsed.clear();
    relayout();
}

void GraphView::collapseAll()
{
    for (const auto& [scope, layers] : m_tree.members)
        m_collapsed.insert(scope);
    relayout();
}

void GraphView::setColour(Colour c) { m_colourBox->setCurrentIndex(m_colourBox->findData(int(c))); }

void GraphView::onNetworkChanged()
{
    const Network& net = m_doc->network();
    std::vector<std::string> names;
    for (const auto& l : net.layers)
        names.push_back(l.name);
    m_tree = scopeTree(net);
    if (names != m_names) { // another network (or renamed layers): blocks start as its size asks
        m_names = std::move(names);
        m_collapsed.clear();
        if (int(net.layers.size()) > kCollapseAbove)
            for (const auto& [scope, layers] : m_tree.members)
                m_collapsed.insert(scope);
    }
    for (auto it = m_collapsed.begin(); it != m_collapsed.end();)
        it = m_tree.members.count(*it) ? std::next(it) : m_collapsed.erase(it);
    relayout();
}

// Which node stands for each layer, which clusters frame them, and the edges between nodes (one per pair).
void GraphView::relayout()
{
    m_nodes.clear();
    m_clusterScopes.clear();
    m_spec = GraphSpec();
    if (!layoutAvailable()) {
        m_scene->clear();
        return;
    }
    const Network& net = m_doc->network();
    const ShapeReport& shapes = m_doc->shapes();
    const QFontMetrics fm(font());
    std::map<std::string, int> clusterOf;
    auto clusterFor = [&](const std::vector<std::string>& chain, size_t upTo) {
        int parent = -1;
        for (size_t k = 0; k < upTo; ++k) {
            const auto [it, fresh] = clusterOf.try_emplace(chain[k], int(m_spec.clusters.size()));
            if (fresh) {
                m_spec.clusters.push_back({ parent, QString::fromStdString(scopeLabel(chain[k])) });
                m_clusterScopes.push_back(chain[k]);
            }
            parent = it->second;
        }
        return parent;
    };
    auto addNode = [&](Node n, const QStringList& lines, int cluster) {
        int w = 0;
        for (const QString& l : lines)
            w = std::max(w, fm.horizontalAdvance(l));
        m_spec.nodes.push_back({ QSizeF(w + 16, fm.height() * lines.size() + 8), cluster });
        n.text = lines.join(QLatin1Char('\n'));
        m_nodes.push_back(std::move(n));
        return int(m_nodes.size()) - 1;
    };
    const int inputNode
        = addNode(Node { -1, {}, {}, true, {} }, { tr("input"), QString::fromStdString(shapes.input.str()) }, -1);
    std::vector<int> nodeOf(net.layers.size(), -1);
    std::map<std::string, int> blockNode;
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const auto& chain = i < m_tree.chains.size() ? m_tree.chains[i] : std::vector<std::string>();
        size_t at = 0;
        while (at < chain.size() && !isCollapsed(chain[at]))
            ++at;
        const int cluster = clusterFor(chain, at);
        if (at < chain.size()) {
            const std::string& scope = chain[at];
            auto it = blockNode.find(scope);
            if (it == blockNode.end()) {
                const size_t count = m_tree.members.at(scope).size();
                const QString name = fm.elidedText(QStringLiteral("▸ ") + QString::fromStdString(scopeLabel(scope)),
                    Qt::ElideMiddle, fm.averageCharWidth() * kNodeMaxChars);
                it = blockNode
                         .emplace(scope,
                             addNode(Node { -1, scope, {}, false, {} },
                                 { name, tr("%n layer(s)", nullptr, int(count)) }, cluster))
                         .first;
            }
            m_nodes[size_t(it->second)].layers.push_back(i);
            nodeOf[i] = it->second;
            continue;
        }
        const QString name = fm.elidedText(
            QString::fromStdString(net.layers[i].name), Qt::ElideMiddle, fm.averageCharWidth() * kNodeMaxChars);
        nodeOf[i] = addNode(Node { int(i), {}, { i }, false, {} },
            { name, QString::fromStdString(layerTypeName(net.layers[i].spec)) }, cluster);
    }
    std::set<std::pair<int, int>> seen;
    for (size_t i = 0; i < net.layers.size(); ++i) {
        std::vector<int> sources;
        if (i < shapes.layers.size())
            sources = shapes.layers[i].sources;
        if (sources.empty())
            sources.push_back(int(i) - 1);
        for (int s : sources) {
            const int from = s < 0 ? inputNode : nodeOf[size_t(s)];
            const int to = nodeOf[i];
            if (from == to || !seen.insert({ from, to }).second)
                continue;
            const Shape* shape = s < 0                                            ? &shapes.input
                : size_t(s) < shapes.layers.size() && shapes.layers[size_t(s)].ok ? &shapes.layers[size_t(s)].out
                                                                                  : nullptr;
            m_spec.edges.push_back({ from, to, shape ? QString::fromStdString(shape->str()) : QString() });
        }
    }
    m_layout = layoutGraph(m_spec);
    if (!m_layout.ok)
        m_message->setText(m_layout.error);
    else
        m_message->setText(tr("%1 layers · %2 nodes · %3 blocks collapsed · dot layout %4 ms")
                               .arg(net.layers.size())
                               .arg(m_nodes.size())
                               .arg(m_collapsed.size())
                               .arg(m_layout.milliseconds, 0, 'f', 0));
    drawScene();
}

QColor GraphView::fillOf(const Node& n) const
{
    if (n.input)
        return QColor(0xff, 0xff, 0xff);
    if (m_colourBox->currentData().toInt() == int(Colour::TimeShare)) {
        const SelectionResult* sel = nullptr;
        if (m_outcome && m_outcome->network.sameDescription(m_doc->network()))
            for (const auto& s : m_outcome->result.selections)
                if (s.ok && !sel)
                    sel = &s;
        if (!sel)
            return QColor(0xf0, 0xf0, 0xf0);
        double total = 0, mine = 0;
        for (const auto& l : sel->layers) {
            total += l.computeMs.median;
            if (std::find(n.layers.begin(), n.layers.end(), l.index) != n.layers.end())
                mine += l.computeMs.median;
        }
        // White to red by share of the run's time, on a square-root scale so a 2 % layer still shows.
        const double share = total > 0 ? std::sqrt(std::clamp(mine / total, 0.0, 1.0)) : 0;
        return QColor::fromRgbF(1.0, 1.0 - 0.85 * share, 1.0 - 0.85 * share);
    }
    if (!n.block.empty())
        return QColor(0xe8, 0xe4, 0xd8);
    return kindColour(layerTypeName(m_doc->network().layers[size_t(n.layer)].spec));
}

void GraphView::drawScene()
{
    m_scene->clear();
    m_outlined = -1;
    if (!m_layout.ok)
        return;
    for (int c = 0; c < m_layout.clusterBoxes.size(); ++c) {
        auto* frame = m_scene->addRect(
            m_layout.clusterBoxes[c], QPen(QColor(0x90, 0x90, 0x90), 1, Qt::DashLine), QColor(0, 0, 0, 10));
        frame->setZValue(-2);
        frame->setToolTip(tr("%1 — double-click to collapse").arg(QString::fromStdString(m_clusterScopes[size_t(c)])));
        auto* label = m_scene->addSimpleText(m_spec.clusters[c].label, font());
        label->setBrush(QColor(0x60, 0x60, 0x60));
        label->setPos(m_layout.clusterBoxes[c].topLeft() + QPointF(4, 1));
        label->setZValue(-1);
    }
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.85);
    for (int e = 0; e < m_layout.edgePaths.size(); ++e) {
        const auto& p = m_layout.edgePaths[e];
        if (p.isEmpty())
            continue;
        QPainterPath path(p[0]);
        for (int k = 1; k + 2 < p.size(); k += 3)
            path.cubicTo(p[k], p[k + 1], p[k + 2]);
        const QPointF tip = m_layout.edgeArrowTips[e];
        if (!tip.isNull()) {
            path.lineTo(tip);
            const QPointF d = tip - p.last();
            const double len = std::hypot(d.x(), d.y());
            if (len > 0) {
                const QPointF u = d / len, n(-u.y(), u.x());
                QPolygonF head { tip, p.last() + n * 3.5, p.last() - n * 3.5 };
                m_scene->addPolygon(head, QPen(QColor(0x55, 0x55, 0x55)), QColor(0x55, 0x55, 0x55));
            }
        }
        m_scene->addPath(path, QPen(QColor(0x55, 0x55, 0x55), 1.1));
        if (!m_layout.edgeLabelCentres[e].isNull()) {
            auto* t = m_scene->addSimpleText(m_spec.edges[e].label, small);
            t->setBrush(QColor(0x30, 0x50, 0x90));
            t->setPos(m_layout.edgeLabelCentres[e] - t->boundingRect().center());
        }
    }
    for (size_t i = 0; i < m_nodes.size(); ++i) {
        const QSizeF sz = m_spec.nodes[int(i)].size;
        const QRectF r(m_layout.nodeCentres[int(i)] - QPointF(sz.width() / 2, sz.height() / 2), sz);
        const Node& n = m_nodes[i];
        auto* item = m_scene->addRect(r,
            QPen(n.block.empty() ? QColor(0x40, 0x40, 0x40) : QColor(0x80, 0x60, 0x20), n.block.empty() ? 1 : 1.6),
            fillOf(n));
        item->setData(0, int(i));
        if (!n.block.empty())
            item->setToolTip(tr("%1 — double-click to expand").arg(QString::fromStdString(n.block)));
        else if (n.layer >= 0)
            item->setToolTip(QString::fromStdString(m_doc->network().layers[size_t(n.layer)].name));
        auto* label = new QGraphicsSimpleTextItem(n.text, item);
        label->setFont(font());
        label->setPos(r.center() - label->boundingRect().center());
    }
    m_scene->setSceneRect(m_layout.bounds.adjusted(-20, -20, 20, 20));
    outline(m_current);
}

int GraphView::nodeOfLayer(int index) const
{
    for (size_t i = 0; i < m_nodes.size(); ++i)
        if (std::find(m_nodes[i].layers.begin(), m_nodes[i].layers.end(), size_t(index)) != m_nodes[i].layers.end())
            return int(i);
    return -1;
}

QPointF GraphView::nodeCentre(int node) const
{
    return node >= 0 && node < m_layout.nodeCentres.size() ? m_layout.nodeCentres[node] : QPointF();
}

void GraphView::outline(int layer)
{
    const int node = layer >= 0 ? nodeOfLayer(layer) : -1;
    for (QGraphicsItem* item : m_scene->items()) {
        auto* rect = qgraphicsitem_cast<QGraphicsRectItem*>(item);
        if (!rect || !rect->data(0).isValid())
            continue;
        const bool on = rect->data(0).toInt() == node;
        QPen pen = rect->pen();
        pen.setColor(on ? QColor(0xd0, 0x20, 0x20)
                        : (m_nodes[size_t(rect->data(0).toInt())].block.empty() ? QColor(0x40, 0x40, 0x40)
                                                                                : QColor(0x80, 0x60, 0x20)));
        pen.setWidthF(on ? 3 : (m_nodes[size_t(rect->data(0).toInt())].block.empty() ? 1 : 1.6));
        rect->setPen(pen);
        rect->setZValue(on ? 1 : 0);
        if (on)
            m_view->ensureVisible(rect, 30, 30);
    }
    m_outlined = node;
}

void GraphView::clickAt(QPointF scenePos, bool doubleClick)
{
    for (int i = 0; i < int(m_nodes.size()); ++i) {
        const QSizeF sz = m_spec.nodes[i].size;
        if (!QRectF(nodeCentre(i) - QPointF(sz.width() / 2, sz.height() / 2), sz).contains(scenePos))
            continue;
        const Node& n = m_nodes[size_t(i)];
        if (doubleClick && !n.block.empty())
            return setCollapsed(n.block, false);
        if (!n.layers.empty())
            Q_EMIT layerClicked(int(n.layers.front()));
        return;
    }
    if (!doubleClick)
        return;
    // A double-click in an expanded block's frame collapses the innermost one.
    for (int c = int(m_layout.clusterBoxes.size()) - 1; c >= 0; --c)
        if (m_layout.clusterBoxes[c].contains(scenePos))
            return setCollapsed(m_clusterScopes[size_t(c)], true);
}

QStringList GraphView::edgeLabels() const
{
    QStringList out;
    for (const auto& e : m_spec.edges)
        out << e.label;
    return out;
}

bool GraphView::exportSvg(const QString& path) const
{
    if (!m_layout.ok)
        return false;
    QSvgGenerator svg;
    svg.setFileName(path);
    const QRectF r = m_scene->sceneRect();
    svg.setSize(r.size().toSize());
    svg.setViewBox(QRectF(QPointF(0, 0), r.size()));
    svg.setTitle(QString::fromStdString(m_doc->network().name));
    QPainter p(&svg);
    m_scene->render(&p, QRectF(QPointF(0, 0), r.size()), r);
    return p.end();
}

bool GraphView::exportPng(const QString& path) const
{
    if (!m_layout.ok)
        return false;
    const QRectF r = m_scene->sceneRect();
    const double scale = std::min(2.0, 16000.0 / std::max(r.width(), r.height()));
    QImage image((r.size() * scale).toSize(), QImage::Format_ARGB32);
    image.fill(Qt::white);
    QPainter p(&image);
    p.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    m_scene->render(&p, QRectF(QPointF(0, 0), r.size() * scale), r);
    p.end();
    return image.save(path, "PNG");
}

void GraphView::exportAs()
{
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export the graph"), QStringLiteral("graph.svg"), tr("SVG (*.svg);;PNG (*.png)"));
    if (path.isEmpty())
        return;
    const bool ok = path.endsWith(QLatin1String(".png"), Qt::CaseInsensitive) ? exportPng(path) : exportSvg(path);
    if (!ok)
        m_message->setText(tr("Could not write %1").arg(path));
}

} // namespace convscope::gui
