#include "gui/charts/timing_chart.h"

#include "compute/nvtx.h"
#include "gui/document/name_scopes.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollBar>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace convscope::gui {

namespace {
    // The backend's NVTX colour (one hue per backend: cpu blue, cuda green, cudnn orange, onednn purple); a second,
    // third… algorithm of the same backend keeps the hue at a clearly different lightness, so four CPU selections
    // read as four blues that differ, not four copies of one.
    QColor colorFor(const std::string& backend, int nth)
    {
        const QColor base = QColor::fromRgba(nvtx::backendColor(backend));
        if (nth == 0)
            return base;
        static const double lightness[] = { 0.72, 0.30, 0.84, 0.20, 0.60 };
        QColor c = base.toHsl();
        c.setHslF(c.hslHueF(), std::min(1.0, c.hslSaturationF() * 1.1), lightness[(nth - 1) % 5]);
        return c.toRgb();
    }

    double gflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e6) : 0; }
} // namespace

TimingChart::TimingChart(QWidget* parent)
    : ChartView(parent)
    , m_metricBox(new QComboBox(this))
    , m_logBox(new QCheckBox(tr("Log"), this))
    , m_breakdownBox(new QCheckBox(tr("Copies"), this))
    , m_baselineBox(new QComboBox(this))
    , m_rowsBox(new QComboBox(this))
    , m_scroll(new QScrollBar(Qt::Vertical, this))
{
    m_rowsBox->setObjectName(QStringLiteral("timingRows"));
    m_rowsBox->addItem(tr("layers"), int(Rows::Layers));
    m_rowsBox->addItem(tr("blocks"), int(Rows::Blocks));
    m_rowsBox->addItem(tr("top %1").arg(kTopN), int(Rows::Top));
    m_rowsBox->setToolTip(tr("Every layer; the name-scope blocks (layer1.0, /inception3a/…) with the sum of their "
                             "layers; or the %1 slowest layers, slowest first")
                              .arg(kTopN));
    m_metricBox->setObjectName(QStringLiteral("timingMetric"));
    m_metricBox->addItem(tr("ms"), int(Metric::Time));
    m_metricBox->addItem(tr("GFLOP/s"), int(Metric::Gflops));
    m_metricBox->addItem(tr("speed-up vs"), int(Metric::Speedup));
    m_metricBox->setToolTip(tr("Median compute time per layer, the rate it reaches, or how many times faster it is "
                               "than a baseline selection"));
    // The dock must fit beside the feature maps on a 1366-pixel screen: combo boxes shrink to a few letters.
    for (QComboBox* c : { m_metricBox, m_baselineBox, m_rowsBox }) {
        c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        c->setMinimumContentsLength(4);
    }
    m_logBox->setToolTip(tr("Logarithmic value axis"));
    m_logBox->setObjectName(QStringLiteral("timingLog"));
    m_breakdownBox->setObjectName(QStringLiteral("timingBreakdown"));
    m_breakdownBox->setToolTip(
        tr("Copies and compute: one stacked bar per selection: host→device copy, compute of every layer, "
           "device→host copy (medians of one pass)"));
    m_baselineBox->setObjectName(QStringLiteral("timingBaseline"));
    m_baselineBox->setEnabled(false);
    // Shown only with "speed-up vs": the row of switches stays narrow enough for a laptop's dock.
    m_baselineBox->setVisible(false);
    m_controls->addWidget(m_rowsBox);
    m_controls->addWidget(m_metricBox);
    m_controls->addWidget(m_baselineBox);
    m_controls->addWidget(m_logBox);
    m_controls->addWidget(m_breakdownBox);
    m_controls->addStretch(1);
    connect(m_metricBox, &QComboBox::currentIndexChanged, this, [this] {
        m_baselineBox->setEnabled(metric() == Metric::Speedup);
        m_baselineBox->setVisible(metric() == Metric::Speedup);
        redrawNow();
    });
    connect(m_baselineBox, &QComboBox::currentIndexChanged, this, [this] {
        if (metric() == Metric::Speedup)
            redrawNow();
    });
    connect(m_rowsBox, &QComboBox::currentIndexChanged, this, &TimingChart::redrawNow);
    connect(m_logBox, &QCheckBox::toggled, this, &TimingChart::redrawNow);
    connect(m_breakdownBox, &QCheckBox::toggled, this, &TimingChart::redrawNow);

    setCaption(tr("Run a network to see the time of each layer."));
    // The legend sits in a row above the plot, one entry beside the other, so it never hides a bar.
    m_plot->legend->setVisible(true);
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, m_plot->legend);
    m_plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_plot->legend->setBorderPen(Qt::NoPen);
    m_plot->plotLayout()->setRowStretchFactor(0, 0.001);
    m_plot->xAxis->setLabel(tr("layer"));
    m_throttle.setSingleShot(true);
    m_throttle.setInterval(40);
    connect(&m_throttle, &QTimer::timeout, this, &TimingChart::redraw);
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        if (breakdown() || !m_plot->axisRect()->rect().contains(e->pos()))
            return;
        const int layer = layerAt(m_horizontal ? e->position().y() : e->position().x());
        if (layer >= 0)
            Q_EMIT layerClicked(layer);
    });

    // The scroll bar sits at the plot's right, shown only while the rows lie horizontally and do not all fit.
    if (auto* box = qobject_cast<QVBoxLayout*>(layout())) {
        const int at = box->indexOf(m_plot);
        box->removeWidget(m_plot);
        auto* row = new QHBoxLayout;
        row->setSpacing(0);
        row->addWidget(m_plot, 1);
        row->addWidget(m_scroll);
        box->insertLayout(at, row, 1);
    }
    m_scroll->setObjectName(QStringLiteral("timingScroll"));
    m_scroll->hide();
    connect(m_scroll, &QScrollBar::valueChanged, this, [this] {
        if (m_horizontal)
            m_plot->replot(QCustomPlot::rpQueuedReplot);
    });
    connect(m_plot, &QCustomPlot::afterLayout, this, &TimingChart::layoutRows);
    connect(m_plot, &QCustomPlot::mouseWheel, this, [this](QWheelEvent* e) {
        if (!m_horizontal)
            return;
        const int steps = e->angleDelta().y() / 120;
        if (e->modifiers() & Qt::ControlModifier) {
            const int h = QFontMetrics(m_plot->yAxis->tickLabelFont()).height();
            m_rowPx = std::clamp(m_rowPx + 2 * steps, 3, 4 * h);
            m_plot->replot(QCustomPlot::rpQueuedReplot);
        } else
            m_scroll->setValue(m_scroll->value() - 3 * steps);
    });
}

QString TimingChart::chartTitle() const { return tr("Time per layer"); }

void TimingChart::setRun(RunOutcomePtr run)
{
    const bool sameSelections = m_run && run && m_run->result.selections.size() == run->result.selections.size();
    m_run = std::move(run);
    if (!sameSelections)
        rebuildBaselines();
    scheduleRedraw();
}

void TimingChart::rebuildBaselines()
{
    const QString previous = m_baselineBox->currentText();
    QSignalBlocker block(m_baselineBox);
    m_baselineBox->clear();
    if (m_run)
        for (const auto& s : m_run->result.selections)
            if (s.ok)
                m_baselineBox->addItem(QString::fromStdString(s.selection.str()));
    // cpu.direct is the natural baseline ("how much faster than the textbook loops").
    int i = m_baselineBox->findText(previous);
    if (i < 0)
        i = m_baselineBox->findText(QStringLiteral("cpu.direct"));
    m_baselineBox->setCurrentIndex(std::max(0, i));
}

void TimingChart::scheduleRedraw()
{
    if (!m_throttle.isActive())
        m_throttle.start();
}

void TimingChart::setRows(Rows r) { m_rowsBox->setCurrentIndex(m_rowsBox->findData(int(r))); }
TimingChart::Rows TimingChart::rows() const { return Rows(m_rowsBox->currentData().toInt()); }

std::pair<int, int> TimingChart::visibleRows() const
{
    if (!m_horizontal)
        return { 0, int(m_rowList.size()) - 1 };
    const QCPRange r = m_plot->yAxis->range();
    return { std::max(0, int(std::ceil(r.lower - 0.5))), std::min(int(m_rowList.size()), int(r.upper - 0.5)) - 1 };
}

void TimingChart::scrollToRow(int row)
{
    if (!m_horizontal)
        return;
    const auto [first, last] = visibleRows();
    if (row < first)
        m_scroll->setValue(row);
    else if (row > last)
        m_scroll->setValue(row - (last - first));
    m_plot->replot();
}

void TimingChart::showLayer(int index)
{
    m_currentLayer = index;
    for (size_t row = 0; row < m_rowList.size(); ++row)
        for (size_t i : m_rowList[row].layers)
            if (int(i) == index)
                return scrollToRow(int(row));
}

void TimingChart::setMetric(Metric m) { m_metricBox->setCurrentIndex(m_metricBox->findData(int(m))); }
TimingChart::Metric TimingChart::metric() const { return Metric(m_metricBox->currentData().toInt()); }
void TimingChart::setLogScale(bool on) { m_logBox->setChecked(on); }
bool TimingChart::logScale() const { return m_logBox->isChecked(); }
void TimingChart::setBreakdown(bool on) { m_breakdownBox->setChecked(on); }
bool TimingChart::breakdown() const { return m_breakdownBox->isChecked(); }
void TimingChart::setBaseline(const QString& selection)
{
    const int i = m_baselineBox->findText(selection);
    if (i >= 0)
        m_baselineBox->setCurrentIndex(i);
}

int TimingChart::barSeriesCount() const
{
    int n = 0;
    for (int i = 0; i < m_plot->plottableCount(); ++i)
        n += qobject_cast<QCPBars*>(m_plot->plottable(i)) ? 1 : 0;
    return n;
}

QStringList TimingChart::tickLabels() const { return m_ticks; }

int TimingChart::layerAt(double pixel) const
{
    if (!m_run)
        return -1;
    const double key = (m_horizontal ? m_plot->yAxis : m_plot->xAxis)->pixelToCoord(pixel);
    const int row = int(std::lround(key)) - 1;
    if (std::fabs(key - (row + 1)) > 0.5 || row < 0 || size_t(row) >= m_rowList.size()
        || m_rowList[size_t(row)].layers.empty())
        return -1;
    return int(m_rowList[size_t(row)].layers.front()); // a block selects its first layer
}

void TimingChart::redrawNow()
{
    m_throttle.stop();
    redraw();
}

void TimingChart::redraw()
{
    m_plot->clearPlottables();
    m_series.clear();
    m_ticks.clear();
    m_rowList.clear();
    m_horizontal = false;
    if (!m_run) {
        m_scroll->hide();
        m_drawnLabels.clear();
        for (QCPAxis* a : { m_plot->xAxis, m_plot->yAxis }) {
            a->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
            a->setRangeReversed(false);
            a->setTickLabelRotation(0);
            a->setLabel(QString());
        }
        replot();
        return;
    }
    if (breakdown())
        drawBreakdown();
    else
        drawLayers();
}

void TimingChart::buildRows()
{
    const Network& net = m_run->network;
    const Rows mode = rows();
    if (mode == Rows::Blocks) {
        const ScopeTree tree = scopeTree(net);
        std::map<std::string, size_t> rowOf;
        for (size_t i = 0; i < net.layers.size(); ++i) {
            const std::string block = blockOf(tree, i);
            if (block.empty()) {
                m_rowList.push_back({ QString::fromStdString(net.layers[i].name), { i } });
                continue;
            }
            const auto [it, fresh] = rowOf.try_emplace(block, m_rowList.size());
            if (fresh)
                m_rowList.push_back({ QString::fromStdString(block), {} });
            m_rowList[it->second].layers.push_back(i);
        }
        for (Row& row : m_rowList)
            if (row.layers.size() > 1)
                row.label += QStringLiteral(" (%1)").arg(row.layers.size());
        return;
    }
    for (size_t i = 0; i < net.layers.size(); ++i)
        m_rowList.push_back({ QString::fromStdString(net.layers[i].name), { i } });
    if (mode == Rows::Top) {
        // The slowest first, by the largest median any selection took.
        std::vector<double> worst(net.layers.size(), 0);
        for (const auto& sel : m_run->result.selections)
            if (sel.ok)
                for (const auto& l : sel.layers)
                    if (l.index < worst.size())
                        worst[l.index] = std::max(worst[l.index], l.computeMs.median);
        std::stable_sort(m_rowList.begin(), m_rowList.end(),
            [&](const Row& a, const Row& b) { return worst[a.layers[0]] > worst[b.layers[0]]; });
        if (m_rowList.size() > size_t(kTopN))
            m_rowList.resize(size_t(kTopN));
    }
}

void TimingChart::drawLayers()
{
    const RunResult& r = m_run->result;
    const Metric m = metric();
    const bool log = logScale();
    buildRows();
    m_horizontal = int(m_rowList.size()) > kHorizontalAbove;
    QCPAxis* keyAxis = m_horizontal ? m_plot->yAxis : m_plot->xAxis;
    QCPAxis* valueAxis = m_horizontal ? m_plot->xAxis : m_plot->yAxis;
    const SelectionResult* base = nullptr;
    if (m == Metric::Speedup)
        for (const auto& s : r.selections)
            if (s.ok && QString::fromStdString(s.selection.str()) == m_baselineBox->currentText())
                base = &s;
    // Bars of one row side by side with no gap between them, so the group spans exactly 0.8 of a row and the first
    // one never reaches under the axis.
    auto* group = new QCPBarsGroup(m_plot);
    group->setSpacingType(QCPBarsGroup::stPlotCoords);
    group->setSpacing(0);
    int okCount = 0;
    for (const auto& sel : r.selections)
        okCount += sel.ok ? 1 : 0;
    const double width = 0.8 / std::max(1, okCount);
    double maxValue = 0, minPositive = 1e300;
    std::map<std::string, int> perBackend;
    const size_t layerCount = m_run->network.layers.size();
    auto byIndex = [layerCount](const SelectionResult* sel) {
        std::vector<const LayerResult*> at(layerCount, nullptr);
        if (sel)
            for (const auto& l : sel->layers)
                if (l.index < layerCount)
                    at[l.index] = &l;
        return at;
    };
    const std::vector<const LayerResult*> baseAt = byIndex(base);
    for (const auto& sel : r.selections) {
        if (!sel.ok)
            continue;
        const std::vector<const LayerResult*> at = byIndex(&sel);
        Series s;
        s.name = QString::fromStdString(sel.selection.str());
        for (size_t row = 0; row < m_rowList.size(); ++row) {
            double med = 0, mn = 0, mx = 0, flops = 0, b = 0;
            bool any = false;
            for (size_t i : m_rowList[row].layers) {
                if (!at[i])
                    continue;
                any = true;
                med += at[i]->computeMs.median;
                mn += at[i]->computeMs.min;
                mx += at[i]->computeMs.max;
                flops += i < r.shapes.layers.size() ? r.shapes.layers[i].cost.flops : 0;
                b += baseAt[i] ? baseAt[i]->computeMs.median : 0;
            }
            if (!any)
                continue;
            double v = med, lo = mn, hi = mx;
            if (m == Metric::Gflops) {
                v = gflops(flops, med);
                lo = gflops(flops, mx);
                hi = gflops(flops, mn);
            } else if (m == Metric::Speedup)
                v = lo = hi = (b > 0 && med > 0) ? b / med : 0;
            if (log && v <= 0)
                continue; // nothing to draw on a log axis (a flatten has no FLOPs)
            s.keys << double(row + 1);
            s.values << v;
            s.errMinus << std::max(0.0, v - lo);
            s.errPlus << std::max(0.0, hi - v);
            maxValue = std::max(maxValue, hi);
            if (v > 0)
                minPositive = std::min(minPositive, lo > 0 ? lo : v);
        }
        const QColor c = colorFor(sel.selection.backend, perBackend[sel.selection.backend]++);
        auto* bars = new QCPBars(keyAxis, valueAxis);
        bars->setName(s.name);
        bars->setBrush(c);
        bars->setPen(QPen(c.darker(140), lineWidth(m_horizontal ? 0.5 : 1.0)));
        bars->setWidth(width);
        bars->setBarsGroup(group);
        bars->setData(s.keys, s.values, true);
        if (m != Metric::Speedup) {
            auto* err = new QCPErrorBars(keyAxis, valueAxis);
            err->removeFromLegend();
            err->setDataPlottable(bars);
            err->setData(s.errMinus, s.errPlus);
            err->setPen(QPen(QColor(40, 40, 40), lineWidth(1.0)));
            err->setWhiskerWidth(std::max(3.0, 6.0 - okCount));
        }
        m_series << s;
    }
    for (const Row& row : m_rowList)
        m_ticks << row.label;
    const QString what = rows() == Rows::Blocks ? tr("block (layers summed)")
        : rows() == Rows::Top                   ? tr("layer (slowest first)")
                                                : tr("layer");
    keyAxis->setLabel(what);
    valueAxis->setLabel(m == Metric::Time ? tr("compute ms (median, min–max)")
            : m == Metric::Gflops         ? tr("GFLOP/s (median, min–max)")
                                          : tr("speed-up vs %1 (×)").arg(m_baselineBox->currentText()));
    finishAxes(m_ticks, maxValue, minPositive);
    for (size_t row = 0; m_horizontal && row < m_rowList.size(); ++row) // the current layer's row in view
        for (size_t i : m_rowList[row].layers)
            if (int(i) == m_currentLayer)
                m_scrollTo = std::max(0, int(row) - 2);
    setCaption(m_run->live
            ? tr("Live preview on %1 (one pass, not a benchmark) · %2 ms wall")
                  .arg(r.selections.empty() ? QString() : QString::fromStdString(r.selections[0].selection.str()))
                  .arg(m_run->wallMs, 0, 'f', 1)
            : tr("%1 warm-up(s), %2 repeat(s) · %3 · %4 math · bars: median, whiskers: min–max")
                  .arg(r.meta.warmup)
                  .arg(r.meta.repeat)
                  .arg(m == Metric::Time        ? tr("compute time per %1").arg(what)
                          : m == Metric::Gflops ? tr("GFLOP/s per layer (multiply-add = 2 FLOPs)")
                                                : tr("speed-up per layer"))
                  .arg(QString::fromStdString(r.meta.mathMode)));
    replot();
}

void TimingChart::drawBreakdown()
{
    const RunResult& r = m_run->result;
    const bool log = logScale();
    Series h2d { tr("host→device copy"), {}, {}, {}, {} }, compute { tr("compute"), {}, {}, {}, {} },
        d2h { tr("device→host copy"), {}, {}, {}, {} };
    double key = 1, maxValue = 0, minPositive = 1e300;
    for (const auto& sel : r.selections) {
        if (!sel.ok)
            continue;
        double sum = 0;
        for (const auto& l : sel.layers)
            sum += l.computeMs.median;
        const double parts[3] = { sel.h2dMs.median, sum, sel.d2hMs.median };
        Series* dest[3] = { &h2d, &compute, &d2h };
        for (int p = 0; p < 3; ++p) {
            dest[p]->keys << key;
            dest[p]->values << parts[p];
            if (parts[p] > 0)
                minPositive = std::min(minPositive, parts[p]);
        }
        maxValue = std::max(maxValue, parts[0] + parts[1] + parts[2]);
        m_ticks << QString::fromStdString(sel.selection.str());
        m_rowList.push_back({ m_ticks.last(), {} }); // a selection, not a layer: clicks select nothing
        key += 1;
    }
    const QColor colors[3] = { QColor(0x8e, 0x24, 0xaa), QColor(0x45, 0x7b, 0x9d), QColor(0xe0, 0x7a, 0x5f) };
    QCPBars* below = nullptr;
    int p = 0;
    for (Series* s : { &h2d, &compute, &d2h }) {
        auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(s->name);
        bars->setBrush(colors[p]);
        bars->setPen(QPen(colors[p].darker(140), lineWidth(1.0)));
        bars->setWidth(0.6);
        bars->setData(s->keys, s->values, true);
        if (below)
            bars->moveAbove(below);
        below = bars;
        m_series << *s;
        ++p;
    }
    (void)log;
    m_plot->xAxis->setLabel(tr("selection"));
    m_plot->yAxis->setLabel(tr("ms per pass (medians)"));
    finishAxes(m_ticks, maxValue, minPositive);
    setCaption(tr("Where one pass goes: input to the device, compute of all %1 layers, output back "
                  "(copies are 0 on the CPU; display fetches are never counted)")
                   .arg(m_run->network.layers.size()));
    replot();
}

namespace {
    // Tick labels are elided to a share of the plot's width (middle out: a block's start and a layer's end stay).
    QString elidedLabel(const QFontMetrics& fm, const QString& label, int maxWidth)
    {
        return fm.elidedText(label, Qt::ElideMiddle, std::max(maxWidth, fm.horizontalAdvance(QLatin1Char('M')) * 4));
    }
} // namespace

void TimingChart::finishAxes(const QStringList& ticks, double maxValue, double minPositive)
{
    QCPAxis* keyAxis = m_horizontal ? m_plot->yAxis : m_plot->xAxis;
    QCPAxis* valueAxis = m_horizontal ? m_plot->xAxis : m_plot->yAxis;
    keyAxis->setRangeReversed(m_horizontal); // the first row at the top
    valueAxis->setRangeReversed(false);
    valueAxis->setTickLabelRotation(0);
    int longest = 0;
    for (const auto& t : ticks)
        longest = std::max(longest, int(t.size()));
    const double rotation = !m_horizontal && (ticks.size() > 8 || longest * ticks.size() > 48) ? 60 : 0;
    keyAxis->setTickLabelRotation(rotation);
    keyAxis->setRange(0.4, double(ticks.size()) + 0.6);
    // Every label for now (the margins are measured from them); layoutRows thins them to what fits.
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    const QFontMetrics fm(keyAxis->tickLabelFont());
    const int maxWidth = m_horizontal ? m_plot->width() * 2 / 5 : m_plot->height() / 3;
    for (int i = 0; i < ticks.size(); ++i)
        ticker->addTick(double(i + 1), elidedLabel(fm, ticks[i], maxWidth));
    keyAxis->setTicker(ticker);

    // QCustomPlot skips a tick label that would cross the widget's edge instead of clipping it, so the last
    // layer's name used to vanish. Keep room on the right for half an upright label, or for the whole
    // width of a slanted one (slanted labels hang to the right of their tick).
    const int lastWidth
        = ticks.isEmpty() || m_horizontal ? 0 : fm.horizontalAdvance(elidedLabel(fm, ticks.last(), maxWidth));
    const double rad = rotation * M_PI / 180.0;
    const int need = m_horizontal ? 12
        : rotation == 0           ? lastWidth / 2 + 6
                                  : int(std::cos(rad) * lastWidth + std::sin(rad) * fm.height()) + 6;
    m_rightMargin = need;
    m_plot->axisRect()->setMinimumMargins(QMargins(0, 0, need, 0));

    if (logScale()) {
        valueAxis->setScaleType(QCPAxis::stLogarithmic);
        valueAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
        const double lo = minPositive < 1e300 ? minPositive / 2 : 1e-3;
        valueAxis->setRange(lo, maxValue > lo ? maxValue * 2 : lo * 10);
        for (int i = 0; i < m_plot->plottableCount(); ++i)
            if (auto* b = qobject_cast<QCPBars*>(m_plot->plottable(i)))
                if (!b->barBelow())
                    b->setBaseValue(lo);
    } else {
        valueAxis->setScaleType(QCPAxis::stLinear);
        valueAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        valueAxis->setRange(0, maxValue > 0 ? maxValue * 1.15 : 1);
    }
    keyAxis->setScaleType(QCPAxis::stLinear);
}

// After every layout (a resize, a scroll, a zoom): the rows shown, the scroll bar, and every k-th label where the
// rows are too close for all of them, so no two labels ever touch.
void TimingChart::layoutRows()
{
    const int n = int(m_ticks.size());
    if (n == 0) {
        m_scroll->setVisible(false);
        return;
    }
    QCPAxis* keyAxis = m_horizontal ? m_plot->yAxis : m_plot->xAxis;
    const QFontMetrics fm(keyAxis->tickLabelFont());
    const QRect rect = m_plot->axisRect()->rect();
    double perRow = 0, need = 0;
    if (m_horizontal) {
        if (m_rowPx <= 0)
            m_rowPx = fm.height() + 4;
        const int shown = std::clamp(rect.height() / std::max(1, m_rowPx), 1, n);
        {
            const QSignalBlocker quiet(m_scroll);
            m_scroll->setRange(0, n - shown);
            m_scroll->setPageStep(shown);
            if (m_scrollTo >= 0)
                m_scroll->setValue(m_scrollTo);
        }
        if (m_scroll->isHidden() == (shown < n))
            m_scroll->setVisible(shown < n);
        const int first = m_scroll->value();
        keyAxis->setRange(first + 0.5, first + shown + 0.5);
        perRow = double(rect.height()) / shown;
        if (rect.height() > 2 * m_rowPx)
            m_scrollTo = -1; // applied to a real layout
        need = fm.height() + 1;
    } else {
        m_scroll->setVisible(false);
        perRow = double(rect.width()) / (n + 0.2);
        need = keyAxis->tickLabelRotation() != 0 ? fm.height() * 1.2 : 0;
        if (need == 0)
            for (const QString& t : m_ticks)
                need = std::max(need, double(fm.horizontalAdvance(t)) + 6);
    }
    const int every = std::max(1, int(std::ceil(need / std::max(1.0, perRow))));
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    const int maxWidth = m_horizontal ? m_plot->width() * 2 / 5 : m_plot->height() / 3;
    m_drawnLabels.clear();
    for (int i = 0; i < n; i += every) {
        const QString label = elidedLabel(fm, m_ticks[i], maxWidth);
        ticker->addTick(double(i + 1), label);
        m_drawnLabels << label;
    }
    keyAxis->setTicker(ticker);
}

} // namespace convscope::gui
