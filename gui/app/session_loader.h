// Opens a session folder written by `convscope-cli run --save-session DIR` (compute/session.h) as a run
// outcome the views can show, with the ceilings the other machine measured and a line saying where the
// numbers come from.
#pragma once

#include "gui/document/engine.h"

#include <QString>

#include <utility>
#include <vector>

namespace convscope::gui {

struct LoadedSession {
    RunOutcomePtr outcome;
    std::vector<std::pair<QString, DeviceCeilings>> ceilings;
    QString origin; // "Saved session …: measured on … — read-only"
    SweepResultPtr sweep; // null when the session has none
};

// Throws InputError (with the file and the reason) when the folder is not a readable session.
LoadedSession loadSessionFolder(const QString& dir);

} // namespace convscope::gui
