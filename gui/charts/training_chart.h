// The training step on the Timing page (issue 33): where a step's time goes, per layer and selection, as stacked bars
// of its four phases (forward, backward-data, backward-weights, update; medians over the timed steps, the loss and
// its gradient as a row of its own), the selections side by side within each layer; or the loss after every step,
// one line per selection. It follows the engine's training runs itself (Engine::trainingFinished); run outcomes are
// the timing chart's.
#pragma once

#include "gui/charts/chart_view.h"
#include "gui/document/engine.h"
#include "gui/pages/page.h"

class QComboBox;

namespace convscope::gui {

class TrainingChart : public ChartView, public Page {
    Q_OBJECT
public:
    enum class Mode { Phases, Loss };
    static const QStringList& phaseNames(); // forward, backward-data, backward-weights, update, loss

    explicit TrainingChart(Engine* engine, QWidget* parent = nullptr);
    void setTraining(TrainOutcomePtr outcome);
    TrainOutcomePtr training() const { return m_outcome; }
    void showOutcome(RunOutcomePtr, const QString&) override { } // a run's times are the timing chart's
    void clearOutcome() override { setTraining(nullptr); }
    QString chartTitle() const override;

    void setMode(Mode mode);
    Mode mode() const;
    QComboBox* modeBox() const { return m_modeBox; }

    // What is drawn, for tests and exports: phases: one entry per (selection, phase) bar series, keys the rows
    // (layers 1 … L, then the loss); loss: one per selection, keys the steps.
    struct Series {
        QString selection, phase; // phase empty for a loss line
        QVector<double> keys, values;
    };
    QVector<Series> series() const { return m_series; }
    QStringList tickLabels() const { return m_ticks; }

protected:
    void rebuild() override { redraw(); }

private:
    void redraw();
    void drawPhases();
    void drawLoss();

    TrainOutcomePtr m_outcome;
    QComboBox* m_modeBox;
    QVector<Series> m_series;
    QStringList m_ticks;
};

} // namespace convscope::gui
