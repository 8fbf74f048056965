#include "gui/charts/sweep_chart.h"

#include "compute/nvtx.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>

#include <qcustomplot.h>

#include <map>

namespace convscope::gui {

SweepChart::SweepChart(QWidget* parent)
    : ChartView(parent)
    , m_metric(new QComboBox(this))
    , m_copies(new QCheckBox(tr("+ copies"), this))
    , m_log(new QCheckBox(tr("Log"), this))
{
    m_metric->addItem(tr("layer time (ms)"), int(Metric::LayerTime));
    m_metric->addItem(tr("layer GFLOP/s"), int(Metric::Gflops));
    m_metric->addItem(tr("network time (ms)"), int(Metric::NetworkTime));
    m_metric->setObjectName(QStringLiteral("sweepMetric"));
    m_metric->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_metric->setMinimumContentsLength(8);
    m_copies->setObjectName(QStringLiteral("sweepCopies"));
    m_copies->setToolTip(tr("Dashed: the whole pass with the host→device and device→host copies counted"));
    m_log->setChecked(true);
    m_controls->addWidget(m_metric);
    m_controls->addWidget(m_copies);
    m_controls->addWidget(m_log);
    m_controls->addStretch(1);
    connect(m_metric, &QComboBox::currentIndexChanged, this, &SweepChart::redraw);
    connect(m_copies, &QCheckBox::toggled, this, &SweepChart::redraw);
    connect(m_log, &QCheckBox::toggled, this, &SweepChart::redraw);
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(
        0, Qt::AlignBottom | Qt::AlignRight); // curves rise to the right
    setCaption(tr("Pick a parameter or a preset and press Sweep."));
}

QString SweepChart::chartTitle() const { return m_result ? QString::fromStdString(m_result->spec.title) : tr("Sweep"); }

void SweepChart::setResult(SweepResultPtr result)
{
    m_result = std::move(result);
    redraw();
}

void SweepChart::setMetric(Metric m) { m_metric->setCurrentIndex(m_metric->findData(int(m))); }
void SweepChart::setShowCopies(bool on) { m_copies->setChecked(on); }

void SweepChart::redraw()
{
    m_plot->clearPlottables();
    m_lines.clear();
    if (!m_result) {
        replot();
        return;
    }
    const SweepResult& r = *m_result;
    const auto metric = Metric(m_metric->currentData().toInt());
    const bool labelled = !r.spec.points.empty() && !r.spec.points.front().label.empty();
    const bool log = m_log->isChecked();
    double yLo = 1e300, yHi = 0;
    std::map<std::string, int> perBackend;
    auto add = [&](const QString& name, const QVector<double>& xs, const QVector<double>& ys, QColor c, bool dashed) {
        auto* g = m_plot->addGraph();
        g->setName(name);
        QPen pen(c, lineWidth(2.0));
        if (dashed)
            pen.setStyle(Qt::DashLine);
        g->setPen(pen);
        g->setScatterStyle(
            QCPScatterStyle(dashed ? QCPScatterStyle::ssCircle : QCPScatterStyle::ssDisc, presentation() ? 10 : 6));
        g->setData(xs, ys);
        m_lines << Line { name, xs, ys };
        for (double y : ys)
            if (y > 0)
                yLo = std::min(yLo, y), yHi = std::max(yHi, y);
    };
    for (size_t s = 0; s < r.selections.size(); ++s) {
        QVector<double> xs, ys, withCopies;
        for (size_t p = 0; p < r.samples.size(); ++p) {
            const SweepSample& x = r.samples[p][s];
            if (!x.ok)
                continue;
            xs << r.spec.points[p].x;
            ys << (metric == Metric::LayerTime ? x.layerMs.median
                    : metric == Metric::Gflops ? x.gflops()
                                               : x.networkComputeMs);
            withCopies << x.networkWithCopiesMs;
        }
        const std::string& backend = r.selections[s].backend;
        QColor c = QColor::fromRgba(nvtx::backendColor(backend));
        const int nth = perBackend[backend]++;
        if (nth)
            c = nth % 2 ? c.lighter(150) : c.darker(150);
        const QString name = QString::fromStdString(r.selections[s].str());
        add(name, xs, ys, c, false);
        if (m_copies->isChecked() && metric != Metric::Gflops)
            add(name + tr(" + copies"), xs, withCopies, c, true);
    }
    if (labelled) {
        QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
        for (const auto& p : r.spec.points)
            ticker->addTick(p.x, QString::fromStdString(p.label));
        m_plot->xAxis->setTicker(ticker);
        m_plot->xAxis->setScaleType(QCPAxis::stLinear);
        m_plot->xAxis->setTickLabelRotation(30);
        m_plot->xAxis->setRange(r.spec.points.front().x - 0.5, r.spec.points.back().x + 0.5);
        m_plot->xAxis->setLabel(tr("case (C_in → C_out @ size²)"));
    } else {
        double lo = r.spec.points.front().x, hi = r.spec.points.back().x;
        const bool logX = hi / std::max(lo, 1e-9) >= 16;
        m_plot->xAxis->setScaleType(logX ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
        if (logX) {
            QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
            for (const auto& p : r.spec.points)
                ticker->addTick(p.x, QString::number(p.x));
            m_plot->xAxis->setTicker(ticker);
            m_plot->xAxis->setRange(lo / 1.3, hi * 1.3);
        } else {
            m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
            m_plot->xAxis->setRange(lo - 0.5, hi + 0.5);
        }
        m_plot->xAxis->setTickLabelRotation(0);
        m_plot->xAxis->setLabel(QString::fromStdString(sweepParameterName(r.spec.parameter)));
    }
    m_plot->yAxis->setLabel(metric == Metric::LayerTime ? tr("layer ms (median)")
            : metric == Metric::Gflops                  ? tr("layer GFLOP/s")
                                                        : tr("network ms (median)"));
    if (yHi <= 0)
        yLo = 0.01, yHi = 1;
    if (log) {
        m_plot->yAxis->setScaleType(QCPAxis::stLogarithmic);
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
        m_plot->yAxis->setRange(yLo / 2, yHi * 2);
    } else {
        m_plot->yAxis->setScaleType(QCPAxis::stLinear);
        m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        m_plot->yAxis->setRange(0, yHi * 1.15);
    }
    QStringList failures;
    for (size_t p = 0; p < r.samples.size(); ++p)
        for (size_t s = 0; s < r.samples[p].size(); ++s)
            if (!r.samples[p][s].ok && failures.size() < 3)
                failures << QStringLiteral("%1 at %2: %3")
                                .arg(QString::fromStdString(r.selections[s].str()))
                                .arg(r.spec.points[p].label.empty() ? QString::number(r.spec.points[p].x)
                                                                    : QString::fromStdString(r.spec.points[p].label))
                                .arg(QString::fromStdString(r.samples[p][s].failure));
    QString caption = tr("%1 · %2 of %3 points · %4 warm-up(s), %5 repeat(s), %6 math")
                          .arg(chartTitle())
                          .arg(r.samples.size())
                          .arg(r.spec.points.size())
                          .arg(r.warmup)
                          .arg(r.repeat)
                          .arg(QString::fromStdString(r.mathMode));
    if (!r.spec.note.empty())
        caption += QLatin1Char('\n') + QString::fromStdString(r.spec.note);
    if (!failures.isEmpty())
        caption += QLatin1Char('\n') + failures.join(QLatin1Char('\n'));
    setCaption(caption);
    replot();
}

} // namespace convscope::gui
