#include "gui/views/filter_grid.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::gui {

namespace {
    constexpr int kMinScale = 2; // screen pixels per weight at the least
    constexpr int kMaxScale = 24;
    constexpr int kWrapGap = 8; // between the tiles of one row of outputs
    constexpr int kMatrixGap = 2; // between the kernels of the output × input matrix

    // Label every `step`-th row or column so that labels `extent` pixels long never touch on a `pitch`.
    int labelStep(int extent, int pitch) { return std::max(1, (extent + pitch - 1) / std::max(1, pitch)); }
} // namespace

FilterSet filtersOf(const Network& net, int index, int64_t maxOut, int64_t maxIn, const Tensor* gradient)
{
    FilterSet f;
    if (index < 0 || size_t(index) >= net.layers.size())
        return f;
    const Layer& layer = net.layers[size_t(index)];
    const auto* conv = std::get_if<Conv2d>(&layer.spec);
    const auto* deconv = std::get_if<ConvTranspose2d>(&layer.spec);
    if ((!conv && !deconv) || !layer.weight || layer.weight->empty() || layer.weight->shape().isVolume())
        return f;
    if (gradient && gradient->shape() != layer.weight->shape())
        return f;
    const Tensor& w = gradient ? *gradient : *layer.weight;
    f.gradient = gradient != nullptr;
    const Shape& s = w.shape();
    f.layerName = QString::fromStdString(layer.name);
    f.transposed = deconv != nullptr;
    f.groups = std::max<int64_t>(1, conv ? conv->groups : deconv->groups);
    f.kh = s.h;
    f.kw = s.w;
    // conv2d [C_out, C_in/g, kh, kw]; conv_transpose2d [C_in, C_out/g, kh, kw]: output o of group g reads inputs
    // g·(C_in/g) + i through weight[g·(C_in/g) + i][o mod (C_out/g)].
    f.outChannels = conv ? s.n : s.c * f.groups;
    f.inChannels = conv ? s.c : s.n / f.groups;
    f.shownOut = std::min(f.outChannels, maxOut);
    f.shownIn = std::min(f.inChannels, maxIn);
    const int64_t area = f.kh * f.kw;
    auto kernelAt = [&](int64_t o, int64_t i) -> const float* {
        if (conv)
            return w.data() + (o * s.c + i) * area;
        const int64_t outPerGroup = s.c, g = o / outPerGroup;
        return w.data() + ((g * f.inChannels + i) * s.c + o % outPerGroup) * area;
    };
    for (int64_t k = 0; k < w.numel(); ++k)
        if (std::isfinite(w.data()[k]))
            f.absMax = std::max(f.absMax, std::fabs(w.data()[k]));
    f.values.reserve(size_t(f.shownOut * f.shownIn * area));
    for (int64_t o = 0; o < f.shownOut; ++o)
        for (int64_t i = 0; i < f.shownIn; ++i) {
            const float* k = kernelAt(o, i);
            f.values.insert(f.values.end(), k, k + area);
        }
    // Colour only where the three kernels are the picture's red, green and blue: a layer reading the network
    // input directly, ungrouped, on a three-channel image.
    const std::vector<int> inputs = resolveLayerInputs(net, size_t(index));
    f.colourable = conv && f.groups == 1 && f.inChannels == 3 && inputs.size() == 1 && inputs[0] == -1
        && !net.input.flat && net.input.depth == 0 && net.input.channels == 3;
    return f;
}

FilterGrid::FilterGrid(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
    // A wrapped grid is as tall as its width makes it: the scroll area asks heightForWidth.
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
}

int FilterGrid::heightForWidth(int width) const
{
    if (m_filters.empty())
        return minimumSizeHint().height();
    return wrapped() ? layoutSize(kMinScale, width).height() : layoutSize(kMinScale, 0).height();
}

void FilterGrid::setFilters(FilterSet filters)
{
    m_filters = std::move(filters);
    rebuild();
}

void FilterGrid::setColour(bool on)
{
    if (on == m_colour)
        return;
    m_colour = on;
    rebuild();
}

bool FilterGrid::wrapped() const { return colourShown() || m_filters.shownIn == 1; }

void FilterGrid::rebuild()
{
    m_images.clear();
    m_kernels.clear();
    const FilterSet& f = m_filters;
    const float m = f.absMax > 0 ? f.absMax : 1.0f;
    for (int64_t o = 0; o < f.shownOut; ++o) {
        if (colourShown()) {
            // Grey is zero; each channel moves towards its colour (or away from it) in proportion to the weight.
            QImage image(int(f.kw), int(f.kh), QImage::Format_RGB32);
            const float *r = f.kernel(o, 0), *g = f.kernel(o, 1), *b = f.kernel(o, 2);
            auto level = [m](float v) { return std::clamp(int(std::lround(127.5 + 127.5 * double(v / m))), 0, 255); };
            for (int64_t y = 0; y < f.kh; ++y)
                for (int64_t x = 0; x < f.kw; ++x) {
                    const int64_t k = y * f.kw + x;
                    image.setPixel(int(x), int(y), qRgb(level(r[k]), level(g[k]), level(b[k])));
                }
            m_images.push_back(image);
            m_kernels.emplace_back(int(o), -1);
            continue;
        }
        for (int64_t i = 0; i < f.shownIn; ++i) {
            m_images.push_back(renderPlane(f.kernel(o, i), f.kh, f.kw, m_map, -m, m));
            m_kernels.emplace_back(int(o), int(i));
        }
    }
    relayout();
    updateGeometry();
    update();
}

// The size the tiles need at `scale` screen pixels per weight; a wrapped grid fills `width` row by row.
QSize FilterGrid::layoutSize(int scale, int width) const
{
    const FilterSet& f = m_filters;
    if (f.empty())
        return { 0, 0 };
    const int tw = int(f.kw) * scale, th = int(f.kh) * scale;
    const int label = fontMetrics().height();
    if (wrapped()) {
        const int n = int(m_images.size());
        const int cols = std::clamp((width - kWrapGap) / (tw + kWrapGap), 1, n);
        const int rows = (n + cols - 1) / cols;
        return { kWrapGap + cols * (tw + kWrapGap), kWrapGap + rows * (label + th + kWrapGap) };
    }
    const int rowLabel = fontMetrics().horizontalAdvance(QString::number(f.shownOut - 1)) + 6;
    return { rowLabel + int(f.shownIn) * (tw + kMatrixGap) + kMatrixGap,
        label + int(f.shownOut) * (th + kMatrixGap) + kMatrixGap };
}

QSize FilterGrid::sizeHint() const
{
    const QSize s = layoutSize(8, 320);
    return s.isEmpty() ? QSize(200, 200) : s;
}

QSize FilterGrid::minimumSizeHint() const
{
    if (m_filters.empty())
        return { 60, 40 };
    if (wrapped()) // as narrow as one tile; the height follows the width it gets (relayout)
        return layoutSize(kMinScale, int(m_filters.kw) * kMinScale + 2 * kWrapGap);
    return layoutSize(kMinScale, 0);
}

int FilterGrid::readableWidth() const
{
    if (m_filters.empty())
        return 0;
    constexpr int kReadable = 6;
    if (wrapped()) {
        const int tiles = int(std::min<size_t>(m_images.size(), 3));
        return kWrapGap + tiles * (int(m_filters.kw) * kReadable + kWrapGap);
    }
    return layoutSize(kReadable, 0).width();
}

void FilterGrid::resizeEvent(QResizeEvent*) { relayout(); }

// The largest whole scale (pixel-exact kernels) at which every tile fits the widget, never below kMinScale: a
// larger layer then asks its scroll area for more room instead of blurring the kernels.
void FilterGrid::relayout()
{
    m_rects.clear();
    const FilterSet& f = m_filters;
    if (f.empty())
        return;
    int scale = kMinScale;
    for (int s = kMaxScale; s > kMinScale; --s) {
        const QSize need = layoutSize(s, width());
        if (need.width() <= width() && need.height() <= height()) {
            scale = s;
            break;
        }
    }
    m_scale = scale;
    const int tw = int(f.kw) * scale, th = int(f.kh) * scale;
    const int label = fontMetrics().height();
    if (wrapped()) {
        const QSize used = layoutSize(scale, width());
        const int cols = std::max(1, (used.width() - kWrapGap) / (tw + kWrapGap));
        const int x0 = std::max(0, (width() - used.width()) / 2);
        for (int k = 0; k < int(m_images.size()); ++k)
            m_rects.emplace_back(x0 + kWrapGap + (k % cols) * (tw + kWrapGap),
                kWrapGap + (k / cols) * (label + th + kWrapGap) + label, tw, th);
        return;
    }
    m_rowLabel = fontMetrics().horizontalAdvance(QString::number(f.shownOut - 1)) + 6;
    m_colLabel = label;
    for (int k = 0; k < int(m_images.size()); ++k) {
        const int o = k / int(f.shownIn), i = k % int(f.shownIn);
        m_rects.emplace_back(
            m_rowLabel + kMatrixGap + i * (tw + kMatrixGap), m_colLabel + kMatrixGap + o * (th + kMatrixGap), tw, th);
    }
}

void FilterGrid::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    if (m_images.empty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(6, 6, -6, -6), Qt::AlignCenter | Qt::TextWordWrap, tr("No filters"));
        return;
    }
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    const QColor frame = palette().color(QPalette::Mid);
    const int label = fontMetrics().height();
    const bool wrap = wrapped();
    for (size_t k = 0; k < m_images.size() && k < m_rects.size(); ++k) {
        const QRect r = m_rects[k];
        p.drawImage(r, m_images[k]);
        // White is zero on the diverging scale: a frame keeps a kernel of small weights visible on a white page.
        p.setPen(frame);
        p.drawRect(r.adjusted(-1, -1, 0, 0));
        if (wrap) {
            p.setPen(palette().color(QPalette::Text));
            p.drawText(QRect(r.left() - kWrapGap / 2, r.top() - label, r.width() + kWrapGap, label), Qt::AlignCenter,
                QString::number(m_kernels[k].first));
        }
    }
    if (wrap)
        return;
    // Matrix: output numbers down the left, input numbers across the top, thinned so they never collide.
    p.setPen(palette().color(QPalette::Text));
    const int pitchX = int(m_filters.kw) * m_scale + kMatrixGap, pitchY = int(m_filters.kh) * m_scale + kMatrixGap;
    const int stepY = labelStep(label, pitchY);
    const int stepX = labelStep(fontMetrics().horizontalAdvance(QString::number(m_filters.shownIn - 1)) + 4, pitchX);
    for (int o = 0; o < int(m_filters.shownOut); o += stepY) {
        const QRect r = m_rects[size_t(o * m_filters.shownIn)];
        p.drawText(QRect(0, r.top() + r.height() / 2 - label / 2, m_rowLabel, label), Qt::AlignRight | Qt::AlignVCenter,
            QString::number(o) + QLatin1Char(' '));
    }
    for (int i = 0; i < int(m_filters.shownIn); i += stepX) {
        const QRect r = m_rects[size_t(i)];
        p.drawText(
            QRect(r.left() - pitchX, 0, r.width() + 2 * pitchX, m_colLabel), Qt::AlignCenter, QString::number(i));
    }
}

void FilterGrid::mouseMoveEvent(QMouseEvent* e)
{
    const QPoint pos = e->position().toPoint();
    for (size_t k = 0; k < m_rects.size(); ++k) {
        const QRect r = m_rects[k];
        if (!r.contains(pos))
            continue;
        const int col = std::clamp(int((pos.x() - r.left()) / m_scale), 0, int(m_filters.kw) - 1);
        const int row = std::clamp(int((pos.y() - r.top()) / m_scale), 0, int(m_filters.kh) - 1);
        const auto [o, i] = m_kernels[k];
        const int64_t at = int64_t(row) * m_filters.kw + col;
        QString text;
        float value;
        if (i < 0) {
            value = m_filters.kernel(o, 0)[at];
            text = (m_filters.gradient ? tr("output %1 · row %2 · col %3 · ∂L/∂w R %4, G %5, B %6")
                                       : tr("output %1 · row %2 · col %3 · weights R %4, G %5, B %6"))
                       .arg(o)
                       .arg(row)
                       .arg(col)
                       .arg(double(m_filters.kernel(o, 0)[at]), 0, 'g', 4)
                       .arg(double(m_filters.kernel(o, 1)[at]), 0, 'g', 4)
                       .arg(double(m_filters.kernel(o, 2)[at]), 0, 'g', 4);
        } else {
            value = m_filters.kernel(o, i)[at];
            text = (m_filters.gradient ? tr("output %1 · input %2 · row %3 · col %4 · ∂L/∂w %5")
                                       : tr("output %1 · input %2 · row %3 · col %4 · weight %5"))
                       .arg(o)
                       .arg(i)
                       .arg(row)
                       .arg(col)
                       .arg(double(value), 0, 'g', 4);
        }
        Q_EMIT hovered(o, i, row, col, value, text);
        return;
    }
    Q_EMIT left();
}

void FilterGrid::leaveEvent(QEvent*) { Q_EMIT left(); }

} // namespace convscope::gui
