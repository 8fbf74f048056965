// A run's progress wherever the user is: a strip at the right of the status bar with what runs now (the layer, its
// index of N, the selection and its pass), a progress bar, an estimate of the time left, and Cancel. Hidden while idle
// and for the live preview (a one-pass rerun after an edit, over in milliseconds); idle, it keeps its room, empty.
#pragma once

#include <QElapsedTimer>
#include <QString>
#include <QWidget>

class QLabel;
class QProgressBar;
class QPushButton;

namespace convscope {
struct RunProgress;
}

namespace convscope::gui {

class Engine;

class RunStatus : public QWidget {
    Q_OBJECT
public:
    explicit RunStatus(Engine* engine, QWidget* parent = nullptr);
    QString text() const;
    QPushButton* cancelButton() const { return m_cancel; }
    int percent() const;
    bool isActive() const; // a run is shown (its bar and Cancel)
    // What the strip says of a run at `where` (the layer first, then the selection and pass; no percentage).
    static QString describe(const RunProgress& where);

private:
    void update(double fraction, const QString& what);
    void stop();

    Engine* m_engine;
    QLabel* m_label;
    QProgressBar* m_bar;
    QPushButton* m_cancel;
    QElapsedTimer m_clock;
    int m_job = 0;
    QString m_text; // whole; the label shows it elided
};

// "12 s", "3 min 5 s": a time left for a person.
QString formatSeconds(double seconds);

} // namespace convscope::gui
