// The filters of the selected layer, beside its feature maps: the kernel grid (gui/views/filter_grid.h), what it
// shows (layer, outputs × inputs, kernel size, how many are left out), the shared colour scale as a bar with
// its numbers, a switch between colour and per-channel kernels for a first layer on a colour picture, and a
// read-out of the weight under the pointer.
#pragma once

#include "compute/network.h"
#include "gui/views/filter_grid.h"

#include <QWidget>

class QCheckBox;
class QLabel;
class QScrollArea;

namespace convscope::gui {

// The diverging scale as a bar: blue −m, white 0, red +m, or the colour key of colour kernels.
class ScaleBar : public QWidget {
    Q_OBJECT
public:
    explicit ScaleBar(QWidget* parent = nullptr);
    void setRange(float absMax, bool colour);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent*) override;

private:
    float m_absMax = 0;
    bool m_colour = false;
    ColorMap m_map { ColorMapKind::Diverging };
};

class FiltersView : public QWidget {
    Q_OBJECT
public:
    explicit FiltersView(QWidget* parent = nullptr);

    // Shows layer `index` of `net` (materialised parameters); false when it has no filters to show. With
    // `gradient` it shows that instead of the weights: ∂L/∂weight of a training step (the Gradients page).
    bool setLayer(const Network& net, int index, const Tensor* gradient = nullptr);
    void clear();
    bool hasFilters() const { return !m_grid->filters().empty(); }

    FilterGrid* grid() const { return m_grid; }
    QCheckBox* colourBox() const { return m_colour; }
    QString titleText() const;
    QString noteText() const;
    QString statusText() const;

private:
    void describe(); // title, note, tooltip and scale for the filters shown

    FilterGrid* m_grid;
    QScrollArea* m_scroll;
    QLabel* m_title;
    QLabel* m_note;
    QCheckBox* m_colour;
    ScaleBar* m_scale;
    QLabel* m_status;
};

} // namespace convscope::gui
