// The layer list: one row per layer of the document's network, showing its index, name, summary and
// output shape (or a warning with the engine's reason). Rows are dragged to reorder; the move goes
// through the document so it is undoable.
#pragma once

#include "gui/document/network_document.h"

#include <QAbstractListModel>

namespace convscope::gui {

class LayerListModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Roles { ErrorRole = Qt::UserRole + 1, TypeRole, NameRole, InputsRole }; // InputsRole: "conv1, up2" or empty
    static constexpr const char* kMimeType = "application/x-convscope-layer-row";

    explicit LayerListModel(NetworkDocument* doc, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    Qt::DropActions supportedDropActions() const override;
    QStringList mimeTypes() const override;
    QMimeData* mimeData(const QModelIndexList& indexes) const override;
    bool canDropMimeData(
        const QMimeData* data, Qt::DropAction action, int row, int column, const QModelIndex& parent) const override;
    bool dropMimeData(
        const QMimeData* data, Qt::DropAction action, int row, int column, const QModelIndex& parent) override;

private:
    void sync();
    NetworkDocument* m_doc;
    int m_rows = 0;
};

} // namespace convscope::gui
