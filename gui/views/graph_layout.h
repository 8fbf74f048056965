// A directed graph laid out by Graphviz's dot (libgvc + libcgraph), in points with y growing downwards as Qt draws.
// Nodes carry their size (we draw them; dot only places them), edges an optional label (a tensor shape), and
// clusters (the expanded name-scope blocks) nest. Without Graphviz, layoutAvailable() is false and says why.
#pragma once

#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <QVector>

namespace convscope::gui {

struct GraphSpec {
    struct Node {
        QSizeF size; // points
        int cluster = -1; // innermost cluster holding it; -1: none
    };
    struct Edge {
        int from = 0, to = 0;
        QString label;
    };
    struct Cluster {
        int parent = -1;
        QString label;
    };
    QVector<Node> nodes;
    QVector<Edge> edges;
    QVector<Cluster> clusters; // a parent comes before its children
};

struct GraphLayout {
    bool ok = false;
    QString error;
    QRectF bounds;
    QVector<QPointF> nodeCentres;
    QVector<QVector<QPointF>> edgePaths; // cubic Bézier control points: start, then (c1, c2, end) triples
    QVector<QPointF> edgeArrowTips; // where the arrow head ends (the target's border); null when none
    QVector<QPointF> edgeLabelCentres; // null when the edge has no label
    QVector<QRectF> clusterBoxes;
    double milliseconds = 0; // the dot layout alone
};

bool layoutAvailable();
QString layoutUnavailableReason();
GraphLayout layoutGraph(const GraphSpec& spec);

} // namespace convscope::gui
