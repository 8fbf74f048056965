#include "gui/pages/explorer_panel.h"

#include "gui/charts/explorer_chart.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace convscope::gui {

ExplorerPanel::ExplorerPanel(QWidget* parent)
    : QWidget(parent)
    , m_status(new QLabel(this))
    , m_table(new QTableWidget(this))
    , m_chart(new ExplorerChart(this))
    , m_pin(new QPushButton(tr("Pin for the next run"), this))
{
    auto* box = new QVBoxLayout(this);
    box->setContentsMargins(4, 4, 4, 4);
    auto* top = new QHBoxLayout;
    m_status->setWordWrap(true);
    m_status->setObjectName(QStringLiteral("explorerStatus"));
    top->addWidget(m_status, 1);
    m_pin->setObjectName(QStringLiteral("pinAlgorithm"));
    m_pin->setEnabled(false);
    top->addWidget(m_pin);
    box->addLayout(top);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_table);
    split->addWidget(m_chart);
    box->addWidget(split, 1);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);

    m_table->setObjectName(QStringLiteral("explorerTable"));
    m_table->setColumnCount(ColumnCount);
    m_table->setHorizontalHeaderLabels({ tr("algorithm"), tr("status"), tr("median ms"), tr("Find ms"), tr("workspace"),
        tr("deterministic"), tr("math"), tr("reason") });
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setWordWrap(false);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, [this] {
        const int row = m_table->currentRow();
        // Only a row that ran and names a pinnable algorithm (the graph API row has no selection of its own).
        const bool ok = row >= 0 && m_table->item(row, Status)
            && m_table->item(row, Status)->text().startsWith(QLatin1String("ok"))
            && m_table->item(row, Algorithm)->data(Qt::UserRole).toBool();
        m_pin->setEnabled(ok);
    });
    connect(m_pin, &QPushButton::clicked, this, [this] {
        const int row = m_table->currentRow();
        if (row >= 0)
            Q_EMIT pinRequested(Selection { "cudnn", m_table->item(row, Algorithm)->text().toStdString() });
    });
    refresh();
}

void ExplorerPanel::setOutcome(RunOutcomePtr outcome)
{
    if (outcome && outcome->live)
        return; // the live preview never explores; keep what the last real run found
    m_outcome = std::move(outcome);
    refresh();
}

void ExplorerPanel::setLayer(int index)
{
    m_layer = index;
    refresh();
}

QString ExplorerPanel::status() const { return m_status->text(); }

void ExplorerPanel::refresh()
{
    m_table->setRowCount(0);
    QString document;
    if (m_outcome && m_layer >= 0)
        for (const auto& sel : m_outcome->result.selections)
            if (sel.ok && size_t(m_layer) < sel.layers.size() && !sel.layers[size_t(m_layer)].explorerJson.empty()) {
                document = QString::fromStdString(sel.layers[size_t(m_layer)].explorerJson);
                break;
            }
    if (document.isEmpty()) {
        const bool conv = m_outcome && m_layer >= 0 && size_t(m_layer) < m_outcome->network.layers.size()
            && (std::holds_alternative<Conv2d>(m_outcome->network.layers[size_t(m_layer)].spec)
                || std::holds_alternative<Conv3d>(m_outcome->network.layers[size_t(m_layer)].spec));
        m_status->setText(!m_outcome ? tr("Run with “Explore cuDNN algorithms” checked to see every algorithm of a "
                                          "conv layer.")
                : !conv ? tr("Select a conv2d or conv3d layer: the explorer asks cuDNN about convolutions.")
                        : tr("No explorer data for this layer: run a cudnn selection with “Explore "
                             "cuDNN algorithms” checked."));
        m_chart->setAlgorithms(tr("cuDNN algorithms"), {});
        m_pin->setEnabled(false);
        return;
    }
    const QJsonObject doc = QJsonDocument::fromJson(document.toUtf8()).object();
    QJsonArray algos = doc.value(QStringLiteral("algorithms")).toArray();
    // The run's other selections of this layer (ours: cuda.fft, cpu.fft, cuda.implicit_gemm, …) beside cuDNN's
    // algorithms, so an FFT of ours is compared with cuDNN's FFTs in one table and chart. Their times are the run's
    // medians, not the explorer's own timing; they cannot be pinned (pinning picks a cuDNN algorithm).
    for (const auto& sel : m_outcome->result.selections) {
        if (!sel.ok || sel.selection.backend == "cudnn" || size_t(m_layer) >= sel.layers.size())
            continue;
        const LayerResult& l = sel.layers[size_t(m_layer)];
        const auto math = sel.metadata.find("math");
        algos.append(QJsonObject { { QStringLiteral("algorithm"), QString::fromStdString(sel.selection.str()) },
            { QStringLiteral("status"), QStringLiteral("ok") }, { QStringLiteral("time_ms"), l.computeMs.median },
            { QStringLiteral("pinnable"), false },
            { QStringLiteral("math"), math == sel.metadata.end() ? QString() : QString::fromStdString(math->second) },
            { QStringLiteral("reason"),
                l.note.empty() ? tr("this run's median")
                               : tr("this run's median; %1").arg(QString::fromStdString(l.note)) },
            { QStringLiteral("auto_choice"), false } });
    }
    m_table->setRowCount(int(algos.size()));
    int row = 0;
    for (const auto& v : algos) {
        const QJsonObject a = v.toObject();
        auto set = [&](int col, const QString& text, Qt::Alignment al = Qt::AlignLeft) {
            auto* item = new QTableWidgetItem(text);
            item->setTextAlignment(al | Qt::AlignVCenter);
            m_table->setItem(row, col, item);
        };
        const QString status = a.value(QStringLiteral("status")).toString();
        const bool chosen = a.value(QStringLiteral("auto_choice")).toBool();
        set(Algorithm, a.value(QStringLiteral("algorithm")).toString());
        m_table->item(row, Algorithm)->setData(Qt::UserRole, a.value(QStringLiteral("pinnable")).toBool(true));
        set(Status, chosen ? status + tr(" (auto's choice)") : status);
        auto ms = [&](const char* key) {
            const QJsonValue x = a.value(QLatin1String(key));
            return x.isDouble() ? QString::number(x.toDouble(), 'f', 4) : QString();
        };
        set(Median, ms("time_ms"), Qt::AlignRight);
        set(Find, ms("find_ms"), Qt::AlignRight);
        const QJsonValue ws = a.value(QStringLiteral("workspace_bytes"));
        set(Workspace,
            ws.isDouble() ? locale().formattedDataSize(qint64(ws.toDouble()), 1, QLocale::DataSizeTraditionalFormat)
                          : QString(),
            Qt::AlignRight);
        set(Deterministic, a.value(QStringLiteral("deterministic")).toString());
        set(Math, a.value(QStringLiteral("math")).toString());
        set(Reason, a.value(QStringLiteral("reason")).toString());
        if (chosen)
            for (int c = 0; c < ColumnCount; ++c) {
                QFont f = m_table->item(row, c)->font();
                f.setBold(true);
                m_table->item(row, c)->setFont(f);
            }
        if (status != QStringLiteral("ok"))
            for (int c = 0; c < ColumnCount; ++c)
                m_table->item(row, c)->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
        ++row;
    }
    const QString title
        = tr("L%1 %2: %3 → %4, %5 math, cuDNN %6")
              .arg(m_layer)
              .arg(doc.value(QStringLiteral("name")).toString(), doc.value(QStringLiteral("input")).toString(),
                  doc.value(QStringLiteral("output")).toString(), doc.value(QStringLiteral("math")).toString(),
                  doc.value(QStringLiteral("cudnn")).toString());
    m_status->setText(title
        + tr("\ncudnn.auto picks %1 (the fastest by our timing of Find's candidates and the graph API's best engine); "
             "select a row and pin it to run it as cudnn.<algorithm> next time.")
              .arg(doc.value(QStringLiteral("auto_choice")).toString()));
    m_chart->setAlgorithms(title, algos);
}

} // namespace convscope::gui
