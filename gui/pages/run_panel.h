// Run control: one check box per backend algorithm from the registry (unavailable ones greyed out with
// the reason as tooltip), warm-ups and repeats, Run, a progress bar and Cancel, and the live-preview
// switch. Its controls are a view of the engine's run settings (Engine::runSettings): a change here writes them, and
// a change made elsewhere (a sweep preset, a pin from the Explorer) shows here. It asks (the window hands the run to
// the engine) and follows the engine: started, progress, the outcome's summary or the reason a run failed.
#pragma once

#include "gui/document/engine.h"

#include <QMap>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace convscope::gui {

class RunPanel : public QWidget {
    Q_OBJECT
public:
    explicit RunPanel(Engine* engine, QWidget* parent = nullptr);

    RunRequest request() const; // the engine's run settings as a request
    // Checks exactly these selections (those that exist and are available); false if one is unknown.
    bool setSelections(const std::vector<Selection>& selections, QString* why = nullptr);
    void setWarmupRepeat(int warmup, int repeat);
    QCheckBox* selectionBox(const QString& selection) const { return m_boxes.value(selection); }
    // Checks cudnn.<algorithm> (or any selection) for the next run, keeping the others; false if it cannot run here.
    bool pin(const Selection& selection);
    void setExplore(bool on);
    void setMathMode(MathMode m);
    QCheckBox* exploreBox() const { return m_explore; }
    QCheckBox* referenceBox() const { return m_reference; }
    bool liveEnabled() const;
    void setLiveEnabled(bool on);
    QPushButton* runButton() const { return m_run; }
    QPushButton* cancelButton() const { return m_cancel; }

    void setBlockedReason(const QString& reason); // empty: the network can run
    void setRunning(bool running, bool live);
    void setProgress(double fraction, const QString& what);
    void setMessage(const QString& text);
    QString message() const;

Q_SIGNALS:
    void runRequested();
    void cancelRequested();
    void liveToggled(bool on);

private:
    void updateRunEnabled();
    void writeSettings(); // the controls into the engine's run settings
    void showSettings(); // the engine's run settings into the controls
    Engine* m_engine;
    void showFinished(const RunOutcome& outcome);
    QMap<QString, QCheckBox*> m_boxes;
    QSpinBox* m_warmup;
    QSpinBox* m_repeat;
    QCheckBox* m_live;
    QCheckBox* m_explore;
    QCheckBox* m_reference;
    QComboBox* m_math;
    QPushButton* m_run;
    QPushButton* m_cancel;
    QProgressBar* m_progress;
    QLabel* m_message;
    QString m_blocked;
    bool m_running = false;
};

} // namespace convscope::gui
