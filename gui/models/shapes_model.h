// The shapes table: per layer its type, output shape (with its axis names where known), parameters, FLOPs and
// memory, the measured time of the shown selection when a run has finished, and invalid layers flagged with the
// engine's reason. The last row holds the totals. It follows the document: every edit re-infers the shapes there.
#pragma once

#include "compute/network.h"
#include "compute/shape_inference.h"
#include "gui/document/axis_names.h"
#include "gui/document/engine.h"
#include "gui/document/network_document.h"

#include <QAbstractTableModel>

namespace convscope::gui {

class ShapesModel : public QAbstractTableModel {
    Q_OBJECT
public:
    // Live: the bytes of every tensor alive while the layer runs (a skip keeps its tensor alive); the totals row
    // shows the peak.
    enum Column { Index, Name, Type, OutputShape, Params, Flops, Memory, Live, Time, ColumnCount };
    explicit ShapesModel(NetworkDocument* doc, QObject* parent = nullptr);

    void setNetwork(const Network& net, const ShapeReport& shapes);
    // Times from a finished run (matched by layer index, only while the layer count agrees).
    void setRun(RunOutcomePtr run, int selection);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    bool isTotalsRow(int row) const { return row == int(m_layers.size()); }

private:
    // The shown selection's error on layer `row` against the run's reference, when the run matches the table.
    const ErrorMetrics* shownError(int row) const;
    struct Row {
        QString name, type;
        LayerShape shape;
        AxisNames axes; // what each output axis means (gui/document/network_axes.h)
    };
    std::vector<Row> m_layers;
    ShapeReport m_report;
    RunOutcomePtr m_run;
    int m_selection = 0;
};

} // namespace convscope::gui
