#include "gui/models/layer_list_model.h"

#include <QApplication>
#include <QIcon>
#include <QMimeData>
#include <QStyle>

#include <algorithm>

namespace convscope::gui {

namespace {
    QString inputsText(const Layer& layer)
    {
        QStringList names;
        for (const std::string& n : layer.inputs)
            names.append(QString::fromStdString(n));
        return names.join(QStringLiteral(", "));
    }
} // namespace

LayerListModel::LayerListModel(NetworkDocument* doc, QObject* parent)
    : QAbstractListModel(parent)
    , m_doc(doc)
{
    m_rows = int(doc->network().layers.size());
    connect(doc, &NetworkDocument::networkChanged, this, [this] { sync(); });
}

// Same number of rows: the rows are updated in place so the selection and the editor survive an edit.
// Otherwise the list is reset and the views reselect the row the document asks for.
void LayerListModel::sync()
{
    const int rows = int(m_doc->network().layers.size());
    if (rows == m_rows) {
        if (rows > 0)
            Q_EMIT dataChanged(index(0), index(rows - 1));
        return;
    }
    beginResetModel();
    m_rows = rows;
    endResetModel();
}

int LayerListModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : m_rows; }

QVariant LayerListModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const size_t i = size_t(index.row());
    const auto& layers = m_doc->network().layers;
    if (i >= layers.size())
        return {};
    const Layer& layer = layers[i];
    const ShapeReport& shapes = m_doc->shapes();
    const LayerShape* ls = i < shapes.layers.size() ? &shapes.layers[i] : nullptr;
    switch (role) {
    case Qt::DisplayRole: {
        QString text = QStringLiteral("%1  %2 · %3")
                           .arg(i)
                           .arg(QString::fromStdString(layer.name), QString::fromStdString(layerSummary(layer.spec)));
        // A skip: the layers it reads when they are not simply the one above ("← conv1"; a concat lists all).
        if (!layer.inputs.empty() && !shapes.readsLayerAbove(i))
            text += QStringLiteral("  ← ") + inputsText(layer);
        if (ls && ls->ok)
            text += QStringLiteral("  → ") + QString::fromStdString(ls->out.str());
        return text;
    }
    case Qt::ToolTipRole:
        if (ls && !ls->ok)
            return QString::fromStdString(ls->error);
        return ls ? QString::fromStdString(ls->formula) : QVariant();
    case Qt::DecorationRole:
        if (ls && !ls->ok)
            return QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning);
        return {};
    case Qt::ForegroundRole:
        if (ls && !ls->ok)
            return QColor(190, 30, 30);
        return {};
    case ErrorRole:
        return ls && !ls->ok ? QString::fromStdString(ls->error) : QString();
    case TypeRole:
        return QString::fromStdString(layerTypeName(layer.spec));
    case NameRole:
        return QString::fromStdString(layer.name);
    case InputsRole:
        return layer.inputs.empty() || shapes.readsLayerAbove(i) ? QString() : inputsText(layer);
    default:
        return {};
    }
}

Qt::ItemFlags LayerListModel::flags(const QModelIndex& index) const
{
    const Qt::ItemFlags base = QAbstractListModel::flags(index);
    if (!index.isValid())
        return base | Qt::ItemIsDropEnabled;
    return base | Qt::ItemIsDragEnabled;
}

Qt::DropActions LayerListModel::supportedDropActions() const { return Qt::MoveAction; }

QStringList LayerListModel::mimeTypes() const { return { QString::fromLatin1(kMimeType) }; }

QMimeData* LayerListModel::mimeData(const QModelIndexList& indexes) const
{
    if (indexes.isEmpty() || !indexes.first().isValid())
        return nullptr;
    auto* mime = new QMimeData;
    mime->setData(QString::fromLatin1(kMimeType), QByteArray::number(indexes.first().row()));
    return mime;
}

bool LayerListModel::canDropMimeData(
    const QMimeData* data, Qt::DropAction action, int, int column, const QModelIndex& parent) const
{
    Q_UNUSED(parent);
    return data && data->hasFormat(QString::fromLatin1(kMimeType)) && action == Qt::MoveAction && column <= 0;
}

// The move is made here, through the document (undoable), and false is returned on purpose: a view that
// saw a successful MoveAction drop would also remove the source row itself.
bool LayerListModel::dropMimeData(
    const QMimeData* data, Qt::DropAction action, int row, int column, const QModelIndex& parent)
{
    if (!canDropMimeData(data, action, row, column, parent))
        return false;
    bool ok = false;
    const int from = data->data(QString::fromLatin1(kMimeType)).toInt(&ok);
    if (!ok || from < 0 || from >= m_rows)
        return false;
    if (parent.isValid())
        row = parent.row(); // dropped onto a row: take its place
    else if (row < 0)
        row = m_rows; // dropped below the last row
    const int to = row > from ? row - 1 : row;
    m_doc->moveLayer(from, std::clamp(to, 0, m_rows - 1));
    return false;
}

} // namespace convscope::gui
