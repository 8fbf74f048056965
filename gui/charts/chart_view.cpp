#include "gui/charts/chart_view.h"

#include <QBuffer>
#include <QLabel>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>

namespace convscope::gui {

ChartView::ChartView(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_caption(new QLabel(this))
    , m_controls(new QHBoxLayout)
{
    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    m_controls->setContentsMargins(4, 2, 4, 0);
    box->addLayout(m_controls);
    box->addWidget(m_caption);
    box->addWidget(m_plot, 1);
    m_caption->setWordWrap(true);
    m_caption->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_plot->setMinimumHeight(120);
    m_plot->legend->setFont(font());
    connect(m_plot, &QCustomPlot::beforeReplot, this, &ChartView::fitLegend);
}

// Before every replot (a resize included): an empty legend is hidden (an empty sweep drew a stray box), and a legend
// in a row of its own (the timing chart's) puts as many entries on a line as fit whole, then wraps, instead of
// squeezing every name into an equal share of the width ("cuda.implicit_g", "cudnn.a").
void ChartView::fitLegend()
{
    QCPLegend* legend = m_plot->legend;
    // itemCount() counts the grid's cells, empty ones too once the entries have wrapped: count the entries.
    int entries = 0, widest = 1;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i)) {
            ++entries;
            widest = std::max(widest, item->minimumOuterSizeHint().width());
        }
    if (entries == 0) {
        if (legend->visible()) {
            legend->setVisible(false);
            m_legendHidden = true;
        }
        return;
    }
    if (m_legendHidden) {
        legend->setVisible(true);
        m_legendHidden = false;
    }
    if (legend->layout() != m_plot->plotLayout())
        return;
    const QMargins m = legend->margins();
    const int room = m_plot->width() - m.left() - m.right() - 8;
    const int perRow = std::max(1, (room + legend->columnSpacing()) / (widest + legend->columnSpacing()));
    if (legend->wrap() != perRow) {
        legend->setWrap(perRow);
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
    }
}

QString ChartView::caption() const { return m_caption->text(); }
void ChartView::setCaption(const QString& text) { m_caption->setText(text); }

void ChartView::setPresentation(bool on)
{
    if (on == m_presentation)
        return;
    m_presentation = on;
    applyFonts();
    rebuild();
}

void ChartView::applyFonts()
{
    QFont f = font();
    if (m_presentation)
        f.setPointSizeF(f.pointSizeF() * 1.6);
    for (QCPAxis* a : m_plot->axisRect()->axes()) {
        a->setTickLabelFont(f);
        a->setLabelFont(f);
        QPen p = a->basePen();
        p.setWidthF(m_presentation ? 2 : 1);
        a->setBasePen(p);
    }
    m_plot->legend->setFont(f);
    // Back to the inherited font when presentation mode ends (an explicit copy kept the large size).
    QFont c = font();
    c.setPointSizeF(font().pointSizeF() * 1.4);
    m_caption->setFont(m_presentation ? c : QFont());
}

void ChartView::replot()
{
    ++m_replots;
    m_plot->replot();
}

QImage ChartView::toImage(QSize size) const { return m_plot->toPixmap(size.width(), size.height(), 1.0).toImage(); }

bool ChartView::writePng(QIODevice* out, QSize size) const { return toImage(size).save(out, "PNG"); }

bool ChartView::writeSvg(QIODevice* out, QSize size) const
{
    QSvgGenerator svg;
    svg.setOutputDevice(out);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle(chartTitle());
    svg.setDescription(QStringLiteral("ConvScope chart"));
    QCPPainter painter;
    if (!painter.begin(&svg))
        return false;
    m_plot->toPainter(&painter, size.width(), size.height());
    return painter.end();
}

QPicture ChartView::toPicture(QSize size) const
{
    QPicture picture;
    QCPPainter painter;
    if (!painter.begin(&picture))
        return picture;
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    m_plot->toPainter(&painter, size.width(), size.height());
    painter.end();
    return picture;
}

double ChartView::smallestFontPoints() const
{
    // What the plot draws: axes' tick labels and labels, the legend's entries, text items and titles.
    auto points = [](const QFont& f) { return f.pointSizeF() > 0 ? f.pointSizeF() : f.pixelSize() * 72.0 / 96.0; };
    double smallest = 1e9;
    for (QCPAxisRect* rect : m_plot->axisRects())
        for (QCPAxis* axis : rect->axes())
            if (axis->visible()) {
                if (axis->tickLabels())
                    smallest = std::min(smallest, points(axis->tickLabelFont()));
                if (!axis->label().isEmpty())
                    smallest = std::min(smallest, points(axis->labelFont()));
            }
    if (m_plot->legend && m_plot->legend->visible())
        for (int i = 0; i < m_plot->legend->itemCount(); ++i)
            if (QCPAbstractLegendItem* item = m_plot->legend->item(i))
                smallest = std::min(smallest, points(item->font()));
    for (int i = 0; i < m_plot->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(m_plot->item(i)); text && text->visible())
            smallest = std::min(smallest, points(text->font()));
    for (QCPLayoutElement* e : m_plot->plotLayout()->elements(true))
        if (auto* title = qobject_cast<QCPTextElement*>(e); title && title->visible())
            smallest = std::min(smallest, points(title->font()));
    return smallest < 1e9 ? smallest : points(font());
}

bool ChartView::writePdf(QIODevice* out, QSize size) const
{
    QPdfWriter pdf(out);
    pdf.setTitle(chartTitle());
    pdf.setCreator(QStringLiteral("ConvScope"));
    pdf.setResolution(96);
    pdf.setPageSize(QPageSize(QSizeF(size), QPageSize::Point));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    QCPPainter painter;
    if (!painter.begin(&pdf))
        return false;
    const QRect page = pdf.pageLayout().paintRectPixels(pdf.resolution());
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    painter.scale(double(page.width()) / size.width(), double(page.height()) / size.height());
    m_plot->toPainter(&painter, size.width(), size.height());
    return painter.end();
}

} // namespace convscope::gui
