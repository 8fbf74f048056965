// The report a person takes away, as HTML (self-contained: charts embedded as base64 PNG) and as PDF
// (the same document laid out by QTextDocument on a QPdfWriter): title, device and method, the shapes
// table, the timing table and the charts. The device-and-method block is also what the Device panel shows.
#pragma once

#include "gui/document/engine.h"

#include <QImage>
#include <QList>
#include <QPair>
#include <QString>

class QIODevice;

namespace convscope::gui {

using ReportCharts = QList<QPair<QString, QImage>>; // title (first line) and caption (the rest), picture

// Device and method of a run: CPU and threads, each selection's device, driver, CUDA and cuDNN versions,
// math mode, warm-ups, repeats, interleaving, reference and how time was taken.
QString methodHtml(const RunOutcome& run, const QString& origin = {});
// embedImages: data: URLs (a standalone .html); otherwise "chart<N>.png" names for QTextDocument resources.
QString reportHtml(const RunOutcome& run, const ReportCharts& charts, bool embedImages, const QString& origin = {});
bool writePdfReport(QIODevice* out, const RunOutcome& run, const ReportCharts& charts, const QString& origin = {});

} // namespace convscope::gui
