// Export (File ▸ Export and the toolbar): the timing report as CSV, JSON, Markdown, self-contained HTML or
// PDF (those two with the charts and the chosen layers' feature maps); the chart on show as PNG, SVG or PDF; the
// feature-map grid as PNG; the Chrome trace; the network itself as an ONNX model (weights included) for onnxruntime,
// PyTorch and the other tools. Every file goes through QSaveFile (a failed export leaves an existing file as it was)
// and an existing file is never replaced without asking.
#pragma once

#include "gui/app/html_report.h"
#include "gui/document/engine.h"

#include <QObject>
#include <QSize>

#include <functional>

class QAction;
class QIODevice;
class QWidget;

namespace convscope::gui {

class ChartView;

class ExportController : public QObject {
    Q_OBJECT
public:
    explicit ExportController(QWidget* window);

    struct Sources {
        std::function<RunOutcomePtr()> outcome; // the run on show (null: nothing to export)
        std::function<ChartView*()> currentChart; // the chart page in front
        std::function<QList<ChartView*>()> reportCharts; // charts that go into HTML and PDF reports
        std::function<QList<int>()> reportLayers; // layers whose feature maps go into HTML and PDF reports
        QWidget* featureMaps = nullptr;
        std::function<QString()> origin; // "measured on … (saved session)"; empty for a run made here
        std::function<const Network*()> network; // the network being edited (ONNX export)
    };
    void setSources(Sources s) { m_sources = std::move(s); }

    QAction* reportAction() const { return m_report; }
    QAction* chartAction() const { return m_chart; }
    QAction* mapsAction() const { return m_maps; }
    QAction* traceAction() const { return m_trace; }
    QAction* onnxAction() const { return m_onnx; }

    // Format from the extension. Return false (and emit problem) on failure or when the user declines to
    // overwrite.
    bool exportReport(const QString& path);
    bool exportChart(ChartView* chart, const QString& path, QSize size = QSize(1200, 700));
    bool exportFeatureMaps(const QString& path);
    bool exportTrace(const QString& path);
    bool exportOnnx(const QString& path);
    // A chart as the HTML and PDF reports hold it (a picture; vectors at a size that keeps its text ≥ 8 pt in the PDF).
    static ReportChart reportChart(ChartView* chart);

    // Replace the questions (tests, headless): overwrite `path`? / which path (empty: cancelled)?
    void setOverwriteQuestion(std::function<bool(const QString&)> ask) { m_overwrite = std::move(ask); }
    void setPathQuestion(std::function<QString(const QString& title, const QString& filter)> ask)
    {
        m_askPath = std::move(ask);
    }

Q_SIGNALS:
    void problem(const QString& message);
    void exported(const QString& path);

private:
    bool write(const QString& path, const std::function<bool(QIODevice*)>& body);
    QString askPath(const QString& title, const QString& filter);
    RunOutcomePtr outcomeOrComplain();

    QWidget* m_window;
    Sources m_sources;
    QAction* m_report;
    QAction* m_chart;
    QAction* m_maps;
    QAction* m_trace;
    QAction* m_onnx;
    std::function<bool(const QString&)> m_overwrite;
    std::function<QString(const QString&, const QString&)> m_askPath;
};

} // namespace convscope::gui
