#include "gui/views/feature_map_grid.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::gui {

namespace {
    constexpr int kGap = 4;
    constexpr int kLabel = 14;
} // namespace

PlaneSet planesOf(const Tensor& t, int64_t n)
{
    PlaneSet p;
    const Shape& s = t.shape();
    if (t.empty() || n < 0 || n >= s.n)
        return p;
    p.flat = s.flat;
    p.channels = s.flat ? 1 : s.c;
    p.height = s.flat ? 1 : s.h;
    p.width = s.flat ? s.c : s.w;
    const int64_t plane = s.h * s.w, item = s.c * s.d * plane;
    const float* base = t.data() + n * item + (s.d / 2) * plane;
    p.values.resize(size_t(s.c * plane));
    for (int64_t c = 0; c < s.c; ++c)
        std::copy(base + c * s.d * plane, base + c * s.d * plane + plane, p.values.begin() + c * plane);
    return p;
}

FeatureMapGrid::FeatureMapGrid(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
}

void FeatureMapGrid::setPlanes(PlaneSet planes)
{
    m_planes = std::move(planes);
    if (m_planes.channelIds.size() != size_t(m_planes.channels)) {
        m_planes.channelIds.resize(size_t(m_planes.channels));
        for (int64_t c = 0; c < m_planes.channels; ++c)
            m_planes.channelIds[size_t(c)] = int(c);
    }
    m_message.clear();
    rebuild();
}

void FeatureMapGrid::setSingleRow(bool on)
{
    m_singleRow = on;
    relayout();
    update();
}

void FeatureMapGrid::setTileLabels(QStringList labels)
{
    m_tileLabels = std::move(labels);
    update();
}

void FeatureMapGrid::clear(const QString& message)
{
    m_planes = {};
    m_tileLabels.clear();
    m_message = message;
    rebuild();
}

void FeatureMapGrid::setColorMap(ColorMapKind kind)
{
    if (kind == m_map.kind())
        return;
    m_map = ColorMap(kind);
    rebuild();
}

void FeatureMapGrid::setSharedRange(bool shared)
{
    if (shared == m_shared)
        return;
    m_shared = shared;
    rebuild();
}

void FeatureMapGrid::setHighlight(std::vector<bool> rows, std::vector<bool> cols)
{
    m_hlRows = std::move(rows);
    m_hlCols = std::move(cols);
    update();
}

void FeatureMapGrid::setMarkedPixel(int row, int col)
{
    m_markRow = row;
    m_markCol = col;
    update();
}

void FeatureMapGrid::setColourComposite(bool on)
{
    if (on == m_composite)
        return;
    m_composite = on;
    rebuild();
}

float FeatureMapGrid::rangeLow(int tile) const { return m_ranges.at(size_t(tile)).first; }
float FeatureMapGrid::rangeHigh(int tile) const { return m_ranges.at(size_t(tile)).second; }

void FeatureMapGrid::rebuild()
{
    m_images.clear();
    m_ranges.clear();
    const int64_t plane = m_planes.height * m_planes.width;
    float gLo = std::numeric_limits<float>::infinity(), gHi = -gLo;
    std::vector<std::pair<float, float>> own;
    for (int64_t c = 0; c < m_planes.channels; ++c) {
        float lo = std::numeric_limits<float>::infinity(), hi = -lo;
        const float* p = m_planes.plane(c);
        for (int64_t i = 0; i < plane; ++i) {
            if (std::isfinite(p[i])) {
                lo = std::min(lo, p[i]);
                hi = std::max(hi, p[i]);
            }
        }
        if (lo > hi)
            lo = hi = 0;
        own.emplace_back(lo, hi);
        gLo = std::min(gLo, lo);
        gHi = std::max(gHi, hi);
    }
    for (int64_t c = 0; c < m_planes.channels; ++c) {
        const bool given = m_planes.ranges.size() == size_t(m_planes.channels);
        const auto range = given ? m_planes.ranges[size_t(c)] : m_shared ? std::make_pair(gLo, gHi) : own[size_t(c)];
        m_ranges.push_back(range);
        m_images.push_back(
            renderPlane(m_planes.plane(c), m_planes.height, m_planes.width, m_map, range.first, range.second));
    }
    if (hasComposite()) {
        // One range for the three channels, so the picture keeps its colours' balance.
        const float lo = std::min({ own[0].first, own[1].first, own[2].first });
        const float hi = std::max({ own[0].second, own[1].second, own[2].second });
        const float span = hi > lo ? hi - lo : 1.0f;
        QImage rgb(int(m_planes.width), int(m_planes.height), QImage::Format_RGB32);
        for (int64_t i = 0; i < plane; ++i) {
            auto level = [&](int c) {
                const float v = m_planes.plane(c)[i];
                return std::isfinite(v) ? std::clamp(int(std::lround(255.0 * (v - lo) / span)), 0, 255) : 0;
            };
            rgb.setPixel(int(i % m_planes.width), int(i / m_planes.width), qRgb(level(0), level(1), level(2)));
        }
        m_ranges.emplace_back(lo, hi);
        m_images.push_back(rgb);
    }
    relayout();
    update();
    Q_EMIT rendered();
}

void FeatureMapGrid::resizeEvent(QResizeEvent*)
{
    relayout();
    Q_EMIT resized();
}

int64_t FeatureMapGrid::tilesThatFit(int64_t mapHeight, int64_t mapWidth) const
{
    if (!isVisible() || width() <= minimumSizeHint().width() || height() <= minimumSizeHint().height())
        return 0;
    const double shorter = double(std::max<int64_t>(1, std::min(mapHeight, mapWidth)));
    const double scale = kMinTile / shorter; // the map's shorter side at kMinTile pixels
    const double tw = std::max(1.0, double(mapWidth) * scale), th = std::max(1.0, double(mapHeight) * scale);
    const int64_t cols = std::max<int64_t>(1, int64_t((width() - kGap) / (tw + kGap)));
    const int64_t rows = std::max<int64_t>(1, int64_t((height() - kGap) / (th + kGap + kLabel)));
    return cols * rows;
}

// Picks the column count that gives the largest tiles, keeping whole-pixel scale factors where the tiles
// are larger than the map (pixel-exact) and shrinking smoothly where they are not.
void FeatureMapGrid::relayout()
{
    m_rects.clear();
    const int n = int(m_images.size());
    if (n == 0)
        return;
    const int W = std::max(1, width() - kGap), H = std::max(1, height() - kGap);
    const double mw = double(m_planes.width), mh = double(m_planes.height);
    double bestScale = 0;
    int bestCols = 1;
    for (int cols = m_singleRow ? n : 1; cols <= n; ++cols) {
        const int rows = (n + cols - 1) / cols;
        const double cellW = double(W) / cols - kGap, cellH = double(H) / rows - kGap - kLabel;
        const double scale = std::min(cellW / mw, cellH / mh);
        if (scale > bestScale) {
            bestScale = scale;
            bestCols = cols;
        }
    }
    double scale = bestScale >= 1 ? std::floor(bestScale) : bestScale;
    scale = std::min(scale, double(m_maxTile) / std::max(mw, mh));
    if (m_planes.flat)
        scale = std::max(scale, 1.0);
    const int tw = std::max(1, int(mw * scale)), th = std::max(1, int(mh * scale));
    const int rows = (n + bestCols - 1) / bestCols;
    m_cols = bestCols;
    const int usedW = bestCols * (tw + kGap), usedH = rows * (th + kGap + kLabel);
    const int x0 = kGap + std::max(0, (W - usedW) / 2), y0 = kGap + std::max(0, (H - usedH) / 2);
    for (int i = 0; i < n; ++i) {
        const int r = i / bestCols, c = i % bestCols;
        m_rects.emplace_back(x0 + c * (tw + kGap), y0 + r * (th + kGap + kLabel) + kLabel, tw, th);
    }
}

QRect FeatureMapGrid::tileRect(int index) const { return m_rects.at(size_t(index)); }

void FeatureMapGrid::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    if (m_images.empty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap, m_message);
        return;
    }
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.8));
    p.setFont(small);
    const bool highlight = !m_hlRows.empty() && !m_hlCols.empty();
    // Channel numbers on every k-th tile of a row, k so that the widest number never touches the next one: tiles of
    // 4 pixels under 100+ channels would otherwise print "100101102".
    int labelEvery = 1;
    if (!m_planes.flat && !m_rects.empty() && !m_planes.channelIds.empty()) {
        int widest = p.fontMetrics().horizontalAdvance(
            QString::number(*std::max_element(m_planes.channelIds.begin(), m_planes.channelIds.end())));
        for (const QString& label : m_tileLabels)
            widest = std::max(widest, p.fontMetrics().horizontalAdvance(label));
        labelEvery = std::max(1, (widest + 8 + m_rects[0].width() + kGap - 1) / (m_rects[0].width() + kGap));
    }
    for (size_t i = 0; i < m_images.size() && i < m_rects.size(); ++i) {
        const QRect r = m_rects[i];
        p.drawImage(r, m_images[i]);
        p.setPen(palette().color(QPalette::Text));
        const QString label = i < size_t(m_tileLabels.size()) ? m_tileLabels[qsizetype(i)]
            : m_planes.flat                                   ? tr("%n feature(s)", nullptr, int(m_planes.width))
            : i < m_planes.channelIds.size()                  ? QString::number(m_planes.channelIds[i])
                                                              : tr("RGB");
        if (m_planes.flat || (int(i) % std::max(1, m_cols)) % labelEvery == 0)
            p.drawText(QRect(r.left(), r.top() - kLabel, (r.width() + kGap) * labelEvery - kGap, kLabel),
                Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip, label);
        const double sx = double(r.width()) / double(m_planes.width), sy = double(r.height()) / double(m_planes.height);
        if (m_planes.flat && sx >= 14) {
            // A short feature vector (class scores, probabilities): number the cells, and print the values
            // when they fit, so a teacher can read them off the screen.
            const float* v = m_planes.plane(int64_t(i));
            for (int64_t x = 0; x < m_planes.width; ++x) {
                const QRectF cell(r.left() + x * sx, r.top(), sx, sy);
                p.setPen(palette().color(QPalette::Text));
                p.drawText(QRectF(cell.left(), cell.bottom() + 1, sx, kLabel), Qt::AlignCenter, QString::number(x));
                if (sx >= 44 && sy >= 14) {
                    const QColor bg = m_images[i].pixelColor(int(x), 0);
                    p.setPen(bg.lightness() > 140 ? Qt::black : Qt::white);
                    p.drawText(cell, Qt::AlignCenter, QString::number(double(v[x]), 'g', 3));
                }
            }
        }
        if (highlight) {
            // Dim what the chosen output does not depend on; outline what it does.
            p.save();
            p.setPen(Qt::NoPen);
            p.setBrush(QColor(0, 0, 0, 150));
            for (int64_t y = 0; y < m_planes.height; ++y) {
                for (int64_t x = 0; x < m_planes.width; ++x) {
                    const bool in = size_t(y) < m_hlRows.size() && size_t(x) < m_hlCols.size() && m_hlRows[size_t(y)]
                        && m_hlCols[size_t(x)];
                    if (!in)
                        p.drawRect(QRectF(r.left() + x * sx, r.top() + y * sy, sx, sy));
                }
            }
            p.restore();
        }
        if (m_markRow >= 0 && m_markCol >= 0 && m_markRow < m_planes.height && m_markCol < m_planes.width) {
            p.save();
            p.setPen(QPen(Qt::red, 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(
                QRectF(r.left() + m_markCol * sx, r.top() + m_markRow * sy, std::max(sx, 3.0), std::max(sy, 3.0)));
            p.restore();
        }
    }
}

bool FeatureMapGrid::hit(QPoint pos, int* tile, int* row, int* col) const
{
    for (size_t i = 0; i < m_rects.size(); ++i) {
        const QRect r = m_rects[i];
        if (!r.contains(pos))
            continue;
        *tile = int(i);
        *col = std::clamp(int((pos.x() - r.left()) * m_planes.width / r.width()), 0, int(m_planes.width) - 1);
        *row = std::clamp(int((pos.y() - r.top()) * m_planes.height / r.height()), 0, int(m_planes.height) - 1);
        return true;
    }
    return false;
}

void FeatureMapGrid::mouseMoveEvent(QMouseEvent* e)
{
    int tile, row, col;
    if (!hit(e->position().toPoint(), &tile, &row, &col)) {
        Q_EMIT left();
        return;
    }
    if (tile >= m_planes.channels) // the colour picture: report its red channel
        tile = 0;
    const float v = m_planes.plane(tile)[int64_t(row) * m_planes.width + col];
    const int channel = m_planes.flat ? col : m_planes.channelIds[size_t(tile)];
    Q_EMIT hovered(channel, m_planes.flat ? 0 : row, m_planes.flat ? 0 : col, v);
}

void FeatureMapGrid::mousePressEvent(QMouseEvent* e)
{
    int tile, row, col;
    if (e->button() == Qt::LeftButton && hit(e->position().toPoint(), &tile, &row, &col))
        Q_EMIT clicked(tile, m_planes.channelIds[size_t(std::min<int64_t>(tile, m_planes.channels - 1))], row, col);
}

void FeatureMapGrid::leaveEvent(QEvent*) { Q_EMIT left(); }

} // namespace convscope::gui
