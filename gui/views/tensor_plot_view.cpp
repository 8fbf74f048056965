#include "gui/views/tensor_plot_view.h"

#include <qcustomplot.h>

#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace convscope::gui {

namespace {
    // The finite range of some values ({0, 1} when there is none), made symmetric for a diverging map.
    QCPRange valueRange(const std::vector<float>& v, bool symmetric)
    {
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (const float x : v)
            if (std::isfinite(x)) {
                lo = std::min(lo, double(x));
                hi = std::max(hi, double(x));
            }
        if (lo > hi)
            return { 0, 1 };
        if (symmetric) {
            const double m = std::max(std::fabs(lo), std::fabs(hi));
            return { -m, m > 0 ? m : 1 };
        }
        return hi > lo ? QCPRange(lo, hi) : QCPRange(lo - 0.5, hi + 0.5);
    }
} // namespace

TensorPlotView::TensorPlotView(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_note(new QLabel(this))
    , m_messageLabel(new QLabel(this))
    , m_page(new QSpinBox(this))
    , m_pageRow(new QWidget(this))
{
    m_plot->setObjectName(QStringLiteral("tensorPlot"));
    m_note->setObjectName(QStringLiteral("tensorPlotNote"));
    m_note->setWordWrap(true);
    m_messageLabel->setAlignment(Qt::AlignCenter);
    m_messageLabel->setWordWrap(true);
    m_page->setObjectName(QStringLiteral("barsPage"));
    m_page->setPrefix(tr("page "));
    m_page->setMinimum(1);
    auto* pageLayout = new QHBoxLayout(m_pageRow);
    pageLayout->setContentsMargins(0, 0, 0, 0);
    pageLayout->addWidget(m_page);
    pageLayout->addStretch(1);

    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->setInterpolate(false); // cells stay cells: a value can be counted, as in the feature-map tiles
    m_xTicks = QSharedPointer<QCPAxisTickerFixed>::create(); // indices: whole numbers
    m_xTicks->setTickStep(1.0);
    m_xTicks->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_plot->xAxis->setTicker(m_xTicks);
    m_yTicks = QSharedPointer<QCPAxisTickerFixed>::create();
    m_yTicks->setTickStep(1.0);
    m_yTicks->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_scale = new QCPColorScale(m_plot);
    m_scale->setType(QCPAxis::atRight);
    m_map->setColorScale(m_scale);
    auto* margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    m_bars->setWidth(0.8);
    m_bars->setPen(Qt::NoPen);
    m_bars->setBrush(QColor(33, 102, 172));
    applyGradient();

    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(m_note);
    box->addWidget(m_pageRow);
    box->addWidget(m_plot, 1);
    box->addWidget(m_messageLabel, 1);
    connect(m_page, &QSpinBox::valueChanged, this, &TensorPlotView::showPage);
    connect(m_plot, &QCustomPlot::mouseMove, this, &TensorPlotView::onMouseMove);
    connect(m_plot, &QCustomPlot::afterLayout, this, &TensorPlotView::fitCells);
    clear(QString());
}

void TensorPlotView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() != QEvent::FontChange)
        return;
    for (QCPAxis* a : { m_plot->xAxis, m_plot->yAxis, m_scale->axis() }) {
        a->setLabelFont(font());
        a->setTickLabelFont(font());
    }
    makeCellLabels(); // in the plot's new font
    m_plot->replot();
}

void TensorPlotView::applyGradient()
{
    const ColorMap map(m_kind);
    QCPColorGradient g;
    g.clearColorStops();
    constexpr int kStops = 32;
    for (int i = 0; i <= kStops; ++i)
        g.setColorStopAt(double(i) / kStops, QColor::fromRgb(map.at(double(i) / kStops)));
    g.setLevelCount(256);
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(QColor(255, 0, 255)); // NaN shows, as in the tiles
    m_map->setGradient(g);
}

void TensorPlotView::setColorMap(ColorMapKind kind)
{
    if (kind == m_kind)
        return;
    m_kind = kind;
    applyGradient();
    if (m_mode == Mode::HeatMap)
        m_map->setDataRange(valueRange(m_heat.values, m_kind == ColorMapKind::Diverging && !m_heat.difference));
    m_plot->replot();
}

void TensorPlotView::makeCellLabels()
{
    for (QCPItemText* t : m_cellLabels)
        m_plot->removeItem(t);
    m_cellLabels.clear();
    constexpr int64_t kMaxLabels = 256;
    if (m_mode != Mode::HeatMap || m_heat.downsampled() || m_heat.rows * m_heat.cols > kMaxLabels)
        return;
    for (int64_t r = 0; r < m_heat.rows; ++r)
        for (int64_t c = 0; c < m_heat.cols; ++c) {
            auto* t = new QCPItemText(m_plot);
            t->position->setCoords(double(c), double(r));
            t->setText(QString::number(double(m_heat.at(r, c)), 'g', 3));
            t->setClipToAxisRect(true);
            QFont small = t->font();
            small.setPointSizeF(std::max(7.0, small.pointSizeF() - 1));
            t->setFont(small);
            m_cellLabels.push_back(t);
        }
}

// After each layout, before drawing: the cell labels show when every cell holds its text (three significant digits,
// else two, else two decimals), in black or white against the cell's colour.
void TensorPlotView::fitCells()
{
    if (m_mode != Mode::HeatMap)
        return;
    if (m_cellLabels.empty())
        return;
    const double cellWidth = std::fabs(m_plot->xAxis->coordToPixel(1) - m_plot->xAxis->coordToPixel(0));
    const double cellHeight = std::fabs(m_plot->yAxis->coordToPixel(1) - m_plot->yAxis->coordToPixel(0));
    const QFontMetrics fm(m_cellLabels.front()->font());
    const std::pair<char, int> formats[] = { { 'g', 3 }, { 'g', 2 }, { 'f', 2 } };
    const std::pair<char, int>* format = nullptr;
    for (const auto& f : formats) {
        bool fits = cellHeight >= fm.height() + 2;
        for (const float v : m_heat.values) {
            // Two decimals would print a small value as 0.00.
            fits = fits && (f.first != 'f' || v == 0 || std::fabs(v) >= 0.01f)
                && cellWidth >= fm.horizontalAdvance(QString::number(double(v), f.first, f.second)) + 4;
        }
        if (fits) {
            format = &f;
            break;
        }
    }
    QCPColorGradient g = m_map->gradient();
    for (size_t i = 0; i < m_cellLabels.size(); ++i) {
        const QColor bg = QColor::fromRgb(g.color(double(m_heat.values[i]), m_map->dataRange()));
        m_cellLabels[i]->setColor(bg.lightness() > 140 ? Qt::black : Qt::white);
        m_cellLabels[i]->setVisible(format != nullptr);
        if (format)
            m_cellLabels[i]->setText(QString::number(double(m_heat.values[i]), format->first, format->second));
    }
}

int TensorPlotView::cellLabelsShown() const
{
    return int(
        std::count_if(m_cellLabels.begin(), m_cellLabels.end(), [](const QCPItemText* t) { return t->visible(); }));
}

void TensorPlotView::clear(const QString& message)
{
    m_mode = Mode::None;
    makeCellLabels();
    m_heat = {};
    m_values.clear();
    m_message = message;
    m_messageLabel->setText(message);
    m_messageLabel->show();
    m_plot->hide();
    m_note->clear();
    m_note->hide();
    m_pageRow->hide();
}

void TensorPlotView::setHeatMap(HeatMapData data, const QString& rowAxis, const QString& colAxis)
{
    m_mode = Mode::HeatMap;
    m_heat = std::move(data);
    m_values.clear();
    m_rowAxis = rowAxis.section(QStringLiteral(" ("), 0, 0);
    m_colAxis = colAxis.section(QStringLiteral(" ("), 0, 0);
    m_message.clear();
    m_messageLabel->hide();
    m_pageRow->hide();
    m_plot->show();
    m_bars->setVisible(false);
    m_map->setVisible(true);
    if (m_plot->plotLayout()->elementCount() < 2)
        m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setVisible(true);

    // A single row or column is drawn as two half cells: QCustomPlot gives one cell of a dimension no width.
    const int64_t keys = std::max<int64_t>(2, m_heat.cols), values = std::max<int64_t>(2, m_heat.rows);
    // Cell k covers slice indices k·step … k·step + step − 1 (QCustomPlot spaces the cells evenly; a last, partial
    // block reaches past the slice's end, which the axis range leaves out).
    auto range = [](int64_t cells, int64_t step) {
        const double first = double(step - 1) / 2;
        if (cells <= 1)
            return QCPRange(first - 0.25 * double(step), first + 0.25 * double(step));
        return QCPRange(first, first + double((cells - 1) * step));
    };
    QCPColorMapData* d = m_map->data();
    d->setSize(int(keys), int(values));
    d->setRange(range(m_heat.cols, m_heat.colStep), range(m_heat.rows, m_heat.rowStep));
    for (int64_t y = 0; y < values; ++y)
        for (int64_t x = 0; x < keys; ++x)
            d->setCell(int(x), int(y), double(m_heat.at(std::min(y, m_heat.rows - 1), std::min(x, m_heat.cols - 1))));
    m_map->setDataRange(valueRange(m_heat.values, m_kind == ColorMapKind::Diverging && !m_heat.difference));
    makeCellLabels();
    m_scale->axis()->setLabel(m_heat.difference ? tr("|Δ| vs reference") : tr("value"));
    m_plot->xAxis->setLabel(colAxis);
    m_plot->yAxis->setLabel(rowAxis);
    m_plot->yAxis->setRangeReversed(true); // row 0 at the top, as in an image
    m_plot->yAxis->setTicker(m_yTicks);
    m_plot->xAxis->setRange(-0.5, double(m_heat.fullCols) - 0.5);
    m_plot->yAxis->setRange(-0.5, double(m_heat.fullRows) - 0.5);
    if (m_heat.downsampled()) {
        m_note->setText(tr("%1 × %2 shown as %3 × %4 cells: each cell the mean of %5 × %6 values (hover reads the "
                           "cell)")
                            .arg(m_heat.fullRows)
                            .arg(m_heat.fullCols)
                            .arg(m_heat.rows)
                            .arg(m_heat.cols)
                            .arg(m_heat.rowStep)
                            .arg(m_heat.colStep));
        m_note->show();
    } else {
        m_note->clear();
        m_note->hide();
    }
    m_plot->replot();
}

void TensorPlotView::setBars(std::vector<float> values, const QString& axis, bool difference)
{
    m_mode = Mode::Bars;
    m_heat = {};
    m_values = std::move(values);
    m_difference = difference;
    m_colAxis = axis.section(QStringLiteral(" ("), 0, 0);
    m_message.clear();
    m_messageLabel->hide();
    m_plot->show();
    m_map->setVisible(false);
    if (m_plot->plotLayout()->elementCount() > 1) {
        m_plot->plotLayout()->take(m_scale);
        m_plot->plotLayout()->simplify();
    }
    m_scale->setVisible(false);
    m_bars->setVisible(true);
    makeCellLabels();
    m_plot->xAxis->setLabel(axis);
    m_plot->yAxis->setLabel(difference ? tr("|Δ| vs reference") : tr("value"));
    m_plot->yAxis->setRangeReversed(false);
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create()); // values
    const int pages = int((int64_t(m_values.size()) + kBarsPerPage - 1) / kBarsPerPage);
    m_pageRow->setVisible(pages > 1);
    {
        const QSignalBlocker block(m_page);
        m_page->setMaximum(std::max(1, pages));
        m_page->setSuffix(tr(" of %1").arg(std::max(1, pages)));
    }
    showPage();
}

void TensorPlotView::showPage()
{
    if (m_mode != Mode::Bars)
        return;
    const int64_t n = int64_t(m_values.size());
    const int64_t first = std::min<int64_t>(int64_t(m_page->value() - 1) * kBarsPerPage, std::max<int64_t>(0, n - 1));
    const int64_t last = std::min<int64_t>(n, first + kBarsPerPage);
    QVector<double> keys, vals;
    std::vector<float> shown;
    for (int64_t i = first; i < last; ++i) {
        keys << double(i);
        const float v = m_values[size_t(i)];
        vals << (std::isfinite(v) ? double(v) : 0.0); // NaN and ±inf: read out, not drawn
        shown.push_back(v);
    }
    m_bars->setData(keys, vals, true);
    QCPRange y = valueRange(shown, false);
    y.lower = std::min(0.0, y.lower);
    y.upper = std::max(0.0, y.upper);
    m_plot->xAxis->setRange(double(first) - 0.5, double(std::max(first + 1, last)) - 0.5);
    const double margin = 0.05 * (y.upper - y.lower);
    m_plot->yAxis->setRange(y.lower < 0 ? y.lower - margin : 0.0, y.upper > 0 ? y.upper + margin : 0.0);
    if (n > kBarsPerPage) {
        m_note->setText(tr("elements %1–%2 of %3 (page %4 of %5)")
                            .arg(first)
                            .arg(last - 1)
                            .arg(n)
                            .arg(m_page->value())
                            .arg(m_page->maximum()));
        m_note->show();
    } else {
        m_note->clear();
        m_note->hide();
    }
    m_plot->replot();
}

QString TensorPlotView::note() const { return m_note->text(); }

QString TensorPlotView::readout(double key, double value) const
{
    const QString what = m_heat.difference || (m_mode == Mode::Bars && m_difference) ? tr("|Δ|") : tr("value");
    if (m_mode == Mode::Bars) {
        const int64_t i = std::llround(key);
        if (i < 0 || i >= int64_t(m_values.size()))
            return {};
        return tr("%1 %2 · %3 %4").arg(m_colAxis).arg(i).arg(what).arg(double(m_values[size_t(i)]), 0, 'g', 6);
    }
    if (m_mode != Mode::HeatMap)
        return {};
    const int64_t col = std::llround(key), row = std::llround(value);
    if (row < 0 || col < 0 || row >= m_heat.fullRows || col >= m_heat.fullCols)
        return {};
    const float v = m_heat.at(row / m_heat.rowStep, col / m_heat.colStep);
    QString text = tr("%1 %2 · %3 %4 · %5 %6")
                       .arg(m_rowAxis)
                       .arg(row)
                       .arg(m_colAxis)
                       .arg(col)
                       .arg(what)
                       .arg(double(v), 0, 'g', 6);
    if (m_heat.downsampled())
        text += tr(" (mean of the %1 × %2 block from %3, %4)")
                    .arg(m_heat.rowStep)
                    .arg(m_heat.colStep)
                    .arg(row / m_heat.rowStep * m_heat.rowStep)
                    .arg(col / m_heat.colStep * m_heat.colStep);
    return text;
}

void TensorPlotView::onMouseMove(QMouseEvent* event)
{
    const QPointF p = event->position();
    const QString text = readout(m_plot->xAxis->pixelToCoord(p.x()), m_plot->yAxis->pixelToCoord(p.y()));
    if (!text.isEmpty())
        Q_EMIT hovered(text);
}

} // namespace convscope::gui
