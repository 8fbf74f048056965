// Per-layer compute time of every selection of the last run as grouped bars (QCustomPlot lives only in
// this file). Redraws at most every ~40 ms while results stream in.
#pragma once

#include "gui/engine.h"

#include <QTimer>
#include <QWidget>

class QCustomPlot;
class QLabel;

namespace convscope::gui {

class TimingChart : public QWidget {
    Q_OBJECT
public:
    explicit TimingChart(QWidget* parent = nullptr);
    void setRun(RunOutcomePtr run);
    int barSeriesCount() const;

private:
    void redraw();
    QCustomPlot* m_plot;
    QLabel* m_caption;
    RunOutcomePtr m_run;
    QTimer m_throttle;
};

} // namespace convscope::gui
