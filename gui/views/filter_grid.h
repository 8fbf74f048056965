// A convolution layer's weights drawn as small images: one tile per (output channel, input channel) kernel,
// all on one diverging scale centred on zero (blue negative, white zero, red positive), so a teacher can
// compare kernels with each other and see which ones a layer barely uses. A first layer that reads a
// 3-channel picture shows each output's three kernels as one colour image instead (grey = 0), the way
// AlexNet's first-layer filters are usually shown: edge and colour detectors become visible at a glance.
#pragma once

#include "compute/network.h"
#include "gui/views/colormap.h"

#include <QImage>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <vector>

namespace convscope::gui {

// The kernels of one conv layer, copied out of its weight tensor (at most maxOut × maxIn of them).
struct FilterSet {
    QString layerName;
    bool transposed = false; // conv_transpose2d: the weight is [C_in, C_out/g, kh, kw]
    int64_t groups = 1;
    int64_t outChannels = 0, inChannels = 0; // the kernels per output: C_in / groups
    int64_t shownOut = 0, shownIn = 0;
    int64_t kh = 0, kw = 0;
    float absMax = 0; // over every kernel of the layer, shown or not: the shared scale is ±absMax
    bool colourable = false; // three kernels per output reading the network's input (a colour picture)
    bool gradient = false; // the values are ∂L/∂weight (the Gradients page), not the weights
    std::vector<float> values; // shownOut × shownIn × kh × kw, rows = outputs
    const float* kernel(int64_t out, int64_t in) const { return values.data() + (out * shownIn + in) * kh * kw; }
    bool empty() const { return values.empty(); }
};

// The filters of layer `index` of a network whose parameters are materialised; empty when the layer is not
// a 2-D convolution or has no weights yet. `gradient`, when given, is drawn instead of the weights: the loss's
// gradient with respect to them (same shape; empty set when it differs).
FilterSet filtersOf(
    const Network& net, int index, int64_t maxOut = 64, int64_t maxIn = 32, const Tensor* gradient = nullptr);

class FilterGrid : public QWidget {
    Q_OBJECT
public:
    explicit FilterGrid(QWidget* parent = nullptr);

    void setFilters(FilterSet filters);
    const FilterSet& filters() const { return m_filters; }
    // Three-channel kernels as one colour image per output (only when the set is colourable).
    void setColour(bool on);
    bool colourShown() const { return m_colour && m_filters.colourable; }

    int tileCount() const { return int(m_rects.size()); }
    QRect tileRect(int index) const { return m_rects.at(size_t(index)); }
    QImage tileImage(int index) const { return m_images.at(size_t(index)); }
    // Which kernel a tile shows: (output, input); input -1 for a colour tile.
    std::pair<int, int> tileKernel(int index) const { return m_kernels.at(size_t(index)); }
    int pixelScale() const { return m_scale; }
    // The width at which every kernel of a row is large enough to read (6 screen pixels a weight, up to 3 tiles a
    // row when wrapped).
    int readableWidth() const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;

Q_SIGNALS:
    // The weight under the pointer: input -1 on a colour tile (value is then the red weight).
    void hovered(int out, int in, int row, int col, float value, const QString& text);
    void left();

protected:
    void paintEvent(QPaintEvent*) override;
    void resizeEvent(QResizeEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;
    void leaveEvent(QEvent*) override;

private:
    bool wrapped() const; // one tile per output, wrapped in rows (one input channel, or colour)
    void rebuild();
    void relayout();
    QSize layoutSize(int scale, int width) const;

    FilterSet m_filters;
    bool m_colour = true;
    ColorMap m_map { ColorMapKind::Diverging };
    std::vector<QImage> m_images;
    std::vector<std::pair<int, int>> m_kernels;
    std::vector<QRect> m_rects;
    int m_scale = 1;
    int m_rowLabel = 0, m_colLabel = 0;
};

} // namespace convscope::gui
