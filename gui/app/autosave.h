// Nothing lost: while the window is open, the network being edited is written every few seconds, when it has
// changed since the last write, to the application data folder (QStandardPaths::AppDataLocation/autosave/
// autosave-<pid>.json), always through QSaveFile so a crash mid-write leaves the previous autosave whole.
// A clean close, and saving the document, remove it. At the next start a file left by a process that is no
// longer running means that process crashed: the window offers to restore it (the restored network is marked
// modified and keeps its original file path, so Save writes where the user expects and relative weight paths
// still resolve next to the original file).
//
// The file: {"convscope-autosave": 1, "file": "<original path or empty>", "saved": "<ISO time>", "pid": N,
//            "network": "<the network JSON, as Save would write it>"}
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

#include <functional>

class QWidget;

namespace convscope::gui {

class NetworkDocument;

class Autosave : public QObject {
    Q_OBJECT
public:
    static constexpr int kDefaultIntervalMs = 5000;

    Autosave(NetworkDocument* doc, QWidget* window);
    ~Autosave() override; // a clean shutdown: the autosave file goes

    void setIntervalMs(int ms) { m_timer.setInterval(ms); }
    QString filePath() const { return m_path; } // this process's autosave file
    static QString folder();

    // Writes now if the document changed since the last write (the timer calls this). False on a write error.
    bool saveNow();
    // Removes this process's autosave file (clean close, document saved).
    void discard();

    // Autosave files left by processes that are no longer running (crashed), newest first.
    static QStringList orphans();
    // Offers each orphan in turn (newest first) through `ask` (default: a question box naming the file and time);
    // restores the first one accepted into the document and removes every orphan it offered. True if restored.
    bool offerRestore();
    void setRestoreQuestion(std::function<bool(const QString& originalFile, const QString& savedAt)> ask)
    {
        m_ask = std::move(ask);
    }
    // Loads an autosave file into the document (modified, with its original file path). Reports problems through
    // problem() and returns false; the document is untouched then.
    bool restoreFrom(const QString& autosaveFile);

Q_SIGNALS:
    void problem(const QString& message);
    void saved(const QString& path);

private:
    NetworkDocument* m_doc;
    QWidget* m_window;
    QTimer m_timer;
    QString m_path;
    bool m_dirty = false;
    std::function<bool(const QString&, const QString&)> m_ask;
};

} // namespace convscope::gui
