#include "gui/pages/device_panel.h"

#include "compute/backend_registry.h"
#include "compute/system_info.h"
#include "gui/app/html_report.h"

#include <QTextBrowser>
#include <QVBoxLayout>

namespace convscope::gui {

DevicePanel::DevicePanel(QWidget* parent)
    : QWidget(parent)
    , m_text(new QTextBrowser(this))
{
    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(m_text);
    m_text->setObjectName(QStringLiteral("deviceText"));
    // Before any run: what this machine offers.
    QString h = tr("<p><b>This machine</b>: %1 (%2 threads)</p>")
                    .arg(QString::fromStdString(cpuModel()).toHtmlEscaped())
                    .arg(cpuThreads());
    for (const auto& b : BackendRegistry::instance().backends()) {
        const Availability av = b->availability();
        h += QStringLiteral("<p><b>%1</b>: ").arg(QString::fromStdString(b->name()));
        if (!av.available) {
            h += tr("unavailable — %1</p>").arg(QString::fromStdString(av.reason).toHtmlEscaped());
            continue;
        }
        QStringList parts;
        for (const auto& [k, v] : b->info())
            parts << QStringLiteral("%1 %2").arg(QString::fromStdString(k), QString::fromStdString(v).toHtmlEscaped());
        h += parts.join(QStringLiteral(" · ")) + QStringLiteral("</p>");
    }
    m_machineHtml = h + tr("<p>Run a network to see the method of its numbers here.</p>");
    m_text->setHtml(m_machineHtml);
}

void DevicePanel::clearOutcome() { m_text->setHtml(m_machineHtml); }

void DevicePanel::setOutcome(RunOutcomePtr outcome, const QString& origin)
{
    if (!outcome || outcome->live)
        return;
    m_text->setHtml(methodHtml(*outcome, origin));
}

QString DevicePanel::text() const { return m_text->toPlainText(); }

} // namespace convscope::gui
