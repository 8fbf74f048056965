// The algorithm explorer's bar chart: one horizontal bar per cuDNN algorithm that ran, our median time
// (the pinned measurement), cudnn.auto's choice highlighted.
#pragma once

#include "gui/charts/chart_view.h"

#include <QJsonArray>

namespace convscope::gui {

class ExplorerChart : public ChartView {
    Q_OBJECT
public:
    explicit ExplorerChart(QWidget* parent = nullptr);
    QString chartTitle() const override { return m_title; }
    void setAlgorithms(const QString& title, const QJsonArray& algorithms);
    int barCount() const { return m_bars; }

protected:
    void rebuild() override { redraw(); }

private:
    void redraw();
    QString m_title;
    QJsonArray m_algorithms;
    int m_bars = 0;
};

} // namespace convscope::gui
