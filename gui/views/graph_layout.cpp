#include "gui/views/graph_layout.h"

#include "convscope_config.h"

#include <QElapsedTimer>
#include <QStringList>

#if CONVSCOPE_WITH_GRAPHVIZ
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#endif

#include <memory>

namespace convscope::gui {

#if CONVSCOPE_WITH_GRAPHVIZ

namespace {
    // One Graphviz context for the process (it loads the layout plugins once); used on the GUI thread only.
    GVC_t* context()
    {
        static GVC_t* gvc = gvContext();
        return gvc;
    }

    char* cstr(const QByteArray& b) { return const_cast<char*>(b.constData()); }

    QString attr(void* obj, const char* name)
    {
        const char* v = agget(obj, const_cast<char*>(name));
        return v ? QString::fromUtf8(v) : QString();
    }

    QPointF point(const QString& xy, double top)
    {
        const QStringList p = xy.split(QLatin1Char(','));
        return p.size() >= 2 ? QPointF(p[0].toDouble(), top - p[1].toDouble()) : QPointF();
    }

    QRectF box(const QString& bb, double top)
    {
        const QStringList p = bb.split(QLatin1Char(','));
        if (p.size() < 4)
            return {};
        return QRectF(QPointF(p[0].toDouble(), top - p[3].toDouble()), QPointF(p[2].toDouble(), top - p[1].toDouble()));
    }

    // Graphviz wants inches; our sizes are points.
    QByteArray inches(double points) { return QByteArray::number(points / 72.0, 'f', 3); }
} // namespace

bool layoutAvailable() { return true; }
QString layoutUnavailableReason() { return {}; }

GraphLayout layoutGraph(const GraphSpec& spec)
{
    GraphLayout out;
    Agraph_t* g = agopen(cstr("network"), Agdirected, nullptr);
    const std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> closer(g, agclose);
    agattr(g, AGRAPH, cstr("rankdir"), cstr("TB"));
    agattr(g, AGRAPH, cstr("nodesep"), cstr("0.2"));
    agattr(g, AGRAPH, cstr("ranksep"), cstr("0.3"));
    agattr(g, AGRAPH, cstr("label"), cstr(""));
    agattr(g, AGRAPH, cstr("fontsize"), cstr("9"));
    agattr(g, AGNODE, cstr("shape"), cstr("box"));
    agattr(g, AGNODE, cstr("fixedsize"), cstr("true"));
    agattr(g, AGNODE, cstr("label"), cstr(""));
    Agsym_t* width = agattr(g, AGNODE, cstr("width"), cstr("1"));
    Agsym_t* height = agattr(g, AGNODE, cstr("height"), cstr("0.4"));
    Agsym_t* label = agattr(g, AGEDGE, cstr("label"), cstr(""));
    agattr(g, AGEDGE, cstr("fontsize"), cstr("8"));

    QVector<Agraph_t*> clusters;
    for (int c = 0; c < spec.clusters.size(); ++c) {
        Agraph_t* parent = spec.clusters[c].parent >= 0 ? clusters[spec.clusters[c].parent] : g;
        Agraph_t* sub = agsubg(parent, cstr("cluster_" + QByteArray::number(c)), 1);
        agsafeset(sub, cstr("label"), cstr(spec.clusters[c].label.toUtf8()), cstr(""));
        clusters << sub;
    }
    QVector<Agnode_t*> nodes;
    for (int i = 0; i < spec.nodes.size(); ++i) {
        Agnode_t* n = agnode(g, cstr("n" + QByteArray::number(i)), 1);
        agxset(n, width, cstr(inches(spec.nodes[i].size.width())));
        agxset(n, height, cstr(inches(spec.nodes[i].size.height())));
        if (spec.nodes[i].cluster >= 0)
            agsubnode(clusters[spec.nodes[i].cluster], n, 1);
        nodes << n;
    }
    QVector<Agedge_t*> edges;
    for (const auto& e : spec.edges) {
        Agedge_t* edge = agedge(g, nodes[e.from], nodes[e.to], nullptr, 1);
        if (!e.label.isEmpty())
            agxset(edge, label, cstr(e.label.toUtf8()));
        edges << edge;
    }

    QElapsedTimer timer;
    timer.start();
    if (gvLayout(context(), g, "dot") != 0) {
        out.error = QStringLiteral("Graphviz could not lay out the graph (is the dot layout plugin installed?)");
        return out;
    }
    out.milliseconds = double(timer.nsecsElapsed()) / 1e6;
    attach_attrs(g);
    const QRectF bb = box(attr(g, "bb"), 0);
    const double top = -bb.top(); // box() flipped y about 0: the graph's top is at -bb.top()
    out.bounds = box(attr(g, "bb"), top);
    for (Agnode_t* n : nodes)
        out.nodeCentres << point(attr(n, "pos"), top);
    for (Agedge_t* e : edges) {
        QVector<QPointF> path;
        QPointF tip;
        for (const QString& token : attr(e, "pos").split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            if (token.startsWith(QLatin1String("e,")))
                tip = point(token.mid(2), top);
            else if (!token.startsWith(QLatin1String("s,")))
                path << point(token, top);
        }
        out.edgePaths << path;
        out.edgeArrowTips << tip;
        const QString lp = attr(e, "lp");
        out.edgeLabelCentres << (lp.isEmpty() ? QPointF() : point(lp, top));
    }
    for (Agraph_t* c : clusters)
        out.clusterBoxes << box(attr(c, "bb"), top);
    gvFreeLayout(context(), g);
    out.ok = true;
    return out;
}

#else

bool layoutAvailable() { return false; }
QString layoutUnavailableReason() { return QStringLiteral(CONVSCOPE_GRAPHVIZ_WHY); }
GraphLayout layoutGraph(const GraphSpec&)
{
    GraphLayout out;
    out.error = layoutUnavailableReason();
    return out;
}

#endif

} // namespace convscope::gui
