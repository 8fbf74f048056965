// Issue 31, reports: the HTML and PDF reports hold the feature maps of the chosen layers; the PDF's charts are vectors
// whose smallest text is 8 pt or more on the page, and no line of the report breaks inside a word.
#include "gui_helpers.h"

#include "gui/app/export_controller.h"
#include "gui/app/html_report.h"
#include "gui/charts/timing_chart.h"
#include "gui/pages/run_panel.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

#include <QBuffer>
#include <QFile>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QTextBlock>
#include <QTextBoundaryFinder>
#include <QTextDocument>
#include <QTextLayout>

#include <set>

using namespace convscope;
using namespace convscope::gui;
using namespace convscope::test;

namespace {

RunOutcomePtr runLeNet(MainWindow& w)
{
    w.runPanel()->setLiveEnabled(false);
    REQUIRE(w.project()->openFile(QString::fromStdString((examplesDir() / "lenet5.json").string())));
    REQUIRE(w.runPanel()->setSelections({ { "cpu", "direct" }, { "cpu", "im2col_gemm" } }));
    w.runPanel()->setWarmupRepeat(0, 1);
    RunOutcomePtr o = waitForRun(w, w.triggerRun());
    REQUIRE(o);
    w.timingChart()->redrawNow();
    return o;
}

QByteArray readAll(const QString& path)
{
    QFile f(path);
    REQUIRE(f.open(QIODevice::ReadOnly));
    return f.readAll();
}

int distinctColours(const QImage& image)
{
    std::set<QRgb> colours;
    for (int y = 0; y < image.height(); y += 3)
        for (int x = 0; x < image.width(); x += 3)
            colours.insert(image.pixel(x, y));
    return int(colours.size());
}

} // namespace

TEST_CASE("the HTML and PDF reports hold the feature maps of the layer on show", "[gui][export][report]")
{
    auto w = makeWindow();
    RunOutcomePtr o = runLeNet(*w);
    w->networkPanel()->setCurrentLayer(0);
    TempDir dir;
    const QString html = QString::fromUtf8([&] {
        const QString path = QString::fromStdString((dir.path / "r.html").string());
        REQUIRE(w->exporter()->exportReport(path));
        return readAll(path);
    }());
    CHECK(html.contains(QStringLiteral("<h2>Feature maps</h2>")));
    const QString title
        = QStringLiteral("%1 (layer 0) · cpu.direct · output %2")
              .arg(QString::fromStdString(o->network.layers[0].name), QStringLiteral("1×6×28×28 (N, C, H, W)"));
    CHECK(html.contains(title.toHtmlEscaped()));
    // The map is a PNG inside the file, a grid of the layer's channels in colour (not a blank picture).
    const QRegularExpression mapImg(
        QStringLiteral("<h3>[^<]*\\(layer 0\\)[^<]*</h3>\\n<p><img src=\"data:image/png;base64,([^\"]+)\""));
    const QRegularExpressionMatch m = mapImg.match(html);
    REQUIRE(m.hasMatch());
    const QImage map = QImage::fromData(QByteArray::fromBase64(m.captured(1).toLatin1()), "PNG");
    REQUIRE_FALSE(map.isNull());
    CHECK(map.width() == 880);
    CHECK(distinctColours(map) > 20);

    // The maps the report holds are those of the layers asked for, from the first selection that kept them.
    const ReportMaps maps = reportMaps(*o, { 2, 99 });
    REQUIRE(maps.size() == 1);
    CHECK(maps[0].title.startsWith(QString::fromStdString(o->network.layers[2].name) + QStringLiteral(" (layer 2)")));

    // The PDF holds them too (as pictures on its first pages).
    const QString pdfPath = QString::fromStdString((dir.path / "r.pdf").string());
    REQUIRE(w->exporter()->exportReport(pdfPath));
    CHECK(readAll(pdfPath).startsWith("%PDF-"));
    const QList<QImage> pages = reportPageImages(*o, {}, {}, maps);
    REQUIRE_FALSE(pages.isEmpty());
    CHECK(std::abs(pages[0].width() - 680) <= 1); // A4 less 15 mm margins at 96 px/in
}

TEST_CASE("a report's timing chart of a large network shows its slowest layers, and the page is left as it was",
    "[gui][export][report]")
{
    auto w = makeWindow();
    w->runPanel()->setLiveEnabled(false);
    REQUIRE(w->project()->openFile(QString::fromStdString((examplesDir() / "resnet18.json").string())));
    // Only the number of layers matters here: ResNet-18 on 64² instead of its 224² (a twelfth of the work; the 224²
    // run and its reference took 29 s of the asan preset's tests).
    Network net = w->document()->network();
    net.input.height = net.input.width = 64;
    w->document()->reset(net, QString());
    REQUIRE(w->document()->network().layers.size() > size_t(TimingChart::kHorizontalAbove));
    REQUIRE(w->runPanel()->setSelections({ { "cpu", "tap_gemm" } }));
    w->runPanel()->setWarmupRepeat(0, 1);
    REQUIRE(waitForRun(*w, w->triggerRun(), 120000));
    TimingChart* chart = w->timingChart();
    chart->redrawNow();
    REQUIRE(chart->rows() == TimingChart::Rows::Layers);
    const ReportChart r = ExportController::reportChart(chart);
    CHECK(r.text.contains(QStringLiteral("slowest")));
    CHECK(chart->rows() == TimingChart::Rows::Layers); // the page as it was
    CHECK(chart->tickLabels().size() > TimingChart::kTopN);
}

TEST_CASE("the PDF report's charts have 8 pt text or more, and no line breaks inside a word", "[gui][export][report]")
{
    auto w = makeWindow();
    RunOutcomePtr o = runLeNet(*w);
    const ReportChart chart = ExportController::reportChart(w->timingChart());
    // Its smallest text is the chart's own font; drawn narrower than the picture so that it is ≥ 8 pt on the page.
    CHECK(chart.fontPoints == Approx(w->timingChart()->smallestFontPoints()));
    CHECK(chart.fontPoints > 4);
    CHECK(pdfChartFontPoints(chart) >= kPdfMinChartFontPt);
    CHECK(pdfChartFontPoints(chart) < kPdfMinChartFontPt + 0.5); // and as wide as that allows
    CHECK(chart.logical.width() * 480 == Approx(chart.logical.height() * 960).margin(960));
    CHECK_FALSE(chart.vector.isNull());
    // The arithmetic: a 960-pixel chart with 9 pt text shrunk to the 510-pt column had 6.4 pt text.
    CHECK(pdfChartSize(9, QSize(960, 480)).width() == 765);
    ReportChart wide;
    wide.logical = QSize(960, 480);
    wide.fontPoints = 9;
    CHECK(pdfChartFontPoints(wide) == Approx(9 * kPdfTextWidthPt / 720));

    // The pages: the text part, then the chart on a page of its own, drawn (not blank).
    const QList<QImage> pages = reportPageImages(*o, { chart });
    REQUIRE(pages.size() >= 2);
    CHECK(distinctColours(pages.last()) > 10);
    if (const QByteArray shots = qgetenv("CONVSCOPE_TEST_SHOTS"); !shots.isEmpty())
        for (int i = 0; i < pages.size(); ++i)
            pages[i].save(QString::fromLocal8Bit(shots) + QStringLiteral("/report-page%1.png").arg(i));

    // The text part breaks lines only where a line may break, and some cells did wrap.
    QBuffer sink;
    sink.open(QIODevice::WriteOnly);
    QPdfWriter pdf(&sink);
    pdf.setPageSize(QPageSize(QPageSize::A4));
    pdf.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);
    pdf.setResolution(96);
    const auto doc = reportDocument(*o, {}, {}, &pdf);
    int wrapped = 0;
    for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
        // Tables' cells are frames: walk every block of the document, cells included.
        const QTextLayout* layout = b.layout();
        const QString text = b.text();
        QTextBoundaryFinder lineBreaks(QTextBoundaryFinder::Line, text);
        for (int i = 0; i + 1 < layout->lineCount(); ++i) {
            const int end = layout->lineAt(i).textStart() + layout->lineAt(i).textLength();
            lineBreaks.setPosition(end);
            INFO(text.toStdString() << " broken at " << end);
            CHECK(lineBreaks.isAtBoundary());
            // Between words: a line ends with the space before the next word (never "0." | "0015").
            CHECK(text.at(end - 1).isSpace());
            ++wrapped;
        }
    }
    CHECK(wrapped > 0);
    CHECK(doc->defaultTextOption().wrapMode() == QTextOption::WordWrap);
}
