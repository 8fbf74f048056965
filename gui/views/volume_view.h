// A volume feature map (one batch item of an NCDHW output) on a flat screen, three ways:
//  - Slices: every channel cut at one index along D, H or W; a slider walks through the slices.
//  - Orthogonal: one channel cut by the three planes through one voxel, side by side, the voxel marked in each;
//    the slider moves the voxel along the chosen axis and a click on any cut moves it within that cut.
//  - Projection: every channel's maximum along the chosen axis (maximum-intensity projection), so a structure
//    anywhere in the volume shows without hunting for its slice.
// A click on a slice or a projection opens the orthogonal view of that channel at the voxel clicked (for a
// projection, at the voxel along the ray that holds the maximum), as a click on an image's tile enlarges it.
#pragma once

#include "gui/views/colormap.h"
#include "gui/views/feature_map_grid.h"
#include "gui/views/volume_slices.h"

#include <QWidget>

#include <array>

class QComboBox;
class QLabel;
class QSlider;
class QSpinBox;
class QStackedWidget;

namespace convscope::gui {

class VolumeView : public QWidget {
    Q_OBJECT
public:
    enum class Mode { Slices = 0, Orthogonal = 1, Projection = 2 };

    explicit VolumeView(QWidget* parent = nullptr);

    // Shows a new volume, keeping the mode, axis, channel and voxel where they still fit (a rerun after an edit
    // stays on the same slice).
    void setVolume(VolumeSet volume);
    void clear(const QString& message);
    const VolumeSet& volume() const { return m_volume; }

    void setMode(Mode mode);
    Mode mode() const { return m_mode; }
    void setAxis(VolumeAxis axis);
    VolumeAxis axis() const { return m_axis; }
    // The index along the chosen axis: the slice shown, or the orthogonal view's voxel coordinate on that axis.
    void setSlice(int index);
    int slice() const { return int(m_point[size_t(m_axis)]); }
    void setChannel(int channel); // the orthogonal view's channel
    int channel() const { return m_channel; }
    void setPoint(int64_t d, int64_t h, int64_t w);
    std::array<int64_t, 3> point() const { return m_point; }
    void setColorMap(ColorMapKind kind);
    void setSharedRange(bool shared);

    FeatureMapGrid* sliceGrid() const { return m_grid; } // slices and projections
    FeatureMapGrid* orthogonalGrid(VolumeAxis cutAlong) const { return m_cuts[size_t(cutAlong)]; }
    QComboBox* modeBox() const { return m_modeBox; }
    QComboBox* axisBox() const { return m_axisBox; }
    QSlider* slider() const { return m_slider; }
    QSpinBox* channelBox() const { return m_channelBox; }
    QString caption() const; // what is shown, e.g. "slice D = 5 of 0…11"

Q_SIGNALS:
    void hovered(const QString& text); // a read-out of the voxel under the mouse
    void viewChanged(); // the mode, axis or index changed (the input beside follows it)

private:
    void syncControls();
    void render();
    void onSliceClicked(int tile, int channel, int row, int col);
    void onCutClicked(VolumeAxis cutAlong, int row, int col);
    QString voxelText(int channel, std::array<int64_t, 3> v) const;

    VolumeSet m_volume;
    Mode m_mode = Mode::Slices;
    VolumeAxis m_axis = VolumeAxis::D;
    std::array<int64_t, 3> m_point { 0, 0, 0 }; // d, h, w
    int m_channel = 0;
    bool m_shared = true;
    bool m_havePoint = false; // false until the first volume: it starts at the centre

    QComboBox* m_modeBox;
    QComboBox* m_axisBox;
    QSlider* m_slider;
    QLabel* m_sliceLabel;
    QSpinBox* m_channelBox;
    QLabel* m_caption;
    QStackedWidget* m_stack;
    FeatureMapGrid* m_grid;
    std::array<FeatureMapGrid*, 3> m_cuts {};
    std::array<QLabel*, 3> m_cutTitles {};
};

} // namespace convscope::gui
