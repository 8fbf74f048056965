// The network as a graph, a page beside the layer list: layers as nodes placed by Graphviz's dot
// (gui/views/graph_layout.h), edges labelled with the tensor shape they carry, layers grouped by name scope
// (gui/document/name_scopes.h) into blocks that collapse into one node and expand into a framed cluster (collapsed by
// default above kCollapseAbove layers), nodes coloured by kind or by their share of the last run's time. Clicking a
// node makes its layer the document's current layer (the list, maps, shapes and charts follow); the current layer is
// outlined here. Wheel zooms, drag pans; the picture exports as SVG or PNG. Without Graphviz the page says why.
#pragma once

#include "gui/document/engine.h"
#include "gui/document/name_scopes.h"
#include "gui/pages/page.h"
#include "gui/views/graph_layout.h"

#include <QWidget>

#include <set>
#include <string>
#include <vector>

class QComboBox;
class QGraphicsScene;
class QGraphicsView;
class QLabel;

namespace convscope::gui {

class NetworkDocument;

class GraphView : public QWidget, public Page {
    Q_OBJECT
public:
    enum class Colour { Kind, TimeShare };
    static constexpr int kCollapseAbove = 60;
    explicit GraphView(const NetworkDocument* document, QWidget* parent = nullptr);

    void showOutcome(RunOutcomePtr outcome, const QString&) override;
    void showLayer(int index) override;

    // What is drawn, for tests and the user: one node per visible layer or collapsed block, plus the input.
    int nodeCount() const { return int(m_nodes.size()); }
    int edgeCount() const { return m_spec.edges.size(); }
    int clusterCount() const { return m_spec.clusters.size(); }
    QStringList edgeLabels() const;
    std::vector<std::string> blocks() const; // every scope that can collapse, outermost first
    bool isCollapsed(const std::string& scope) const { return m_collapsed.count(scope) > 0; }
    void setCollapsed(const std::string& scope, bool collapsed);
    void expandAll();
    void collapseAll();
    void setColour(Colour c);
    double lastLayoutMs() const { return m_layout.milliseconds; }
    bool hasLayout() const { return m_layout.ok; }
    QString message() const;
    // The node drawn for layer `index` (its collapsed block's when inside one); -1 when none.
    int nodeOfLayer(int index) const;
    QPointF nodeCentre(int node) const;
    int outlinedNode() const { return m_outlined; }
    QGraphicsView* view() const { return m_view; }
    bool exportSvg(const QString& path) const;
    bool exportPng(const QString& path) const;
    // Called by the view on a click or double-click at a scene point.
    void clickAt(QPointF scenePos, bool doubleClick);

Q_SIGNALS:
    void layerClicked(int layer);

private:
    struct Node {
        int layer = -1; // the layer drawn (-1: a block or the input)
        std::string block; // the collapsed scope drawn, when it is a block
        std::vector<size_t> layers; // the layers it stands for
        bool input = false;
        QString text; // drawn inside it
    };
    void onNetworkChanged();
    void relayout();
    void drawScene();
    QColor fillOf(const Node& n) const;
    void outline(int layer);
    void exportAs();

    const NetworkDocument* m_doc;
    RunOutcomePtr m_outcome;
    ScopeTree m_tree;
    std::vector<std::string> m_names; // the layer names the collapse state belongs to
    std::set<std::string> m_collapsed;
    std::vector<Node> m_nodes;
    std::vector<std::string> m_clusterScopes;
    GraphSpec m_spec;
    GraphLayout m_layout;
    int m_current = -1;
    int m_outlined = -1;
    QComboBox* m_colourBox;
    QLabel* m_message;
    QGraphicsScene* m_scene;
    QGraphicsView* m_view;
};

} // namespace convscope::gui
