// The cuDNN algorithm explorer for the selected conv layer: every algorithm with its status or cuDNN's
// reason it cannot run, our median time, cuDNN's Find time, workspace, determinism and math type, as a
// table and a bar chart; "Pin" checks that algorithm (cudnn.<name>) for the next run. The data comes from
// the profiler's explore pass (Run panel: "Explore cuDNN algorithms"), never from a second engine.
#pragma once

#include "gui/document/engine.h"
#include "gui/pages/page.h"

#include <QWidget>

class QLabel;
class QPushButton;
class QTableWidget;

namespace convscope::gui {

class ExplorerChart;

class ExplorerPanel : public QWidget, public Page {
    Q_OBJECT
public:
    explicit ExplorerPanel(QWidget* parent = nullptr);
    void setOutcome(RunOutcomePtr outcome);
    void setLayer(int index);
    void showOutcome(RunOutcomePtr outcome, const QString&) override { setOutcome(std::move(outcome)); }
    void showLayer(int index) override { setLayer(index); }
    QTableWidget* table() const { return m_table; }
    ExplorerChart* chart() const { return m_chart; }
    QPushButton* pinButton() const { return m_pin; }
    QString status() const;
    enum Column { Algorithm, Status, Median, Find, Workspace, Deterministic, Math, Reason, ColumnCount };

Q_SIGNALS:
    void pinRequested(const convscope::Selection& selection);

private:
    void refresh();
    RunOutcomePtr m_outcome;
    int m_layer = -1;
    QLabel* m_status;
    QTableWidget* m_table;
    ExplorerChart* m_chart;
    QPushButton* m_pin;
};

} // namespace convscope::gui
