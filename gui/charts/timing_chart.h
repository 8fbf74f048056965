// Per-layer time of every selection of the last run as grouped bars: the median with min–max error bars,
// coloured like each backend's NVTX ranges (one hue per backend, its algorithms as shades of it). The rows are every
// layer, the name-scope blocks with their sums (gui/document/name_scopes.h), or the N slowest layers; above ~30 rows
// the bars lie horizontally with the names on the vertical axis, a scroll bar (and the wheel; Ctrl+wheel zooms) walks
// them, and labels that would touch are thinned out or elided so none overlap at any width. Switches: log scale,
// GFLOP/s instead of time, speed-up against a chosen baseline, and the stacked breakdown of each selection's pass
// (host→device copy, compute, device→host copy). Clicking a layer's bars selects that layer. Redraws at most every ~40
// ms while results stream in.
#pragma once

#include "gui/charts/chart_view.h"
#include "gui/document/engine.h"
#include "gui/pages/page.h"

#include <QTimer>

#include <utility>
#include <vector>

class QCheckBox;
class QComboBox;
class QScrollBar;

namespace convscope::gui {

class TimingChart : public ChartView, public Page {
    Q_OBJECT
public:
    enum class Metric { Time, Gflops, Speedup };
    enum class Rows { Layers, Blocks, Top };
    static constexpr int kHorizontalAbove = 30; // rows; more lie horizontally and scroll
    static constexpr int kTopN = 20;
    explicit TimingChart(QWidget* parent = nullptr);
    void setRun(RunOutcomePtr run);
    void showOutcome(RunOutcomePtr outcome, const QString&) override { setRun(std::move(outcome)); }
    void showLayer(int index) override; // scrolls the row holding it into view
    RunOutcomePtr run() const { return m_run; }
    QString chartTitle() const override;

    void setMetric(Metric m);
    Metric metric() const;
    void setLogScale(bool on);
    bool logScale() const;
    void setBreakdown(bool on);
    bool breakdown() const;
    void setBaseline(const QString& selection); // for Speedup
    void setRows(Rows r);
    Rows rows() const;
    bool horizontal() const { return m_horizontal; }
    QComboBox* rowsBox() const { return m_rowsBox; }
    // The rows' first and last shown (0-based) in the horizontal layout, and the tick labels drawn now.
    std::pair<int, int> visibleRows() const;
    QStringList drawnLabels() const { return m_drawnLabels; }
    void scrollToRow(int row);
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
    int layerAt(double pixel) const; // along the layer axis (x upright, y horizontal); -1 outside any layer
    void redrawNow(); // skip the throttle (exports, tests)
    // Every layer of a network above kHorizontalAbove layers does not fit one picture: a report shows the slowest.
    std::function<void()> showForReport() override
    {
        if (rows() != Rows::Layers || !m_run || m_run->network.layers.size() <= size_t(kHorizontalAbove))
            return {};
        setRows(Rows::Top);
        redrawNow();
        return [this] {
            setRows(Rows::Layers);
            redrawNow();
        };
    }
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
    void buildRows();
    void layoutRows(); // after the plot's layout: visible range, scroll bar and which labels fit

    RunOutcomePtr m_run;
    QTimer m_throttle;
    QComboBox* m_metricBox;
    QCheckBox* m_logBox;
    QCheckBox* m_breakdownBox;
    QComboBox* m_baselineBox;
    QComboBox* m_rowsBox;
    QScrollBar* m_scroll;
    struct Row {
        QString label;
        std::vector<size_t> layers; // summed
    };
    std::vector<Row> m_rowList;
    bool m_horizontal = false;
    int m_rowPx = 0;
    int m_currentLayer = -1;
    int m_scrollTo = -1; // a row to scroll to at the next layout // horizontal: pixels per row (Ctrl+wheel changes it)
    QStringList m_drawnLabels;
    QVector<Series> m_series;
    QStringList m_ticks;
    int m_rightMargin = 0;
};

} // namespace convscope::gui
