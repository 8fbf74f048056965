#include "gui/timing_chart.h"

#include <algorithm>

#include <QLabel>
#include <QVBoxLayout>

#include <qcustomplot.h>

namespace convscope::gui {

namespace {
    QColor colorFor(const std::string& backend, int i)
    {
        if (backend == "cpu")
            return i % 2 ? QColor(0x42, 0x85, 0xf4) : QColor(0x1a, 0x4f, 0xa8);
        if (backend == "cuda")
            return i % 2 ? QColor(0x7c, 0xb3, 0x42) : QColor(0x33, 0x69, 0x1e);
        if (backend == "cudnn")
            return QColor(0xef, 0x6c, 0x00);
        return QColor::fromHsv((i * 67) % 360, 160, 200);
    }
} // namespace

TimingChart::TimingChart(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_caption(new QLabel(this))
{
    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(m_caption);
    box->addWidget(m_plot, 1);
    m_caption->setWordWrap(true);
    m_caption->setText(tr("Run a network to see the time of each layer."));
    m_plot->setMinimumHeight(120);
    m_plot->yAxis->setLabel(tr("median ms"));
    m_plot->xAxis->setLabel(tr("layer"));
    m_plot->legend->setVisible(true);
    m_plot->legend->setFont(font());
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    m_throttle.setSingleShot(true);
    m_throttle.setInterval(40);
    connect(&m_throttle, &QTimer::timeout, this, &TimingChart::redraw);
}

void TimingChart::setRun(RunOutcomePtr run)
{
    m_run = std::move(run);
    if (!m_throttle.isActive())
        m_throttle.start();
}

int TimingChart::barSeriesCount() const { return m_plot->plottableCount(); }

void TimingChart::redraw()
{
    m_plot->clearPlottables();
    if (!m_run) {
        m_plot->replot();
        return;
    }
    const RunResult& r = m_run->result;
    auto* group = new QCPBarsGroup(m_plot);
    int okCount = 0;
    double maxMs = 0;
    size_t layers = m_run->network.layers.size();
    for (const auto& sel : r.selections)
        okCount += sel.ok ? 1 : 0;
    const double width = 0.8 / std::max(1, okCount);
    int i = 0;
    for (const auto& sel : r.selections) {
        if (!sel.ok)
            continue;
        auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(QString::fromStdString(sel.selection.str()));
        const QColor c = colorFor(sel.selection.backend, i++);
        bars->setBrush(c);
        bars->setPen(c.darker(130));
        bars->setWidth(width);
        bars->setBarsGroup(group);
        QVector<double> keys, values;
        for (const auto& l : sel.layers) {
            keys << double(l.index + 1);
            values << l.computeMs.median;
            maxMs = std::max(maxMs, l.computeMs.median);
        }
        bars->setData(keys, values);
    }
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (size_t l = 0; l < layers; ++l)
        ticker->addTick(double(l + 1), QString::fromStdString(m_run->network.layers[l].name));
    m_plot->xAxis->setTicker(ticker);
    // Upright labels only while every name fits under its own bar; otherwise slant them so none overlap.
    size_t longest = 0;
    for (const auto& layer : m_run->network.layers)
        longest = std::max(longest, layer.name.size());
    m_plot->xAxis->setTickLabelRotation(layers > 8 || longest * layers > 48 ? 60 : 0);
    m_plot->xAxis->setRange(0.4, double(layers) + 0.6);
    m_plot->yAxis->setRange(0, maxMs > 0 ? maxMs * 1.15 : 1);
    m_caption->setText(m_run->live
            ? tr("Live preview on cpu.im2col_gemm (one pass, not a benchmark) · %1 ms wall")
                  .arg(m_run->wallMs, 0, 'f', 1)
            : tr("%1 warm-up(s), %2 repeat(s) · median compute time per layer").arg(r.meta.warmup).arg(r.meta.repeat));
    m_plot->replot();
}

} // namespace convscope::gui
