// A message strip at the top of the window for problems a person must read (a malformed network file,
// an unreadable image): it stays until closed or replaced, and never blocks like a modal dialog.
#pragma once

#include <QWidget>

class QLabel;

namespace convscope::gui {

class MessageBanner : public QWidget {
    Q_OBJECT
public:
    explicit MessageBanner(QWidget* parent = nullptr);
    void showError(const QString& text);
    void showInfo(const QString& text);
    QString text() const;
    void dismiss();

private:
    void showMessage(const QString& text, bool error);
    QLabel* m_label;
};

} // namespace convscope::gui
