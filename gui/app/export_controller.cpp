#include "gui/app/export_controller.h"

#include "compute/onnx_model.h"
#include "compute/report.h"
#include "gui/app/html_report.h"
#include "gui/charts/chart_view.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QSaveFile>
#include <QStyle>
#include <QWidget>

namespace convscope::gui {

ExportController::ExportController(QWidget* window)
    : QObject(window)
    , m_window(window)
    , m_report(new QAction(tr("Export &report…"), this))
    , m_chart(new QAction(tr("Export &chart…"), this))
    , m_maps(new QAction(tr("Export &feature maps…"), this))
    , m_trace(new QAction(tr("Export Chrome &trace…"), this))
    , m_onnx(new QAction(tr("Export network as &ONNX…"), this))
{
    m_report->setObjectName(QStringLiteral("exportReport"));
    m_report->setIcon(window->style()->standardIcon(QStyle::SP_DialogSaveButton));
    m_report->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    m_report->setToolTip(tr("The timing report as CSV, JSON, Markdown, HTML (charts inside) or PDF"));
    m_chart->setObjectName(QStringLiteral("exportChart"));
    m_maps->setObjectName(QStringLiteral("exportMaps"));
    m_trace->setObjectName(QStringLiteral("exportTrace"));
    m_onnx->setObjectName(QStringLiteral("exportOnnx"));
    m_onnx->setToolTip(tr("The network with its weights as an ONNX model (opset 17) for onnxruntime, PyTorch and "
                          "other tools"));
    m_onnx->setEnabled(onnxSupported());
    if (!onnxSupported())
        m_onnx->setToolTip(QString::fromStdString(onnxUnsupportedReason()));
    connect(m_report, &QAction::triggered, this, [this] {
        const QString p = askPath(tr("Export report"),
            tr("PDF (*.pdf);;HTML with charts (*.html);;Markdown (*.md);;CSV (*.csv);;JSON (*.json)"));
        if (!p.isEmpty())
            exportReport(p);
    });
    connect(m_chart, &QAction::triggered, this, [this] {
        ChartView* c = m_sources.currentChart ? m_sources.currentChart() : nullptr;
        if (!c) {
            Q_EMIT problem(tr("No chart is on show to export"));
            return;
        }
        const QString p = askPath(tr("Export chart"), tr("PNG (*.png);;SVG (*.svg);;PDF (*.pdf)"));
        if (!p.isEmpty())
            exportChart(c, p);
    });
    connect(m_maps, &QAction::triggered, this, [this] {
        const QString p = askPath(tr("Export feature maps"), tr("PNG (*.png)"));
        if (!p.isEmpty())
            exportFeatureMaps(p);
    });
    connect(m_trace, &QAction::triggered, this, [this] {
        const QString p = askPath(tr("Export Chrome trace"), tr("Chrome trace (*.json)"));
        if (!p.isEmpty())
            exportTrace(p);
    });
    connect(m_onnx, &QAction::triggered, this, [this] {
        const QString p = askPath(tr("Export network as ONNX"), tr("ONNX model (*.onnx)"));
        if (!p.isEmpty())
            exportOnnx(p);
    });
}

QString ExportController::askPath(const QString& title, const QString& filter)
{
    if (m_askPath)
        return m_askPath(title, filter);
    QString selected;
    QString p = QFileDialog::getSaveFileName(
        m_window, title, QString(), filter, &selected, QFileDialog::DontConfirmOverwrite); // we ask ourselves
    if (!p.isEmpty() && QFileInfo(p).suffix().isEmpty()) {
        // "PDF (*.pdf)" → ".pdf"
        const int star = selected.indexOf(QLatin1String("*."));
        if (star >= 0)
            p += selected.mid(star + 1, selected.indexOf(QLatin1Char(')'), star) - star - 1);
    }
    return p;
}

bool ExportController::write(const QString& path, const std::function<bool(QIODevice*)>& body)
{
    if (QFileInfo::exists(path)) {
        const bool yes = m_overwrite ? m_overwrite(path)
                                     : QMessageBox::question(m_window, tr("Replace file?"),
                                           tr("%1 already exists. Replace it?").arg(QFileInfo(path).fileName()))
                == QMessageBox::Yes;
        if (!yes)
            return false;
    }
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly)) {
        Q_EMIT problem(tr("Cannot write %1: %2").arg(path, f.errorString()));
        return false;
    }
    bool ok = false;
    try {
        ok = body(&f);
    } catch (const std::exception& e) {
        f.cancelWriting();
        Q_EMIT problem(tr("Cannot export %1: %2").arg(path, QString::fromStdString(e.what())));
        return false;
    }
    if (!ok) {
        f.cancelWriting();
        Q_EMIT problem(tr("Cannot export %1").arg(path));
        return false;
    }
    if (!f.commit()) {
        Q_EMIT problem(tr("Cannot write %1: %2").arg(path, f.errorString()));
        return false;
    }
    Q_EMIT exported(path);
    return true;
}

bool ExportController::exportOnnx(const QString& path)
{
    const Network* net = m_sources.network ? m_sources.network() : nullptr;
    if (!net) {
        Q_EMIT problem(tr("No network to export"));
        return false;
    }
    // The model is made (and checked by ONNX's checker) before the file is touched: a network ONNX cannot express
    // leaves an existing file as it was.
    return write(path, [net](QIODevice* f) {
        const std::string bytes = exportOnnxBytes(*net);
        return f->write(bytes.data(), qint64(bytes.size())) == qint64(bytes.size());
    });
}

RunOutcomePtr ExportController::outcomeOrComplain()
{
    RunOutcomePtr o = m_sources.outcome ? m_sources.outcome() : nullptr;
    if (!o || o->live) {
        Q_EMIT problem(tr("Nothing to export yet: run the network first (the live preview is not a measurement)"));
        return nullptr;
    }
    return o;
}

ReportChart ExportController::reportChart(ChartView* c)
{
    c->flush();
    const std::function<void()> restore = c->showForReport();
    ReportChart chart;
    chart.text = c->chartTitle() + QLatin1Char('\n') + c->caption();
    chart.image = c->toImage(QSize(960, 480));
    chart.fontPoints = c->smallestFontPoints();
    chart.logical = pdfChartSize(chart.fontPoints, QSize(960, 480));
    chart.vector = c->toPicture(chart.logical);
    if (restore)
        restore();
    return chart;
}

bool ExportController::exportReport(const QString& path)
{
    const RunOutcomePtr o = outcomeOrComplain();
    if (!o)
        return false;
    const QString ext = QFileInfo(path).suffix().toLower();
    const QString origin = m_sources.origin ? m_sources.origin() : QString();
    auto text = [](const std::string& s) {
        return [s](QIODevice* d) { return d->write(s.data(), qint64(s.size())) == qint64(s.size()); };
    };
    auto charts = [this] {
        ReportCharts out;
        if (m_sources.reportCharts)
            for (ChartView* c : m_sources.reportCharts())
                out << reportChart(c);
        return out;
    };
    auto maps = [this, o] { return reportMaps(*o, m_sources.reportLayers ? m_sources.reportLayers() : QList<int> {}); };
    if (ext == QLatin1String("csv"))
        return write(path, text(reportCsv(o->network, o->result)));
    if (ext == QLatin1String("json"))
        return write(path, text(reportJson(o->network, o->result)));
    if (ext == QLatin1String("md"))
        return write(path, text(reportMarkdown(o->network, o->result)));
    if (ext == QLatin1String("html") || ext == QLatin1String("htm"))
        return write(path, text(reportHtml(*o, charts(), true, origin, maps()).toStdString()));
    if (ext == QLatin1String("pdf"))
        return write(path, [&](QIODevice* d) { return writePdfReport(d, *o, charts(), origin, maps()); });
    Q_EMIT problem(tr("%1: unknown report format (use .csv, .json, .md, .html or .pdf)").arg(path));
    return false;
}

bool ExportController::exportChart(ChartView* chart, const QString& path, QSize size)
{
    const QString ext = QFileInfo(path).suffix().toLower();
    chart->flush();
    if (ext == QLatin1String("png"))
        return write(path, [&](QIODevice* d) { return chart->writePng(d, size); });
    if (ext == QLatin1String("svg"))
        return write(path, [&](QIODevice* d) { return chart->writeSvg(d, size); });
    if (ext == QLatin1String("pdf"))
        return write(path, [&](QIODevice* d) { return chart->writePdf(d, size); });
    Q_EMIT problem(tr("%1: unknown chart format (use .png, .svg or .pdf)").arg(path));
    return false;
}

bool ExportController::exportFeatureMaps(const QString& path)
{
    if (!m_sources.featureMaps)
        return false;
    const QImage img = m_sources.featureMaps->grab().toImage();
    return write(path, [&](QIODevice* d) { return img.save(d, "PNG"); });
}

bool ExportController::exportTrace(const QString& path)
{
    const RunOutcomePtr o = outcomeOrComplain();
    if (!o)
        return false;
    const std::string trace = reportChromeTrace(o->network, o->result);
    return write(
        path, [&](QIODevice* d) { return d->write(trace.data(), qint64(trace.size())) == qint64(trace.size()); });
}

} // namespace convscope::gui
