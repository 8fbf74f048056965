// The project: New, Open, Save, Save As (the network JSON written with QSaveFile), recent files, the
// bundled example networks, and the prompt before unsaved changes are thrown away. A file that cannot
// be opened leaves the current network untouched and is reported through problem().
#pragma once

#include "gui/document/network_document.h"

#include <QObject>
#include <QStringList>

#include <functional>

class QAction;
class QMenu;
class QWidget;

namespace convscope::gui {

class ProjectController : public QObject {
    Q_OBJECT
public:
    ProjectController(NetworkDocument* doc, QWidget* window);

    QAction* newAction() const { return m_new; }
    QAction* openAction() const { return m_open; }
    QAction* saveAction() const { return m_save; }
    QAction* saveAsAction() const { return m_saveAs; }
    QMenu* recentMenu() const { return m_recent; }
    QMenu* examplesMenu() const { return m_examples; }

    bool newNetwork();
    bool openFile(const QString& path); // asks about unsaved changes first
    static QString readLabelsBeside(const QString& model, std::vector<std::string>* labels);
    bool save();
    bool saveAs();
    bool saveTo(const QString& path);
    // True when there is nothing unsaved or the user agreed to lose it (or saved it).
    bool maybeDiscard();
    // Replaces the question (tests, headless mode): return Save, Discard or Cancel.
    enum class Answer { Save, Discard, Cancel };
    void setDiscardQuestion(std::function<Answer()> ask) { m_ask = std::move(ask); }

    static QString examplesDir();
    QStringList recentFiles() const;

Q_SIGNALS:
    void problem(const QString& message);
    void opened(const QString& path);
    void status(const QString& message); // for the status bar

private:
    void addRecent(const QString& path);
    void rebuildRecentMenu();
    void rebuildExamplesMenu();

    NetworkDocument* m_doc;
    QWidget* m_window;
    QAction* m_new;
    QAction* m_open;
    QAction* m_save;
    QAction* m_saveAs;
    QMenu* m_recent;
    QMenu* m_examples;
    std::function<Answer()> m_ask;
};

} // namespace convscope::gui
