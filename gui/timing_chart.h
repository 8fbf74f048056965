// Per-layer time of every selection of the last run as grouped bars: the median with min–max error bars,
// coloured like each backend's NVTX ranges. Switches: log scale, GFLOP/s instead of time, speed-up against
// a chosen baseline, and the stacked breakdown of each selection's pass (host→device copy, compute,
// device→host copy). Clicking a layer's bars selects that layer. Redraws at most every ~40 ms while
// results stream in.
#pragma once

#include "gui/chart_view.h"
#include "gui/engine.h"
#include "gui/page.h"

#include <QTimer>

class QCheckBox;
class QComboBox;

namespace convscope::gui {

class TimingChart : public ChartView, public Page {
    Q_OBJECT
public:
    enum class Metric { Time, Gflops, Speedup };
    explicit TimingChart(QWidget* parent = nullptr);
    void setRun(RunOutcomePtr run);
    void showOutcome(RunOutcomePtr outcome, const QString&) override { setRun(std::move(outcome)); }
    RunOutcomePtr run() const { return m_run; }
    QString chartTitle() const override;

    void setMetric(Metric m);
    Metric metric() const;
    void setLogScale(bool on);
    bool logScale() const;
    void setBreakdown(bool on);
    bool breakdown() const;
    void setBaseline(const QString& selection); // for Speedup
    QComboBox* metricBox() const { return m_metricBox; }
    QCheckBox* logBox() const { return m_logBox; }
    QCheckBox* breakdownBox() const { return m_breakdownBox; }
    QComboBox* baselineBox() const { return m_baselineBox; }

    // What is drawn, for tests and exports: one entry per bar series.
    struct Series {
        QString name;
        QVector<double> keys, values, errMinus, errPlus;
    };
    QVector<Series> series() const { return m_series; }
    int barSeriesCount() const;
    QStringList tickLabels() const;
    // The right margin the axis rect keeps so the last (possibly slanted) layer label is drawn whole.
    int rightMarginNeeded() const { return m_rightMargin; }
    int layerAt(double pixelX) const; // -1 outside any layer
    void redrawNow(); // skip the throttle (exports, tests)
    void flush() override
    {
        if (m_throttle.isActive())
            redrawNow();
    }

Q_SIGNALS:
    void layerClicked(int layer);

protected:
    void rebuild() override { redrawNow(); }

private:
    void scheduleRedraw();
    void redraw();
    void drawLayers();
    void drawBreakdown();
    void finishAxes(const QStringList& ticks, double maxValue, double minPositive);
    void rebuildBaselines();

    RunOutcomePtr m_run;
    QTimer m_throttle;
    QComboBox* m_metricBox;
    QCheckBox* m_logBox;
    QCheckBox* m_breakdownBox;
    QComboBox* m_baselineBox;
    QVector<Series> m_series;
    QStringList m_ticks;
    int m_rightMargin = 0;
};

} // namespace convscope::gui
