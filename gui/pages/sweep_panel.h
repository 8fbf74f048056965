// Sweep mode: pick one parameter of one layer and a range (or a preset), press Sweep; every selection of the
// engine's run settings (what the Run panel shows checked) runs at every value (choosing a preset makes its
// selections that can run here the settings), and the chart follows point by point. It asks (the window hands the
// sweep to the engine, with the run settings) and follows the engine's reports on the sweep the window says is its
// own (setJob).
#pragma once

#include "compute/sweep.h"
#include "gui/document/engine.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace convscope::gui {

class SweepChart;

class SweepPanel : public QWidget {
    Q_OBJECT
public:
    explicit SweepPanel(Engine* engine, QWidget* parent = nullptr);
    // The engine's job that is this page's sweep (0: none): its updates, its end and its failure are shown here.
    void setJob(int job);
    int job() const { return m_job; }
    // The sweep the controls describe; throws InputError when they describe none.
    SweepSpec spec() const;
    // "" = custom; `points` "A-B" keeps the preset's points A to B only (0-based).
    void setPreset(const QString& name, const QString& points = {});
    void setRange(int layer, SweepParameter p, int from, int to, int step, bool doubling);
    // The preset's selections that can run here; empty: use the run settings' as they are.
    std::vector<Selection> availablePresetSelections() const;
    SweepChart* chart() const { return m_chart; }
    QPushButton* sweepButton() const { return m_sweep; }
    void setRunning(bool running);
    void setReadOnly(bool on); // a saved session: its sweep is shown, nothing new is swept
    void setMessage(const QString& text);
    QString message() const;
    QString selectionsText() const; // what a sweep runs on (the run settings), as the page shows it

Q_SIGNALS:
    void sweepRequested();
    void cancelRequested();

private:
    void updateEnabled();
    void showSelections();
    QComboBox* m_preset;
    QSpinBox* m_layer;
    QComboBox* m_parameter;
    QSpinBox* m_from;
    QSpinBox* m_to;
    QSpinBox* m_step;
    QCheckBox* m_doubling;
    QPushButton* m_sweep;
    QPushButton* m_cancel;
    QLabel* m_message;
    QLabel* m_selections;
    SweepChart* m_chart;
    Engine* m_engine;
    QString m_presetPoints;
    bool m_readOnly = false;
    int m_job = 0;
};

} // namespace convscope::gui
