#include "gui/app/html_report.h"

#include "compute/report.h"

#include <QBuffer>

namespace convscope::gui {

namespace {
    QString esc(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }
    QString q(const std::string& s) { return QString::fromStdString(s); }
    // The report's milliseconds as the CLI's tables print them (compute/report.h), named in full because
    // convscope::gui has a formatMs of its own (gui/views/format.h) with another format.
    QString ms(double v) { return q(convscope::formatMs(v)); }

    // A row whose cells keep their text on one line but the last (a note, a description) and headings of several words,
    // so that no number or name is split across lines in a narrow column (the PDF split "2.361" and "im2col_gemm").
    QString row(const QStringList& cells, bool header = false)
    {
        QString r = QStringLiteral("<tr>");
        for (int i = 0; i < cells.size(); ++i)
            // The cell's border and padding again: QTextDocument drops the style sheet's for a cell with a style of its
            // own.
            r += QStringLiteral(
                "<%1 style=\"border:1px solid #bbb;padding:2px 4px;font-size:9pt;white-space:%2\">%3</%1>")
                     .arg(header ? QStringLiteral("th") : QStringLiteral("td"),
                         i + 1 < cells.size() && !(header && cells[i].contains(QLatin1Char(' ')))
                             ? QStringLiteral("nowrap")
                             : QStringLiteral("normal"),
                         cells[i]);
        return r + QStringLiteral("</tr>\n");
    }

    const char* kStyle = "body{font-family:sans-serif;font-size:10pt;color:#222}"
                         "h1{font-size:18pt}h2{font-size:13pt;margin-top:16px}"
                         "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:2px 6px}"
                         "th{background:#eee}td.n{text-align:right}.small{color:#555;font-size:9pt}"
                         ".over{color:#b71c1c;font-weight:bold}";

    // "3.1e-3 (bound 1.9e-2)"; a layer above its math mode's rounding bound in the warning colour the window uses
    // for failures (a span, not a cell class: QTextDocument, which prints the PDF, honours it there too).
    QString errorCell(const ErrorMetrics& e)
    {
        if (!e.valid)
            return QStringLiteral("—");
        const QString text = q(relL2Text(e));
        if (!exceedsBound(e))
            return text;
        return QStringLiteral("<span class=\"over\" style=\"color:#b71c1c\">%1 ⚠ %2</span>")
            .arg(text, QObject::tr("above the bound"));
    }
} // namespace

QString methodHtml(const RunOutcome& run, const QString& origin)
{
    const RunResult& r = run.result;
    const RunMetadata& m = r.meta;
    QString h;
    if (!origin.isEmpty())
        h += QStringLiteral("<p><b>%1</b></p>").arg(origin.toHtmlEscaped());
    h += QStringLiteral("<table>");
    h += row({ QObject::tr("CPU"), QStringLiteral("%1 (%2 threads)").arg(esc(m.cpuModel)).arg(m.cpuThreads) });
    for (const auto& [k, v] : m.libraries)
        h += row({ esc(k), esc(v) });
    h += row({ QObject::tr("Math mode"),
        esc(m.mathMode)
            + QObject::tr(" (FP32 = no Tensor Cores; errors of TF32/FP16/BF16 runs are against the FP32 reference)") });
    h += row({ QObject::tr("Warm-ups / repeats"),
        QStringLiteral("%1 / %2%3")
            .arg(m.warmup)
            .arg(m.repeat)
            .arg(m.interleaved ? QObject::tr(", interleaved") : QString()) });
    h += row({ QObject::tr("Reference"), m.reference.empty() ? QObject::tr("none") : esc(m.reference) });
    h += row({ QObject::tr("How time was taken"), esc(m.timing) });
    h += row({ QObject::tr("Date"), esc(m.date) + QStringLiteral(" · ConvScope ") + esc(m.convscopeVersion) });
    h += QStringLiteral("</table>");
    // Each selection's own record: device, driver, CUDA, cuDNN, SMs, memory, math as it ran.
    static const char* order[] = { "device", "sm_count", "memory", "compute_capability", "driver", "cuda_runtime",
        "cuda", "cudnn", "math", "threads" };
    for (const auto& sel : r.selections) {
        if (!sel.ok) {
            h += QStringLiteral("<p><b>%1</b> did not run: %2</p>").arg(esc(sel.selection.str()), esc(sel.failure));
            continue;
        }
        if (sel.metadata.empty())
            continue;
        h += QStringLiteral("<p><b>%1</b>: ").arg(esc(sel.selection.str()));
        QStringList parts;
        std::map<std::string, std::string> rest = sel.metadata;
        for (const char* k : order)
            if (auto it = rest.find(k); it != rest.end()) {
                parts << QStringLiteral("%1 %2").arg(
                    QString::fromLatin1(k).replace(QLatin1Char('_'), QLatin1Char(' ')), esc(it->second));
                rest.erase(it);
            }
        for (const auto& [k, v] : rest)
            parts << QStringLiteral("%1 %2").arg(esc(k), esc(v));
        h += parts.join(QStringLiteral(" · ")) + QStringLiteral("</p>");
    }
    return h;
}

QString reportHtml(
    const RunOutcome& run, const ReportCharts& charts, bool embedImages, const QString& origin, const ReportMaps& maps)
{
    const RunResult& r = run.result;
    const Network& net = run.network;
    QString h
        = QStringLiteral("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ConvScope report: %1</title>"
                         "<style>%2</style></head><body>\n")
              .arg(esc(r.networkName), QString::fromLatin1(kStyle));
    h += QStringLiteral("<h1>ConvScope report: %1</h1>\n").arg(esc(r.networkName));
    h += QStringLiteral("<p class=\"small\">Input %1 (%2)</p>").arg(q(r.shapes.input.str()), esc(net.input.source));
    h += QStringLiteral("<h2>Device and method</h2>\n") + methodHtml(run, origin);

    h += QStringLiteral("<h2>Shapes</h2>\n<table>\n");
    h += row({ QStringLiteral("#"), QObject::tr("layer"), QObject::tr("type"), QObject::tr("output"),
                 QObject::tr("parameters"), QObject::tr("FLOPs"), QObject::tr("FLOP/byte") },
        true);
    for (size_t i = 0; i < net.layers.size() && i < r.shapes.layers.size(); ++i) {
        const auto& s = r.shapes.layers[i];
        h += row({ QString::number(i), esc(net.layers[i].name), q(layerTypeName(net.layers[i].spec)), q(s.out.str()),
            q(humanCount(double(s.cost.params))), q(humanCount(s.cost.flops)),
            QString::number(s.cost.intensity(), 'f', 2) });
    }
    h += QStringLiteral("</table>\n<h2>Timing (compute per layer, ms)</h2>\n<table>\n");
    h += row({ QStringLiteral("#"), QObject::tr("layer"), QObject::tr("selection"), QObject::tr("median"),
                 QObject::tr("min"), QObject::tr("max"), QObject::tr("GFLOP/s"),
                 QObject::tr("rel L2 error (rounding bound)"), QObject::tr("note") },
        true);
    for (const auto& sel : r.selections) {
        if (!sel.ok)
            continue;
        for (const auto& l : sel.layers) {
            const double flops = l.index < r.shapes.layers.size() ? r.shapes.layers[l.index].cost.flops : 0;
            const QString name = l.index < net.layers.size() ? esc(net.layers[l.index].name) : QString();
            h += row({ QString::number(l.index), name, esc(sel.selection.str()), ms(l.computeMs.median),
                ms(l.computeMs.min), ms(l.computeMs.max),
                l.computeMs.median > 0 ? QString::number(flops / (l.computeMs.median * 1e6), 'g', 4) : QString(),
                errorCell(l.error), esc(l.note) });
        }
        h += row({ QString(), QObject::tr("<i>whole pass</i>"), esc(sel.selection.str()), ms(sel.totalMs.median),
            ms(sel.totalMs.min), ms(sel.totalMs.max), QString(), QString(),
            QObject::tr("copies: %1 ms in, %2 ms out").arg(ms(sel.h2dMs.median), ms(sel.d2hMs.median)) });
    }
    h += QStringLiteral("</table>\n");
    // A picture: embedded as a data: URL in a standalone file, else a resource name the PDF's document resolves.
    auto img = [embedImages](const QImage& image, const QString& name, const QString& alt, int width) {
        QString src = name;
        if (embedImages) {
            QByteArray png;
            QBuffer buf(&png);
            buf.open(QIODevice::WriteOnly);
            image.save(&buf, "PNG");
            src = QStringLiteral("data:image/png;base64,") + QString::fromLatin1(png.toBase64());
        }
        return QStringLiteral("<p><img src=\"%1\" width=\"%2\" alt=\"%3\"></p>\n").arg(src).arg(width).arg(alt);
    };
    if (!maps.isEmpty()) {
        h += QStringLiteral("<h2>%1</h2>\n").arg(QObject::tr("Feature maps"));
        h += QStringLiteral("<p class=\"small\">%1</p>\n")
                 .arg(QObject::tr("Batch item 0, one tile per channel, all on one colour range."));
        for (int i = 0; i < maps.size(); ++i) {
            h += QStringLiteral("<h3>%1</h3>\n").arg(maps[i].title.toHtmlEscaped());
            h += img(maps[i].image, QStringLiteral("map%1.png").arg(i), maps[i].title.toHtmlEscaped(),
                std::min(900, maps[i].image.width()));
        }
    }
    for (int i = 0; i < charts.size(); ++i) {
        const QString title = charts[i].text.section(QLatin1Char('\n'), 0, 0);
        const QString caption = charts[i].text.section(QLatin1Char('\n'), 1);
        h += QStringLiteral("<h2>%1</h2>\n").arg(title.toHtmlEscaped());
        if (!caption.isEmpty())
            h += QStringLiteral("<p class=\"small\">%1</p>\n")
                     .arg(caption.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>")));
        h += img(charts[i].image, QStringLiteral("chart%1.png").arg(i), title.toHtmlEscaped(),
            std::min(900, charts[i].image.width()));
    }
    h += QStringLiteral("<p class=\"small\">Made with ConvScope. Times are medians of the timed repeats; "
                        "GFLOP/s counts a multiply-add as 2 FLOPs.</p></body></html>\n");
    return h;
}

} // namespace convscope::gui
