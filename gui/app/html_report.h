// The report a person takes away, as HTML (self-contained: charts and feature maps embedded as base64 PNG) and as PDF
// (the same document laid out by QTextDocument on a QPdfWriter, the charts drawn as vectors after it: pdf_report.cpp):
// title, device and method, the shapes table, the timing table, the feature maps of the chosen layers
// (report_maps.cpp) and the charts. The device-and-method block is also what the Device panel shows.
#pragma once

#include "gui/document/engine.h"

#include <QImage>
#include <QList>
#include <QPicture>
#include <QSize>
#include <QString>

#include <memory>

class QIODevice;
class QPagedPaintDevice;
class QTextDocument;

namespace convscope::gui {

// A chart of the report: its title (first line) and caption (the rest); a picture for the HTML; for the PDF the same
// chart as vectors (text stays text) drawn at `logical` pixels, where its smallest text is `fontPoints` (at 96 px/in).
struct ReportChart {
    QString text;
    QImage image;
    QPicture vector;
    QSize logical;
    double fontPoints = 0;
};
using ReportCharts = QList<ReportChart>;

// A layer's feature maps in the report: what they are ("conv1 (layer 0) · cpu.direct · [1, 6, 28, 28]") and the grid.
struct ReportMap {
    QString title;
    QImage image;
};
using ReportMaps = QList<ReportMap>;

// The PDF's text column: A4 less 15 mm margins, laid out at 96 px/in (QCustomPlot measures its text at that
// resolution), and the least size of a chart's text on it.
constexpr double kPdfTextWidthPt = (210.0 - 30.0) / 25.4 * 72.0;
constexpr double kPdfMinChartFontPt = 8.0;
// The size to draw a chart at for the PDF: `preferred`, narrowed (same aspect) until its smallest text, `fontPoints` at
// 96 px/in, is at least kPdfMinChartFontPt once the chart is scaled to the text column's width.
QSize pdfChartSize(double fontPoints, QSize preferred);
// The smallest text of `chart` on the PDF page, in points.
double pdfChartFontPoints(const ReportChart& chart);

// The feature maps of `layers` as the report shows them: the first selection that kept that layer's output, batch item
// 0 (a volume's middle slice along D), its first 64 channels, as a grid like the window's.
ReportMaps reportMaps(const RunOutcome& run, const QList<int>& layers);

// Device and method of a run: CPU and threads, each selection's device, driver, CUDA and cuDNN versions,
// math mode, warm-ups, repeats, interleaving, reference and how time was taken.
QString methodHtml(const RunOutcome& run, const QString& origin = {});
// embedImages: data: URLs (a standalone .html); otherwise "chart<N>.png" and "map<N>.png" names for QTextDocument
// resources. Without charts, none is placed (the PDF draws them on pages of their own).
QString reportHtml(const RunOutcome& run, const ReportCharts& charts, bool embedImages, const QString& origin = {},
    const ReportMaps& maps = {});
// The PDF's text part (everything but the charts) laid out for `page`: words are never split across lines.
std::unique_ptr<QTextDocument> reportDocument(
    const RunOutcome& run, const ReportMaps& maps, const QString& origin, QPagedPaintDevice* page);
// The report as PDF: the text part, then the charts as vectors, each a text column wide, their text at 8 pt or more.
bool writePdfReport(QIODevice* out, const RunOutcome& run, const ReportCharts& charts, const QString& origin = {},
    const ReportMaps& maps = {});
// The same pages drawn as pictures at 96 px/in (the PDF's page less its margins), to look at or check.
QList<QImage> reportPageImages(
    const RunOutcome& run, const ReportCharts& charts, const QString& origin = {}, const ReportMaps& maps = {});

} // namespace convscope::gui
