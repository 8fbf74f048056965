#include "gui/charts/roofline_chart.h"

#include "compute/nvtx.h"
#include "gui/document/calibration_cache.h"

#include <QHBoxLayout>
#include <QPushButton>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace convscope::gui {

RooflineChart::RooflineChart(Engine* engine, QWidget* parent)
    : ChartView(parent)
    , m_engine(engine)
    , m_recalibrate(new QPushButton(tr("Recalibrate"), this))
{
    m_recalibrate->setObjectName(QStringLiteral("recalibrate"));
    m_recalibrate->setToolTip(tr("Measure the compute and bandwidth ceilings of this machine's devices again"));
    m_controls->addStretch(1);
    m_controls->addWidget(m_recalibrate);
    connect(m_recalibrate, &QPushButton::clicked, this, &RooflineChart::recalibrate);
    connect(m_engine, &Engine::calibrationAvailable, this, [this](const QString& backend, const DeviceCeilings& c) {
        m_pending.remove(backend);
        if (m_session)
            return;
        calibration_cache::store(backend, calibration_cache::deviceKey(backend), c);
        setCeilings(backend, c);
    });
    connect(m_engine, &Engine::calibrationFailed, this, [this](const QString& backend, const QString& why) {
        m_pending.remove(backend);
        m_failures[backend] = why;
        redraw();
    });
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignBottom | Qt::AlignRight);
    setCaption(tr("Run a network to place its layers under the device's ceilings."));
}

QString RooflineChart::chartTitle() const { return tr("Roofline"); }

void RooflineChart::setRun(RunOutcomePtr run)
{
    m_run = std::move(run);
    if (m_run && m_run->live)
        return; // one untimed pass says nothing about a ceiling
    if (m_active)
        requestMissing();
    redraw();
}

void RooflineChart::setActive(bool active)
{
    m_active = active;
    if (!active)
        return;
    const int pending = int(m_pending.size());
    requestMissing();
    if (int(m_pending.size()) != pending || !m_ceilings.isEmpty())
        redraw();
}

void RooflineChart::setSessionCeilings(const std::vector<std::pair<QString, DeviceCeilings>>& ceilings)
{
    m_session = true;
    m_ceilings.clear();
    m_failures.clear();
    for (const auto& [backend, c] : ceilings)
        m_ceilings[backend] = c;
    m_recalibrate->setEnabled(false);
    redraw();
}

void RooflineChart::clearSession()
{
    if (!m_session)
        return;
    m_session = false;
    m_ceilings.clear();
    m_recalibrate->setEnabled(true);
}

void RooflineChart::setCeilings(const QString& backend, const DeviceCeilings& c)
{
    m_ceilings[backend] = c;
    m_failures.remove(backend);
    redraw();
    Q_EMIT ceilingsChanged();
}

void RooflineChart::requestMissing()
{
    if (!m_run || m_session)
        return;
    QStringList needed;
    const bool wasEmpty = m_ceilings.isEmpty();
    for (const auto& s : m_run->result.selections) {
        const QString b = QString::fromStdString(s.selection.backend);
        if (!s.ok || m_ceilings.contains(b) || m_pending.contains(b) || m_failures.contains(b) || needed.contains(b))
            continue;
        if (auto cached = calibration_cache::load(b, calibration_cache::deviceKey(b))) {
            m_ceilings[b] = *cached;
            continue;
        }
        needed << b;
    }
    for (const QString& b : needed)
        m_pending.insert(b);
    if (!needed.isEmpty())
        m_engine->calibrate(needed);
    if (wasEmpty && !m_ceilings.isEmpty())
        Q_EMIT ceilingsChanged();
}

void RooflineChart::recalibrate()
{
    if (m_session)
        return;
    QStringList backends = m_ceilings.keys();
    if (m_run)
        for (const auto& s : m_run->result.selections)
            if (!backends.contains(QString::fromStdString(s.selection.backend)))
                backends << QString::fromStdString(s.selection.backend);
    if (backends.isEmpty())
        backends << QStringLiteral("cpu");
    m_failures.clear();
    for (const QString& b : backends)
        m_pending.insert(b);
    m_engine->calibrate(backends);
    redraw();
}

int RooflineChart::pointCount() const { return m_points; }

MathMode RooflineChart::runMathMode() const
{
    if (!m_run || m_run->result.meta.mathMode.empty())
        return MathMode::FP32;
    try {
        return parseMathMode(m_run->result.meta.mathMode);
    } catch (const std::exception&) {
        return MathMode::FP32; // a saved session from a newer version: its FP32 ceiling at least
    }
}

namespace {
    QString rate(double gflops)
    {
        return gflops >= 10000 ? QObject::tr("%1 TFLOP/s").arg(gflops / 1000, 0, 'f', 0)
                               : QObject::tr("%1 GFLOP/s").arg(gflops, 0, 'f', 0);
    }
    // "cuBLAS BF16 GEMM 8192³" from "cuBLAS BF16 GEMM 8192³, BF16 operands…": the method up to its first comma.
    QString shortMethod(const std::string& method)
    {
        return QString::fromStdString(method).section(QLatin1Char(','), 0, 0).trimmed();
    }
} // namespace

QString RooflineChart::ceilingLabel(const DeviceCeilings& c, MathMode mode)
{
    const std::string name = mathModeName(mode);
    const auto it = c.mathGflops.find(name);
    if (mode == MathMode::FP32 || it == c.mathGflops.end() || it->second <= 0)
        return tr("FP32 %1").arg(rate(c.peakGflops));
    const auto m = c.mathMethods.find(name);
    const QString how = m == c.mathMethods.end() || m->second.empty() ? QString::fromStdString(name).toUpper()
                                                                      : shortMethod(m->second);
    return tr("%1: %2").arg(how, rate(it->second));
}

QString RooflineChart::ceilingDetail(const DeviceCeilings& c, MathMode mode)
{
    const QString fp32 = tr("FP32 %1 by %2").arg(rate(c.peakGflops), QString::fromStdString(c.computeMethod));
    if (mode == MathMode::FP32)
        return fp32;
    const std::string name = mathModeName(mode);
    const auto it = c.mathGflops.find(name);
    if (it == c.mathGflops.end() || it->second <= 0)
        return tr("no %1 ceiling measured on this device, so the FP32 one is drawn: %2")
            .arg(QString::fromStdString(name).toUpper(), fp32);
    // The mode's method in full (how the roof was measured); the FP32 peak beside it by its rate alone, which keeps
    // the caption short enough to leave the chart its room.
    const auto m = c.mathMethods.find(name);
    return tr("%1 ceiling %2 by %3 (FP32 %4)")
        .arg(QString::fromStdString(name).toUpper(), rate(it->second),
            QString::fromStdString(m == c.mathMethods.end() ? std::string() : m->second), rate(c.peakGflops));
}

void RooflineChart::redraw()
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_points = 0;
    m_plot->xAxis->setScaleType(QCPAxis::stLogarithmic);
    m_plot->yAxis->setScaleType(QCPAxis::stLogarithmic);
    m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    m_plot->xAxis->setLabel(tr("arithmetic intensity (FLOP per byte read + written)"));
    m_plot->yAxis->setLabel(tr("achieved GFLOP/s (median)"));

    double xLo = 0.05, xHi = 200, yLo = 1e9, yHi = 0;
    QStringList lines;
    std::map<std::string, int> perBackend;
    if (m_run) {
        const RunResult& r = m_run->result;
        for (const auto& sel : r.selections) {
            if (!sel.ok)
                continue;
            QVector<double> xs, ys;
            for (const auto& l : sel.layers) {
                if (l.index >= r.shapes.layers.size())
                    continue;
                const auto& cost = r.shapes.layers[l.index].cost;
                const double ai = cost.intensity();
                const double g = l.computeMs.median > 0 ? cost.flops / (l.computeMs.median * 1e6) : 0;
                if (ai <= 0 || g <= 0)
                    continue;
                xs << ai;
                ys << g;
                xLo = std::min(xLo, ai / 2);
                xHi = std::max(xHi, ai * 2);
                yLo = std::min(yLo, g);
                yHi = std::max(yHi, g);
            }
            auto* graph = m_plot->addGraph();
            graph->setName(QString::fromStdString(sel.selection.str()));
            QColor c = QColor::fromRgba(nvtx::backendColor(sel.selection.backend));
            const int nth = perBackend[sel.selection.backend]++;
            if (nth)
                c = nth % 2 ? c.lighter(140) : c.darker(150);
            graph->setLineStyle(QCPGraph::lsNone);
            const QCPScatterStyle::ScatterShape shapes[] = { QCPScatterStyle::ssDisc, QCPScatterStyle::ssTriangle,
                QCPScatterStyle::ssSquare, QCPScatterStyle::ssDiamond };
            graph->setScatterStyle(QCPScatterStyle(shapes[nth % 4], c.darker(130), c, presentation() ? 11.0 : 7.0));
            graph->setData(xs, ys);
            m_points += int(xs.size());
        }
    }
    // One roof per device: min(peak, bandwidth · intensity), where the peak is the ceiling of the run's math mode
    // (the Tensor Core GEMM rate of a TF32/FP16/BF16 run, DeviceCeilings::peakFor), named in the label.
    const MathMode mode = runMathMode();
    std::map<std::string, bool> drawn;
    for (auto it = m_ceilings.begin(); it != m_ceilings.end(); ++it) {
        const DeviceCeilings& c = it.value();
        if (c.peakGflops <= 0 || c.bandwidthGBs <= 0)
            continue;
        const double peak = c.peakFor(mode);
        const QString roofName = ceilingLabel(c, mode);
        lines << tr("%1 (%2): %3; %4 GB/s by %5")
                     .arg(it.key(), QString::fromStdString(c.device), ceilingDetail(c, mode))
                     .arg(c.bandwidthGBs, 0, 'f', 1)
                     .arg(QString::fromStdString(c.bandwidthMethod));
        if (drawn[c.device])
            continue;
        drawn[c.device] = true;
        const double ridge = peak / c.bandwidthGBs;
        xLo = std::min(xLo, ridge / 20);
        xHi = std::max(xHi, ridge * 20);
        yHi = std::max(yHi, peak);
        QVector<double> xs, ys;
        for (double x = xLo / 4; x <= xHi * 4; x *= 1.25) {
            xs << x;
            ys << std::min(peak, c.bandwidthGBs * x);
        }
        auto* roof = m_plot->addGraph();
        roof->setName(tr("ceiling: %1 · %2").arg(QString::fromStdString(c.device), roofName));
        QColor col = QColor::fromRgba(nvtx::backendColor(it.key().toStdString())).darker(160);
        roof->setPen(QPen(col, lineWidth(2.0)));
        roof->setData(xs, ys);
        yLo = std::min(yLo, c.bandwidthGBs * xLo);
    }
    for (auto it = m_failures.begin(); it != m_failures.end(); ++it)
        lines << tr("%1: no ceilings (%2)").arg(it.key(), it.value());
    for (const QString& b : m_pending)
        lines << tr("%1: calibrating…").arg(b);
    if (m_session)
        lines.prepend(tr("Ceilings as measured on the machine that saved this session."));
    if (yHi <= 0)
        yHi = 1000, yLo = 0.1;
    m_plot->xAxis->setRange(xLo, xHi);
    m_plot->yAxis->setRange(std::max(1e-4, yLo / 3), yHi * 3);
    setCaption(lines.isEmpty() ? (m_run ? tr("No ceilings measured yet")
                                        : tr("Run a network to place its layers under the device's ceilings."))
                               : lines.join(QLatin1Char('\n')));
    replot();
}

} // namespace convscope::gui
