#include "gui/charts/explorer_chart.h"

#include "compute/nvtx.h"

#include <QJsonObject>

#include <qcustomplot.h>

namespace convscope::gui {

ExplorerChart::ExplorerChart(QWidget* parent)
    : ChartView(parent)
    , m_title(tr("cuDNN algorithms"))
{
    m_plot->legend->setVisible(false);
    m_caption->hide();
    m_plot->setMinimumHeight(100);
}

void ExplorerChart::setAlgorithms(const QString& title, const QJsonArray& algorithms)
{
    m_title = title;
    m_algorithms = algorithms;
    redraw();
}

void ExplorerChart::redraw()
{
    m_plot->clearPlottables();
    m_bars = 0;
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    QVector<double> keys, values, chosenKeys, chosenValues;
    double maxMs = 0;
    int k = 0;
    for (const auto& v : m_algorithms) {
        const QJsonObject a = v.toObject();
        if (a.value(QStringLiteral("status")).toString() != QStringLiteral("ok"))
            continue;
        ++k;
        const double ms = a.value(QStringLiteral("time_ms")).toDouble();
        ticker->addTick(k, a.value(QStringLiteral("algorithm")).toString());
        (a.value(QStringLiteral("auto_choice")).toBool() ? chosenKeys : keys) << k;
        (a.value(QStringLiteral("auto_choice")).toBool() ? chosenValues : values) << ms;
        maxMs = std::max(maxMs, ms);
    }
    const QColor c = QColor::fromRgba(nvtx::backendColor("cudnn"));
    auto addBars = [&](const QVector<double>& ks, const QVector<double>& vs, const QColor& col, const QString& name) {
        auto* bars = new QCPBars(m_plot->yAxis, m_plot->xAxis); // horizontal: keys on the y axis
        bars->setName(name);
        bars->setBrush(col);
        bars->setPen(QPen(col.darker(140), lineWidth(1.0)));
        bars->setWidth(0.7);
        bars->setData(ks, vs);
        m_bars += int(ks.size());
    };
    addBars(keys, values, c.lighter(150), tr("algorithm"));
    addBars(chosenKeys, chosenValues, c, tr("cudnn.auto's choice"));
    m_plot->yAxis->setTicker(ticker);
    m_plot->yAxis->setRangeReversed(true);
    m_plot->yAxis->setRange(0.4, k + 0.6);
    m_plot->xAxis->setRange(0, maxMs > 0 ? maxMs * 1.15 : 1);
    m_plot->xAxis->setLabel(tr("median ms (pinned, between CUDA events)"));
    m_plot->yAxis->setLabel(QString());
    replot();
}

} // namespace convscope::gui
