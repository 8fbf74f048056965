// What the window does without a person: the screenshot mode for documentation and checks, and the
// edit-to-screen latency benchmark. Both drive the real window through its own widgets.
#pragma once

#include <QSize>
#include <QString>
#include <QStringList>

namespace convscope::gui {

class MainWindow;

struct ScreenshotOptions {
    QString network; // opened first (optional)
    QString session; // a saved session folder to open read-only instead
    QString view; // the analysis page in front: timing, roofline, explorer, sweep, device
    QString sweepPreset; // "unet-channels", "crossover", "kernel-size", optionally ":A-B" (points A to B)
    QString exportReport; // also write the report here (.pdf, .html, .md, .csv, .json)
    bool explore = false;
    bool presentation = false;
    int presentationToggles = 0; // toggle presentation mode this many times before the shot, saying if the layout held
    QString graph; // "expanded" or "collapsed": every block of the graph page so
    QStringList selections; // run these; empty: wait for the live preview
    int selectLayer = -1;
    int batchItem = -1; // the batch item whose maps are shown (-1: the first)
    bool difference = false; // show |selection − reference| (the first selection against the reference)
    int warmup = 1, repeat = 3;
    QString output;
    QSize size { 1600, 1000 };
    int timeoutMs = 120000;
};

// Returns the process exit status; prints what went wrong to stderr.
int runScreenshot(MainWindow& window, const ScreenshotOptions& options);
int runLatencyBenchmark(MainWindow& window, int iterations);

} // namespace convscope::gui
