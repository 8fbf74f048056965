// The PDF report: the HTML report's text part (tables, method, feature maps) laid out by QTextDocument on A4 pages,
// then every chart on the pages after it, drawn as vectors a text column wide. A chart is drawn at a size chosen so
// that its smallest text is 8 pt or more on the page (a chart drawn at 960 pixels and shrunk to the column had 4 pt
// text), and text is text, so no word is cut; the tables wrap at word boundaries only.
#include "gui/app/html_report.h"

#include <QAbstractTextDocumentLayout>
#include <QBuffer>
#include <QPainter>
#include <QPdfWriter>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextLayout>
#include <QUrl>

#include <algorithm>
#include <cmath>
#include <functional>

namespace convscope::gui {

namespace {
    // QCustomPlot lays its text out at 96 pixels to the inch: the page is laid out at that resolution too, so a
    // chart's pixel is 0.75 pt before it is scaled.
    constexpr int kPdfDpi = 96;
    constexpr double kPointsPerPixel = 72.0 / kPdfDpi;

    // A document whose lines break only between words (QTextDocument's default also breaks inside a word that does
    // not fit: "im2col_gem m").
    void wrapAtWords(QTextDocument& doc)
    {
        QTextOption option = doc.defaultTextOption();
        option.setWrapMode(QTextOption::WordWrap);
        doc.setDefaultTextOption(option);
    }
} // namespace

QSize pdfChartSize(double fontPoints, QSize preferred)
{
    // On the page a chart pixel is kPdfTextWidthPt / width points wide, and its text scales with it.
    const double widest = fontPoints > 0
        ? std::floor(fontPoints * kPdfTextWidthPt / kPdfMinChartFontPt / kPointsPerPixel)
        : preferred.width();
    const int width = std::max(1, std::min(preferred.width(), int(widest)));
    return { width, std::max(1, int(std::lround(double(preferred.height()) * width / preferred.width()))) };
}

double pdfChartFontPoints(const ReportChart& chart)
{
    return chart.logical.width() > 0 ? chart.fontPoints * kPdfTextWidthPt / (chart.logical.width() * kPointsPerPixel)
                                     : 0;
}

std::unique_ptr<QTextDocument> reportDocument(
    const RunOutcome& run, const ReportMaps& maps, const QString& origin, QPagedPaintDevice* page)
{
    auto doc = std::make_unique<QTextDocument>();
    doc->documentLayout()->setPaintDevice(page);
    wrapAtWords(*doc);
    for (int i = 0; i < maps.size(); ++i)
        doc->addResource(QTextDocument::ImageResource, QUrl(QStringLiteral("map%1.png").arg(i)), maps[i].image);
    QString html = reportHtml(run, {}, false, origin, maps);
    // Feature maps no wider than the column (the HTML caps them at 900 pixels).
    const QRectF paint = page->pageLayout().paintRectPixels(page->logicalDpiX());
    for (const ReportMap& m : maps)
        if (m.image.width() > paint.width())
            html.replace(QStringLiteral("width=\"%1\"").arg(std::min(900, m.image.width())),
                QStringLiteral("width=\"%1\"").arg(int(paint.width()) - 4));
    doc->setHtml(html);
    doc->setPageSize(paint.size());
    return doc;
}

namespace {
    // The report's pages on `painter`, `newPage` between two: the text part page by page (what QTextDocument::print
    // does, on a painter that goes on to draw the charts), then the charts, each under its title and caption, scaled
    // to the column's width; a new page when one does not fit. `device` is what the text is laid out for.
    void paintReport(QPainter& painter, const std::function<void()>& newPage, QTextDocument& doc,
        const ReportCharts& charts, QPaintDevice* device)
    {
        const QSizeF page = doc.pageSize();
        for (int p = 0; p < doc.pageCount(); ++p) {
            if (p > 0)
                newPage();
            painter.save();
            painter.translate(0, -p * page.height());
            doc.drawContents(&painter, QRectF(QPointF(0, p * page.height()), page));
            painter.restore();
        }
        double y = page.height(); // the charts start on a fresh page
        for (const ReportChart& chart : charts) {
            QTextDocument head;
            head.documentLayout()->setPaintDevice(device);
            wrapAtWords(head);
            const QString title = chart.text.section(QLatin1Char('\n'), 0, 0);
            const QString caption = chart.text.section(QLatin1Char('\n'), 1);
            head.setHtml(
                QStringLiteral("<h2 style=\"font-size:13pt\">%1</h2><p style=\"font-size:9pt;color:#555\">%2</p>")
                    .arg(title.toHtmlEscaped(),
                        caption.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"))));
            head.setTextWidth(page.width());
            const double scale = page.width() / std::max(1, chart.logical.width());
            const double height = head.size().height() + chart.logical.height() * scale + 12;
            if (y + height > page.height()) {
                newPage();
                y = 0;
            }
            painter.save();
            painter.translate(0, y);
            head.drawContents(&painter);
            painter.translate(0, head.size().height());
            painter.scale(scale, scale);
            painter.drawPicture(0, 0, chart.vector);
            painter.restore();
            y += height;
        }
    }

    void setUpPdf(QPdfWriter& pdf, const RunOutcome& run)
    {
        pdf.setTitle(QStringLiteral("ConvScope report: %1").arg(QString::fromStdString(run.result.networkName)));
        pdf.setCreator(QStringLiteral("ConvScope"));
        pdf.setPageSize(QPageSize(QPageSize::A4));
        pdf.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);
        pdf.setResolution(kPdfDpi);
    }
} // namespace

bool writePdfReport(
    QIODevice* out, const RunOutcome& run, const ReportCharts& charts, const QString& origin, const ReportMaps& maps)
{
    QPdfWriter pdf(out);
    setUpPdf(pdf, run);
    const std::unique_ptr<QTextDocument> doc = reportDocument(run, maps, origin, &pdf);
    QPainter painter;
    if (!painter.begin(&pdf))
        return false;
    paintReport(
        painter, [&pdf] { pdf.newPage(); }, *doc, charts, &pdf);
    return painter.end();
}

QList<QImage> reportPageImages(
    const RunOutcome& run, const ReportCharts& charts, const QString& origin, const ReportMaps& maps)
{
    QBuffer sink; // the text is laid out for the PDF's pages, as writePdfReport does
    sink.open(QIODevice::WriteOnly);
    QPdfWriter pdf(&sink);
    setUpPdf(pdf, run);
    const std::unique_ptr<QTextDocument> doc = reportDocument(run, maps, origin, &pdf);
    QList<QImage> pages;
    QPainter painter;
    auto next = [&] {
        if (painter.isActive())
            painter.end();
        pages << QImage(doc->pageSize().toSize(), QImage::Format_RGB32);
        pages.last().fill(Qt::white);
        painter.begin(&pages.last());
        painter.setRenderHint(QPainter::Antialiasing);
    };
    next();
    paintReport(painter, next, *doc, charts, &pdf);
    painter.end();
    return pages;
}

} // namespace convscope::gui
