// Sweep mode's chart: time (or GFLOP/s) against the swept parameter, one line per selection; with the
// "copies" view, a dashed line per selection adds the host↔device copies to the compute time, which is
// where the GPU/CPU crossover moves.
#pragma once

#include "compute/sweep.h"
#include "gui/charts/chart_view.h"

class QCheckBox;
class QComboBox;

namespace convscope::gui {

class SweepChart : public ChartView {
    Q_OBJECT
public:
    enum class Metric { LayerTime, Gflops, NetworkTime };
    explicit SweepChart(QWidget* parent = nullptr);
    QString chartTitle() const override;
    void setResult(SweepResultPtr result);
    SweepResultPtr result() const { return m_result; }
    void setMetric(Metric m);
    void setShowCopies(bool on);
    struct Line {
        QString name;
        QVector<double> xs, ys;
    };
    QVector<Line> lines() const { return m_lines; }

protected:
    void rebuild() override { redraw(); }

private:
    void redraw();
    SweepResultPtr m_result;
    QComboBox* m_metric;
    QCheckBox* m_copies;
    QCheckBox* m_log;
    QVector<Line> m_lines;
};

} // namespace convscope::gui
