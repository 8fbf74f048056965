// The index a layer output is shown at along the axes its view does not draw (output_view.h's picked axes: the
// rank-6 slices' axes 2 and 3, a rank-3 heat map's axis 0 when no axis is the batch), one labelled spin box each,
// and which tiles a grid of more tiles than it draws starts at. An axis keeps its index while a new output has the
// same axis (same name and size), so walking through the layers stays on the same slice.
#pragma once

#include <QString>
#include <QWidget>

#include <cstdint>
#include <vector>

class QHBoxLayout;
class QLabel;
class QSpinBox;

namespace convscope::gui {

class AxisPicker : public QWidget {
    Q_OBJECT
public:
    struct Axis {
        int axis = 0;
        QString name; // "d2"
        int64_t size = 1;
    };
    explicit AxisPicker(QWidget* parent = nullptr);

    // The axes to pick; `tiles` tiles of which a grid draws `perPage` (no tile control when they all fit).
    void setAxes(const std::vector<Axis>& axes, int64_t tiles = 0, int64_t perPage = 0);
    bool isEmpty() const { return m_axes.empty() && !m_tilesShown; }
    int64_t index(int axis) const; // 0 for an axis not picked
    void setIndex(int axis, int64_t value);
    int64_t firstTile() const;
    QSpinBox* box(int axis) const;
    QSpinBox* tileBox() const { return m_tiles; }
    QString text() const; // "d2 = 1 of 0…3 · d3 = 0 of 0…2"

Q_SIGNALS:
    void changed();

private:
    struct Entry {
        Axis axis;
        QLabel* label;
        QSpinBox* box;
    };
    std::vector<Entry> m_axes;
    QHBoxLayout* m_layout;
    QSpinBox* m_tiles;
    QLabel* m_tilesLabel;
    bool m_tilesShown = false;
};

} // namespace convscope::gui
