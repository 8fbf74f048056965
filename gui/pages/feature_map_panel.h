// Feature maps of the selected layer: every channel of one batch item as a heatmap grid, the network
// input beside it, a choice of whose output to show (any selection that ran), a difference view
// |selection − reference| with its max error, colour map and range choices, hover read-out, click to
// enlarge, the receptive field of a clicked output pixel highlighted on the input, and a conv layer's filters. Every
// rank shows (gui/document/output_view.h chooses how, by the output's axis names, network_axes.h): an image's maps
// in the grid, also when its axes are permuted (N×H×W×C: a tile per C, named in the axes line); a volume (rank 5) in
// a VolumeView (slices, orthogonal cuts, maximum projection; a volume input beside it follows the view's axis and
// slice); rank 6 as the grid of one slice; rank 2 and 3 as a heat map and rank 1 as bars (TensorPlotView). Axes
// the view does not draw are shown at an index picked in an AxisPicker.
#pragma once

#include "gui/document/axis_names.h"
#include "gui/document/engine.h"
#include "gui/document/output_view.h"
#include "gui/views/feature_map_grid.h"
#include "gui/views/filters_view.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QStackedWidget;

namespace convscope::gui {

class AxisPicker;
class TensorPlotView;
class VolumeView;

class FeatureMapPanel : public QWidget {
    Q_OBJECT
public:
    explicit FeatureMapPanel(QWidget* parent = nullptr);

    void setOutcome(RunOutcomePtr outcome);
    RunOutcomePtr outcome() const { return m_outcome; }
    // The top-5 line shown for a classifier's output; empty when none is shown.
    QString predictionText() const;
    void setLayer(int index);
    // The document's current verdict for the selected layer: empty when valid.
    void setLayerProblem(const QString& problem);
    // The shown results were computed before the last edit (the live preview is off or the network too big).
    void setStale(bool stale);

    FeatureMapGrid* grid() const { return m_grid; }
    // Whatever shows the selected layer's output now (the grid, the enlarged tile, the volume view or the heat map or
    // bars): what File ▸ Export feature maps grabs.
    QWidget* shownMaps() const;
    FeatureMapGrid* enlarged() const { return m_big; }
    FeatureMapGrid* inputGrid() const { return m_input; }
    VolumeView* volumeView() const { return m_volume; }
    bool isVolumeShown() const;
    // A rank 1–3 output's heat map or bars.
    TensorPlotView* tensorPlot() const { return m_plot; }
    bool isPlotShown() const;
    AxisPicker* axisPicker() const { return m_picker; }
    // How the shown output is drawn, and its axis names.
    const OutputView& outputView() const { return m_view; }
    const AxisNames& outputAxes() const { return m_names; }
    // What the drawn axes are ("tiles C (axis 3) · rows H (axis 1) · …"); empty for plain N, C, H, W maps.
    QString axesText() const;
    QString titleText() const;
    // The selected conv layer's weights, beside its maps (hidden for layers without filters).
    FiltersView* filters() const { return m_filters; }
    QComboBox* selectionBox() const { return m_selection; }
    QCheckBox* differenceBox() const { return m_difference; }
    QComboBox* colorMapBox() const { return m_colorMap; }
    QComboBox* rangeBox() const { return m_range; }
    // Which batch item the maps show; false (nothing changes) when the shown outcome has no such item.
    bool setBatchItem(int item);
    // Shows |selection − reference| for the selection in front; false when there is nothing to compare with.
    bool showDifference();
    int batchItems() const;
    QString statusText() const;
    QString errorText() const;
    // The |Δ| view shows a layer whose relL2 exceeds its math mode's rounding bound (in the warning colour).
    bool errorAboveBound() const { return m_aboveBound; }
    bool isEnlarged() const;
    void enlarge(int tile);
    void showGrid();
    // Selects an output pixel of the shown layer and highlights its receptive field on the input.
    void pickPixel(int row, int col);

Q_SIGNALS:
    void mapsUpdated(); // the grid shows the current outcome's maps for the selected layer

private:
    void rebuildSelections();
    void refresh();
    void showPrediction(const Tensor& out, int64_t item);
    void refreshInput();
    const Tensor* outputOf(int selection) const;
    int referenceSelection() const;
    // The |Δ| line for the shown selection against `ref`; returns the title of the difference view.
    QString showDifferenceLine(double maxAbs, int ref, int shown);
    // The index of every axis of the shown output: the batch item's and the picked ones.
    std::vector<int64_t> shownIndex(const std::vector<int64_t>& dims);

    RunOutcomePtr m_outcome;
    std::vector<AxisNames> m_axes; // every layer's, for m_outcome
    OutputView m_view;
    AxisNames m_names;
    int m_layer = -1;
    QString m_problem;
    bool m_stale = false;
    int m_enlargedTile = -1;
    // The grid's page: tiles drawn at once (FeatureMapGrid::tilesThatFit, at most kMaxTiles) for maps of mapHeight ×
    // mapWidth; a resize that changes it redraws.
    int64_t m_tilesPerPage = 0, m_mapHeight = 0, m_mapWidth = 0, m_tileTotal = 0;
    int64_t tilesPerPage(int64_t mapHeight, int64_t mapWidth) const;
    int m_pickRow = -1, m_pickCol = -1;

    QComboBox* m_selection;
    QCheckBox* m_difference;
    QLabel* m_error;
    bool m_aboveBound = false;
    QComboBox* m_colorMap;
    QComboBox* m_range;
    QSpinBox* m_batch;
    QLabel* m_title;
    QLabel* m_prediction = nullptr;
    QLabel* m_status;
    QLabel* m_inputTitle;
    FeatureMapGrid* m_input;
    FeatureMapGrid* m_grid;
    FeatureMapGrid* m_big;
    VolumeView* m_volume;
    TensorPlotView* m_plot;
    AxisPicker* m_picker;
    QLabel* m_axesLine;
    FiltersView* m_filters;
    QLabel* m_bigTitle;
    QPushButton* m_back;
    QStackedWidget* m_stack;
};

} // namespace convscope::gui
