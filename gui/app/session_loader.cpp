#include "gui/app/session_loader.h"

#include "compute/session.h"

#include <QDir>

namespace convscope::gui {

LoadedSession loadSessionFolder(const QString& dir)
{
    SavedSession s = readSession(dir.toStdString());
    auto outcome = std::make_shared<RunOutcome>();
    outcome->jobId = -1;
    outcome->network = s.network;
    outcome->input = std::move(s.input);
    outcome->result = std::move(s.result);
    LoadedSession out;
    QStringList devices;
    for (const auto& sel : outcome->result.selections) {
        auto it = sel.metadata.find("device");
        if (sel.ok && it != sel.metadata.end() && !devices.contains(QString::fromStdString(it->second)))
            devices << QString::fromStdString(it->second);
    }
    if (devices.isEmpty())
        devices << QString::fromStdString(outcome->result.meta.cpuModel);
    out.origin = QObject::tr("Saved session %1: measured on %2 on %3 — read-only")
                     .arg(QDir(dir).dirName(), devices.join(QStringLiteral(", ")),
                         QString::fromStdString(outcome->result.meta.date));
    for (const auto& e : s.ceilings)
        out.ceilings.emplace_back(QString::fromStdString(e.backend), e.ceilings);
    if (s.sweep)
        out.sweep = std::make_shared<const SweepResult>(std::move(*s.sweep));
    out.outcome = outcome;
    return out;
}

} // namespace convscope::gui
