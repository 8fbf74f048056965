#include "gui/models/shapes_model.h"

#include "compute/report.h"
#include "gui/document/network_axes.h"
#include "gui/views/format.h"

#include <QColor>
#include <QFont>

#include <algorithm>

namespace convscope::gui {

ShapesModel::ShapesModel(NetworkDocument* doc, QObject* parent)
    : QAbstractTableModel(parent)
{
    connect(doc, &NetworkDocument::networkChanged, this, [this, doc] { setNetwork(doc->network(), doc->shapes()); });
    setNetwork(doc->network(), doc->shapes());
}

void ShapesModel::setNetwork(const Network& net, const ShapeReport& shapes)
{
    std::vector<Row> rows;
    rows.reserve(net.layers.size());
    const std::vector<AxisNames> axes = layerAxes(net, shapes);
    for (size_t i = 0; i < net.layers.size(); ++i) {
        Row r;
        r.name = QString::fromStdString(net.layers[i].name);
        r.type = QString::fromStdString(layerTypeName(net.layers[i].spec));
        if (i < shapes.layers.size())
            r.shape = shapes.layers[i];
        if (i < axes.size())
            r.axes = axes[i];
        rows.push_back(std::move(r));
    }
    const bool sameCount = rows.size() == m_layers.size();
    if (!sameCount)
        beginResetModel();
    m_layers = std::move(rows);
    m_report = shapes;
    if (!sameCount)
        endResetModel();
    else
        Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

void ShapesModel::setRun(RunOutcomePtr run, int selection)
{
    m_run = std::move(run);
    m_selection = selection;
    Q_EMIT headerDataChanged(Qt::Horizontal, Time, Time);
    if (rowCount() > 0)
        Q_EMIT dataChanged(index(0, Time), index(rowCount() - 1, Time));
}

const ErrorMetrics* ShapesModel::shownError(int row) const
{
    if (!m_run || m_run->network.layers.size() != m_layers.size() || m_selection < 0
        || m_selection >= int(m_run->result.selections.size()))
        return nullptr;
    const auto& sel = m_run->result.selections[size_t(m_selection)];
    return sel.ok && row >= 0 && size_t(row) < sel.layers.size() ? &sel.layers[size_t(row)].error : nullptr;
}

int ShapesModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_layers.size()) + 1; }

int ShapesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ShapesModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Index:
        return tr("#");
    case Name:
        return tr("Layer");
    case Type:
        return tr("Type");
    case OutputShape:
        return tr("Output shape");
    case Params:
        return tr("Params");
    case Flops:
        return tr("FLOPs");
    case Memory:
        return tr("Memory");
    case Live:
        return tr("Live");
    case Time:
        if (m_run && m_selection < int(m_run->result.selections.size()))
            return tr("Median · %1")
                .arg(QString::fromStdString(m_run->result.selections[size_t(m_selection)].selection.str()));
        return tr("Time (median)");
    }
    return {};
}

QVariant ShapesModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const int row = index.row(), col = index.column();
    if (isTotalsRow(row)) {
        const LayerCost& t = m_report.total;
        if (role == Qt::FontRole) {
            QFont f;
            f.setBold(true);
            return f;
        }
        if (role == Qt::TextAlignmentRole && col >= Params)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        if (role == Qt::DisplayRole) {
            switch (col) {
            case Name:
                return tr("Total");
            case Type:
                return tr("%1 layers").arg(m_layers.size());
            case OutputShape: {
                const auto bad
                    = std::count_if(m_layers.begin(), m_layers.end(), [](const Row& r) { return !r.shape.ok; });
                if (!m_report.inputError.empty())
                    return QStringLiteral("⚠ ") + QString::fromStdString(m_report.inputError);
                return bad ? tr("⚠ %1 invalid").arg(bad) : QString();
            }
            case Params:
                return formatCount(double(t.params));
            case Flops:
                return formatCount(t.flops);
            case Memory:
                return formatBytes(t.bytesRead + t.bytesWritten);
            case Live:
                return tr("peak %1").arg(formatBytes(double(m_report.peakBytes)));
            case Time:
                if (m_run && m_selection < int(m_run->result.selections.size())) {
                    const auto& sel = m_run->result.selections[size_t(m_selection)];
                    if (sel.ok)
                        return formatMs(sel.totalMs.median);
                }
                return {};
            }
        }
        return {};
    }
    const Row& r = m_layers[size_t(row)];
    const LayerShape& s = r.shape;
    switch (role) {
    case Qt::DisplayRole:
        switch (col) {
        case Index:
            return row;
        case Name:
            return r.name;
        case Type:
            return r.type;
        case OutputShape:
            if (!s.ok)
                return QStringLiteral("⚠ ") + QString::fromStdString(s.error);
            // Each size with its axis's name where the network says it ("1×56×56×96 (N, H, W, C)"): a volume's
            // D, H, W and a permuted image's axes are easy to misread in a list of numbers.
            return QString::fromStdString(shapeWithAxes(s.out, r.axes));
        case Params:
            return s.ok ? formatCount(double(s.cost.params)) : QString();
        case Flops:
            return s.ok ? formatCount(s.cost.flops) : QString();
        case Memory:
            return s.ok ? formatBytes(double(s.out.bytes())) : QString();
        case Live:
            return s.ok ? formatBytes(double(s.liveBytes)) : QString();
        case Time:
            if (m_run && m_run->network.layers.size() == m_layers.size()
                && m_selection < int(m_run->result.selections.size())) {
                const auto& sel = m_run->result.selections[size_t(m_selection)];
                if (sel.ok && size_t(row) < sel.layers.size())
                    return formatMs(sel.layers[size_t(row)].computeMs.median);
            }
            return {};
        }
        return {};
    case Qt::ToolTipRole:
        if (!s.ok)
            return QString::fromStdString(s.error);
        if (col == Time)
            if (const ErrorMetrics* e = shownError(row); e && e->valid)
                return tr("relL2 %1 against %2%3")
                    .arg(QString::fromStdString(relL2Text(*e)), QString::fromStdString(m_run->result.meta.reference),
                        exceedsBound(*e) ? tr(" ⚠ above the bound: more than the math mode's rounding explains")
                                         : QString());
        if (col == Memory)
            return tr("output %1 · reads %2 · writes %3")
                .arg(formatBytes(double(s.out.bytes())), formatBytes(s.cost.bytesRead),
                    formatBytes(s.cost.bytesWritten));
        if (col == Live)
            return tr("tensors alive while this layer runs: its output, its inputs and every earlier output a later "
                      "layer still reads");
        if (col == Flops)
            return tr("%1 FLOPs (multiply and add counted as 2) · intensity %2 FLOP/byte")
                .arg(QString::number(s.cost.flops, 'f', 0), QString::number(s.cost.intensity(), 'f', 2));
        return QString::fromStdString(s.formula);
    case Qt::ForegroundRole:
        // A time whose output is off the reference by more than the rounding bound: the failure colour.
        if (col == Time)
            if (const ErrorMetrics* e = shownError(row); e && exceedsBound(*e))
                return QColor(183, 28, 28);
        return s.ok ? QVariant() : QVariant(QColor(183, 28, 28));
    case Qt::BackgroundRole:
        return s.ok ? QVariant() : QVariant(QColor(255, 235, 238));
    case Qt::TextAlignmentRole:
        if (col >= Params || col == Index)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    }
    return {};
}

} // namespace convscope::gui
