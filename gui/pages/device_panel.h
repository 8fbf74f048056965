// Device and method: what machine and which method every number on screen comes from (CPU and threads;
// GPU name, multiprocessors, memory, driver, CUDA and cuDNN versions; math mode; warm-ups, repeats and how
// time was taken), so nobody mistakes what a number means.
#pragma once

#include "gui/document/engine.h"
#include "gui/pages/page.h"

#include <QWidget>

class QTextBrowser;

namespace convscope::gui {

class DevicePanel : public QWidget, public Page {
    Q_OBJECT
public:
    explicit DevicePanel(QWidget* parent = nullptr);
    void setOutcome(RunOutcomePtr outcome, const QString& origin = {});
    void showOutcome(RunOutcomePtr outcome, const QString& origin) override { setOutcome(std::move(outcome), origin); }
    void clearOutcome() override;
    QString text() const;

private:
    QTextBrowser* m_text;
    QString m_machineHtml; // what this machine offers, shown before any run
};

} // namespace convscope::gui
