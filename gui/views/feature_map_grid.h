// A grid of heatmaps, one tile per channel of one batch item, drawn pixel-exact (nearest neighbour) so a
// teacher can count pixels. Hover reports channel, row, column and value; a click reports the tile and
// pixel. The same widget shows the network input, with the receptive field of a chosen output pixel
// highlighted on it.
#pragma once

#include "compute/tensor.h"
#include "gui/views/colormap.h"

#include <QImage>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <utility>
#include <vector>

namespace convscope::gui {

// One batch item's channels, copied out of a tensor (small: the planes of one item).
struct PlaneSet {
    int64_t channels = 0, height = 0, width = 0;
    bool flat = false; // [n, features]: one strip of `channels` values
    std::vector<float> values; // channels * height * width
    std::vector<int> channelIds; // the channel number each plane shows (defaults to 0..channels-1)
    // Optional, one per plane: the value range to colour it by instead of its own or the set's (a volume's slices
    // keep their volume's range so colours hold still while a slider moves).
    std::vector<std::pair<float, float>> ranges;
    const float* plane(int64_t c) const { return values.data() + c * height * width; }
    bool empty() const { return values.empty(); }
};

class FeatureMapGrid : public QWidget {
    Q_OBJECT
public:
    explicit FeatureMapGrid(QWidget* parent = nullptr);

    void setPlanes(PlaneSet planes);
    void clear(const QString& message);
    const PlaneSet& planes() const { return m_planes; }
    void setColorMap(ColorMapKind kind);
    void setSharedRange(bool shared);
    // Pixels to highlight in every tile (receptive field); empty vectors: none.
    void setHighlight(std::vector<bool> rows, std::vector<bool> cols);
    void setMarkedPixel(int row, int col); // -1: none
    void setMaxTile(int pixels) { m_maxTile = pixels; }
    // Every tile in one row (a sequence: an interpolation strip) instead of the grid with the largest tiles.
    void setSingleRow(bool on);
    // Three channels are also drawn as one colour picture, a last tile labelled "RGB" (the network input: a photograph
    // should look like one). Hover and click on it report channel 0.
    void setColourComposite(bool on);
    // What each tile says above it instead of its channel number ("t = 0.3" along an interpolation); cleared by
    // clear().
    void setTileLabels(QStringList labels);
    QStringList tileLabels() const { return m_tileLabels; }
    bool hasComposite() const { return m_composite && m_planes.channels == 3 && !m_planes.flat; }

    // How many tiles of a mapHeight × mapWidth map fit the grid's area with each at least kMinTile pixels on its
    // shorter side (and its label row): beyond that a layer's tiles shrink to a few pixels each (ResNet-50's 2048
    // channels of 7×7 drew as dots under their numbers), so the feature-map panel pages through them instead. 0
    // before the grid has been laid out.
    int64_t tilesThatFit(int64_t mapHeight, int64_t mapWidth) const;
    static constexpr int kMinTile = 16;

    int tileCount() const { return int(m_images.size()); }
    QRect tileRect(int index) const; // widget coordinates of a tile's image
    QString message() const { return m_message; }
    float rangeLow(int tile) const;
    float rangeHigh(int tile) const;

    QSize sizeHint() const override { return { 400, 300 }; }
    QSize minimumSizeHint() const override { return { 80, 60 }; }

Q_SIGNALS:
    void hovered(int channel, int row, int col, float value);
    void left();
    void clicked(int tile, int channel, int row, int col);
    void rendered(); // images rebuilt (for latency measurement)
    void resized(); // the area changed: tilesThatFit may have

protected:
    void paintEvent(QPaintEvent*) override;
    void resizeEvent(QResizeEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;
    void mousePressEvent(QMouseEvent*) override;
    void leaveEvent(QEvent*) override;

private:
    void rebuild();
    void relayout();
    bool hit(QPoint pos, int* tile, int* row, int* col) const;

    PlaneSet m_planes;
    ColorMap m_map;
    bool m_shared = true;
    QString m_message;
    std::vector<QImage> m_images;
    std::vector<std::pair<float, float>> m_ranges;
    std::vector<QRect> m_rects;
    std::vector<bool> m_hlRows, m_hlCols;
    int m_markRow = -1, m_markCol = -1;
    int m_maxTile = 4096;
    int m_cols = 1; // tiles per row, from relayout
    bool m_composite = false;
    QStringList m_tileLabels;
    bool m_singleRow = false;
};

// Copies batch item `n` of `t` into a PlaneSet: an image's channels, or a feature vector as one strip. A volume is
// cut by volume_slices.h instead; here it gives its middle depth slice.
PlaneSet planesOf(const Tensor& t, int64_t n);

} // namespace convscope::gui
