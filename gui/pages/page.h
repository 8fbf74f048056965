// A page of the window: a dock that shows what a run produced. The window builds its docks from one table
// (MainWindow's constructor: key, title, area, the dock it shares tabs with, and a factory given the engine), so a
// new page is one line there. Every outcome the window shows (a finished run, or an opened session, which no engine
// produced) and every change of the selected layer reaches every page through this interface; a page that needs
// more of the engine (sweeps, calibrations, progress) takes the engine and connects to its signals itself, as
// hotspot's pages take the parser.
#pragma once

#include "gui/document/engine.h"

#include <QString>

namespace convscope::gui {

class Page {
public:
    virtual ~Page() = default;
    // `sessionOrigin`: where an opened session came from (empty for a run of this window).
    virtual void showOutcome(RunOutcomePtr outcome, const QString& sessionOrigin) = 0;
    virtual void showLayer(int index) { (void)index; }
    // Another network was opened or created: forget everything shown about the previous one.
    virtual void clearOutcome() { showOutcome(nullptr, {}); }
};

} // namespace convscope::gui
