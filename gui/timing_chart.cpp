#include "gui/timing_chart.h"

#include "compute/nvtx.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace convscope::gui {

namespace {
    // The backend's NVTX colour; a second or third algorithm of the same backend gets a lighter or darker
    // shade of it so the bars stay apart and still read as one backend.
    QColor colorFor(const std::string& backend, int nth)
    {
        const QColor base = QColor::fromRgba(nvtx::backendColor(backend));
        static const int shades[] = { 100, 145, 70, 175, 55 };
        const int f = shades[nth % 5];
        return f >= 100 ? base.lighter(f) : base.darker(100 * 100 / f);
    }

    double gflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e6) : 0; }
} // namespace

TimingChart::TimingChart(QWidget* parent)
    : ChartView(parent)
    , m_metricBox(new QComboBox(this))
    , m_logBox(new QCheckBox(tr("Log"), this))
    , m_breakdownBox(new QCheckBox(tr("Copies"), this))
    , m_baselineBox(new QComboBox(this))
{
    m_metricBox->setObjectName(QStringLiteral("timingMetric"));
    m_metricBox->addItem(tr("ms"), int(Metric::Time));
    m_metricBox->addItem(tr("GFLOP/s"), int(Metric::Gflops));
    m_metricBox->addItem(tr("speed-up vs"), int(Metric::Speedup));
    m_metricBox->setToolTip(tr("Median compute time per layer, the rate it reaches, or how many times faster it is "
                               "than a baseline selection"));
    // The dock must fit beside the feature maps on a 1366-pixel screen: combo boxes shrink to a few letters.
    for (QComboBox* c : { m_metricBox, m_baselineBox }) {
        c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        c->setMinimumContentsLength(6);
    }
    m_logBox->setToolTip(tr("Logarithmic value axis"));
    m_logBox->setObjectName(QStringLiteral("timingLog"));
    m_breakdownBox->setObjectName(QStringLiteral("timingBreakdown"));
    m_breakdownBox->setToolTip(
        tr("Copies and compute: one stacked bar per selection: host→device copy, compute of every layer, "
           "device→host copy (medians of one pass)"));
    m_baselineBox->setObjectName(QStringLiteral("timingBaseline"));
    m_baselineBox->setEnabled(false);
    m_controls->addWidget(m_metricBox);
    m_controls->addWidget(m_baselineBox);
    m_controls->addWidget(m_logBox);
    m_controls->addWidget(m_breakdownBox);
    m_controls->addStretch(1);
    connect(m_metricBox, &QComboBox::currentIndexChanged, this, [this] {
        m_baselineBox->setEnabled(metric() == Metric::Speedup);
        redrawNow();
    });
    connect(m_baselineBox, &QComboBox::currentIndexChanged, this, [this] {
        if (metric() == Metric::Speedup)
            redrawNow();
    });
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
        const int layer = layerAt(e->position().x());
        if (layer >= 0)
            Q_EMIT layerClicked(layer);
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

int TimingChart::layerAt(double pixelX) const
{
    if (!m_run)
        return -1;
    const double key = m_plot->xAxis->pixelToCoord(pixelX);
    const int layer = int(std::lround(key)) - 1;
    if (std::fabs(key - (layer + 1)) > 0.5 || layer < 0 || size_t(layer) >= m_run->network.layers.size())
        return -1;
    return layer;
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
    if (!m_run) {
        replot();
        return;
    }
    if (breakdown())
        drawBreakdown();
    else
        drawLayers();
}

void TimingChart::drawLayers()
{
    const RunResult& r = m_run->result;
    const Metric m = metric();
    const bool log = logScale();
    const SelectionResult* base = nullptr;
    if (m == Metric::Speedup)
        for (const auto& s : r.selections)
            if (s.ok && QString::fromStdString(s.selection.str()) == m_baselineBox->currentText())
                base = &s;
    auto* group = new QCPBarsGroup(m_plot);
    int okCount = 0;
    for (const auto& sel : r.selections)
        okCount += sel.ok ? 1 : 0;
    const double width = 0.8 / std::max(1, okCount);
    double maxValue = 0, minPositive = 1e300;
    std::map<std::string, int> perBackend;
    for (const auto& sel : r.selections) {
        if (!sel.ok)
            continue;
        Series s;
        s.name = QString::fromStdString(sel.selection.str());
        for (const auto& l : sel.layers) {
            const double flops = l.index < r.shapes.layers.size() ? r.shapes.layers[l.index].cost.flops : 0;
            const Stats& t = l.computeMs;
            double v = t.median, lo = t.min, hi = t.max;
            if (m == Metric::Gflops) {
                v = gflops(flops, t.median);
                lo = gflops(flops, t.max);
                hi = gflops(flops, t.min);
            } else if (m == Metric::Speedup) {
                const double b = base && l.index < base->layers.size() ? base->layers[l.index].computeMs.median : 0;
                v = lo = hi = (b > 0 && t.median > 0) ? b / t.median : 0;
            }
            if (log && v <= 0)
                continue; // nothing to draw on a log axis (a flatten has no FLOPs)
            s.keys << double(l.index + 1);
            s.values << v;
            s.errMinus << std::max(0.0, v - lo);
            s.errPlus << std::max(0.0, hi - v);
            maxValue = std::max(maxValue, hi);
            if (v > 0)
                minPositive = std::min(minPositive, lo > 0 ? lo : v);
        }
        const QColor c = colorFor(sel.selection.backend, perBackend[sel.selection.backend]++);
        auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(s.name);
        bars->setBrush(c);
        bars->setPen(QPen(c.darker(140), lineWidth(1.0)));
        bars->setWidth(width);
        bars->setBarsGroup(group);
        bars->setData(s.keys, s.values, true);
        if (m != Metric::Speedup) {
            auto* err = new QCPErrorBars(m_plot->xAxis, m_plot->yAxis);
            err->removeFromLegend();
            err->setDataPlottable(bars);
            err->setData(s.errMinus, s.errPlus);
            err->setPen(QPen(QColor(40, 40, 40), lineWidth(1.0)));
            err->setWhiskerWidth(std::max(3.0, 6.0 - okCount));
        }
        m_series << s;
    }
    for (const auto& layer : m_run->network.layers)
        m_ticks << QString::fromStdString(layer.name);
    m_plot->xAxis->setLabel(tr("layer"));
    m_plot->yAxis->setLabel(m == Metric::Time ? tr("compute ms (median, min–max)")
            : m == Metric::Gflops             ? tr("GFLOP/s (median, min–max)")
                                              : tr("speed-up vs %1 (×)").arg(m_baselineBox->currentText()));
    finishAxes(m_ticks, maxValue, minPositive);
    setCaption(m_run->live ? tr("Live preview on cpu.im2col_gemm (one pass, not a benchmark) · %1 ms wall")
                                 .arg(m_run->wallMs, 0, 'f', 1)
                           : tr("%1 warm-up(s), %2 repeat(s) · %3 · %4 math · bars: median, whiskers: min–max")
                                 .arg(r.meta.warmup)
                                 .arg(r.meta.repeat)
                                 .arg(m == Metric::Time        ? tr("compute time per layer")
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

void TimingChart::finishAxes(const QStringList& ticks, double maxValue, double minPositive)
{
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int i = 0; i < ticks.size(); ++i)
        ticker->addTick(double(i + 1), ticks[i]);
    m_plot->xAxis->setTicker(ticker);
    int longest = 0;
    for (const auto& t : ticks)
        longest = std::max(longest, int(t.size()));
    const double rotation = ticks.size() > 8 || longest * ticks.size() > 48 ? 60 : 0;
    m_plot->xAxis->setTickLabelRotation(rotation);
    m_plot->xAxis->setRange(0.4, double(ticks.size()) + 0.6);

    // QCustomPlot skips a tick label that would cross the widget's edge instead of clipping it, so the last
    // layer's name used to vanish. Keep room on the right for half an upright label, or for the whole
    // width of a slanted one (slanted labels hang to the right of their tick).
    const QFontMetrics fm(m_plot->xAxis->tickLabelFont());
    const int lastWidth = ticks.isEmpty() ? 0 : fm.horizontalAdvance(ticks.last());
    const double rad = rotation * M_PI / 180.0;
    const int need
        = rotation == 0 ? lastWidth / 2 + 6 : int(std::cos(rad) * lastWidth + std::sin(rad) * fm.height()) + 6;
    // The axis rect's right edge sits at 0.6 of a slot past the last tick.
    m_rightMargin = need;
    m_plot->axisRect()->setMinimumMargins(QMargins(0, 0, need, 0));

    if (logScale()) {
        m_plot->yAxis->setScaleType(QCPAxis::stLogarithmic);
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
        const double lo = minPositive < 1e300 ? minPositive / 2 : 1e-3;
        m_plot->yAxis->setRange(lo, maxValue > lo ? maxValue * 2 : lo * 10);
        for (int i = 0; i < m_plot->plottableCount(); ++i)
            if (auto* b = qobject_cast<QCPBars*>(m_plot->plottable(i)))
                if (!b->barBelow())
                    b->setBaseValue(lo);
    } else {
        m_plot->yAxis->setScaleType(QCPAxis::stLinear);
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        m_plot->yAxis->setRange(0, maxValue > 0 ? maxValue * 1.15 : 1);
    }
}

} // namespace convscope::gui
