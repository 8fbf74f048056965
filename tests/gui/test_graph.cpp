// Issue 31: the graph view — Graphviz's layout of a large network, blocks that collapse, selection shared with the
// layer list, exports.
#include "gui_helpers.h"

#include "compute/layer_spec.h"
#include "gui/charts/timing_chart.h"
#include "gui/pages/run_panel.h"
#include "gui/views/graph_view.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QDockWidget>
#include <QFileInfo>
#include <QGraphicsView>
#include <QTableView>
#include <QTemporaryDir>

#include <iostream>

#include <qcustomplot.h>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {

// A residual network of `stages` × `blocks` blocks of 7 layers named as PyTorch names them (stage1.0.conv1 …), with a
// skip add in each: 7·stages·blocks + 2 layers.
Network residualNetwork(int stages, int blocks)
{
    Network net;
    net.name = "residual";
    net.input = InputSpec { 1, 8, 8, 8, false, "random:1" };
    auto add = [&](const std::string& name, const std::string& type, std::vector<std::string> inputs = {}) {
        Layer l;
        l.name = name;
        l.spec = makeLayerSpec(type);
        l.inputs = std::move(inputs);
        net.layers.push_back(std::move(l));
    };
    add("stem", "relu");
    std::string last = "stem";
    for (int s = 1; s <= stages; ++s)
        for (int b = 0; b < blocks; ++b) {
            const std::string p = "stage" + std::to_string(s) + "." + std::to_string(b) + ".";
            add(p + "bn1", "identity", { last });
            add(p + "relu1", "relu");
            add(p + "bn2", "identity");
            add(p + "relu2", "relu");
            add(p + "bn3", "identity");
            add(p + "add", "add", { last, p + "bn3" });
            add(p + "relu3", "relu");
            last = p + "relu3";
        }
    add("head", "sigmoid");
    return net;
}

} // namespace

TEST_CASE("the graph view lays out a large network, collapses its blocks and shares the selection", "[gui][graph]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    GraphView* g = w->graphView();
    REQUIRE(g);
    if (!layoutAvailable()) {
        CHECK(g->message().contains(QStringLiteral("Graphviz")));
        WARN("SKIPPED: " << layoutUnavailableReason().toStdString());
        return;
    }
    const Network net = residualNetwork(4, 15); // 422 layers
    REQUIRE(net.layers.size() == 422);
    w->document()->reset(net, QString());
    REQUIRE(g->hasLayout());
    // Above 60 layers every block starts collapsed: the stem, the four stages, the head and the input.
    CHECK(g->nodeCount() == 7);
    std::cout << "graph layout, 422 layers collapsed (" << g->nodeCount() << " nodes): " << g->lastLayoutMs()
              << " ms\n";

    g->expandAll();
    CHECK(g->nodeCount() == 423); // every layer and the input
    CHECK(g->clusterCount() == 4 + 60);
    CHECK(g->edgeCount() == 422 + 60); // one into every layer, plus one skip per block
    CHECK(g->edgeLabels().contains(QStringLiteral("[1, 8, 8, 8]")));
    std::cout << "graph layout, 422 layers expanded (" << g->nodeCount() << " nodes, " << g->edgeCount()
              << " labelled edges, " << g->clusterCount() << " clusters): " << g->lastLayoutMs() << " ms\n";

    // Collapsing one block turns its 7 layers into one node; expanding it gives them back.
    g->setCollapsed("stage2.3", true);
    CHECK(g->nodeCount() == 423 - 6);
    g->setCollapsed("stage2.3", false);
    CHECK(g->nodeCount() == 423);
    g->collapseAll();
    g->setCollapsed("stage1", false); // its 15 blocks appear, still collapsed
    CHECK(g->nodeCount() == 7 - 1 + 15);

    SECTION("a click on a node selects its layer everywhere; the current layer is outlined in the graph")
    {
        g->expandAll();
        w->showView(QStringLiteral("graph"));
        QCoreApplication::processEvents();
        const int node = g->nodeOfLayer(9);
        REQUIRE(node > 0);
        g->view()->centerOn(g->nodeCentre(node));
        const QPoint at = g->view()->mapFromScene(g->nodeCentre(node));
        QTest::mouseClick(g->view()->viewport(), Qt::LeftButton, {}, at);
        CHECK(w->networkPanel()->currentLayer() == 9);
        CHECK(w->shapesView()->currentIndex().row() == 9);
        w->networkPanel()->setCurrentLayer(30);
        CHECK(g->outlinedNode() == g->nodeOfLayer(30));
        // Inside a collapsed block the block is outlined.
        g->setCollapsed("stage1.4", true);
        CHECK(g->outlinedNode() == g->nodeOfLayer(30));
        CHECK(g->nodeOfLayer(30) == g->nodeOfLayer(33));
    }
    SECTION("exports as SVG and PNG")
    {
        QTemporaryDir dir;
        const QString svg = dir.filePath(QStringLiteral("graph.svg")), png = dir.filePath(QStringLiteral("graph.png"));
        REQUIRE(g->exportSvg(svg));
        REQUIRE(g->exportPng(png));
        CHECK(QFileInfo(svg).size() > 1000);
        CHECK(QImage(png).width() > 100);
    }
}

TEST_CASE("a small network's graph is expanded; ResNet-18 starts with its blocks collapsed", "[gui][graph]")
{
    if (!layoutAvailable())
        return;
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
    CHECK(w->graphView()->nodeCount() == 1 + int(w->document()->network().layers.size()));
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "resnet18.json").string())));
    const int layers = int(w->document()->network().layers.size());
    CHECK(layers > GraphView::kCollapseAbove);
    CHECK(w->graphView()->nodeCount() < layers / 3);
    w->showView(QStringLiteral("graph"));
    maybeShoot(*w, "graph-resnet18-collapsed");
    w->graphView()->expandAll();
    CHECK(w->graphView()->nodeCount() == layers + 1);
    w->networkPanel()->setCurrentLayer(20);
    maybeShoot(*w, "graph-resnet18-expanded");
    if (const QByteArray dir = qgetenv("CONVSCOPE_TEST_SHOTS"); !dir.isEmpty())
        w->graphView()->exportPng(QString::fromLocal8Bit(dir) + QStringLiteral("/graph-resnet18-export.png"));
}

TEST_CASE("the timing chart of a 422-layer network lies horizontally, sums blocks, ranks the slowest and never "
          "overlaps its labels",
    "[gui][charts][timing]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    w->document()->reset(residualNetwork(4, 15), QString());
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "direct" }, { "cpu", "im2col_gemm" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    RunOutcomePtr o = waitForRun(*w, w->triggerRun());
    REQUIRE(o);
    w->showView(QStringLiteral("timing"));
    TimingChart* chart = w->timingChart();
    chart->redrawNow();
    chart->plot()->replot();
    CHECK(chart->horizontal());
    CHECK(chart->tickLabels().size() == 422);
    CHECK(chart->tickLabels().first() == QStringLiteral("stem"));
    // Only the rows that fit are shown, one label per row at most, each at least a text line apart.
    const auto [first, last] = chart->visibleRows();
    CHECK(first == 0);
    CHECK(last < 421);
    const int lineHeight = QFontMetrics(chart->plot()->yAxis->tickLabelFont()).height();
    const int rectHeight = chart->plot()->axisRect()->height();
    CHECK(chart->drawnLabels().size() * lineHeight <= 422 * lineHeight);
    CHECK((last - first + 1) * lineHeight <= rectHeight + lineHeight);
    chart->scrollToRow(300);
    CHECK(chart->visibleRows().first <= 300);
    CHECK(chart->visibleRows().second >= 300);

    // Blocks: each 7-layer block is one row holding the sum of its layers.
    chart->setRows(TimingChart::Rows::Blocks);
    CHECK(chart->tickLabels().size() == 62); // stem, 60 blocks, head
    CHECK(chart->tickLabels().contains(QStringLiteral("stage2.3 (7)")));
    const int row = int(chart->tickLabels().indexOf(QStringLiteral("stage2.3 (7)")));
    double sum = 0;
    for (const auto& l : o->result.selections[0].layers)
        if (o->network.layers[l.index].name.rfind("stage2.3.", 0) == 0)
            sum += l.computeMs.median;
    const auto series = chart->series(); // a copy: indexing the temporary would dangle
    const auto& s = series[0];
    const int at = int(s.keys.indexOf(double(row + 1)));
    REQUIRE(at >= 0);
    CHECK(s.values[at] == Approx(sum));

    // Top 20: upright again, slowest first.
    chart->setRows(TimingChart::Rows::Top);
    CHECK_FALSE(chart->horizontal());
    CHECK(chart->tickLabels().size() == TimingChart::kTopN);
    chart->plot()->replot();
    // A narrow dock: labels thinned, never more than fit side by side.
    w->dock(QStringLiteral("timing"))->setFloating(true);
    w->dock(QStringLiteral("timing"))->resize(260, 400);
    QCoreApplication::processEvents();
    chart->plot()->replot();
    const double slot = chart->plot()->axisRect()->width() / double(TimingChart::kTopN);
    INFO("axis " << chart->plot()->axisRect()->width() << " px, labels drawn " << chart->drawnLabels().size());
    CHECK(chart->drawnLabels().size() < TimingChart::kTopN); // thinned, not piled up
    CHECK(chart->drawnLabels().size() * std::min(slot, double(lineHeight)) <= chart->plot()->axisRect()->width() + 1);
}
