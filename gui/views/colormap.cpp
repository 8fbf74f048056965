#include "gui/views/colormap.h"

#include <QCoreApplication>

#include <algorithm>
#include <cmath>

namespace convscope::gui {

namespace {
    // Viridis as a polynomial fit of matplotlib's table (max error well under one 8-bit step).
    QRgb viridis(double t)
    {
        const double c0[3] = { 0.2777273272234177, 0.005407344544966578, 0.3340998053353061 };
        const double c1[3] = { 0.1050930431085774, 1.404613529898575, 1.384590162594685 };
        const double c2[3] = { -0.3308618287255563, 0.214847559468213, 0.09509516302823659 };
        const double c3[3] = { -4.634230498983486, -5.799100973351585, -19.33244095627987 };
        const double c4[3] = { 6.228269936347081, 14.17993336680509, 56.69055260068105 };
        const double c5[3] = { 4.776384997670288, -13.74514537774601, -65.35303263337234 };
        const double c6[3] = { -5.435455855934631, 4.645852612178535, 26.3124352495832 };
        int rgb[3];
        for (int i = 0; i < 3; ++i) {
            const double v = c0[i] + t * (c1[i] + t * (c2[i] + t * (c3[i] + t * (c4[i] + t * (c5[i] + t * c6[i])))));
            rgb[i] = std::clamp(int(std::lround(v * 255.0)), 0, 255);
        }
        return qRgb(rgb[0], rgb[1], rgb[2]);
    }

    // Blue (negative) through white to red (positive), after ColorBrewer's RdBu.
    QRgb diverging(double t)
    {
        static const double stops[5][4] = {
            { 0.00, 33, 102, 172 },
            { 0.25, 103, 169, 207 },
            { 0.50, 247, 247, 247 },
            { 0.75, 239, 138, 98 },
            { 1.00, 178, 24, 43 },
        };
        for (int i = 0; i < 4; ++i) {
            if (t <= stops[i + 1][0]) {
                const double f = (t - stops[i][0]) / (stops[i + 1][0] - stops[i][0]);
                auto mix = [&](int k) { return int(std::lround(stops[i][k] + f * (stops[i + 1][k] - stops[i][k]))); };
                return qRgb(mix(1), mix(2), mix(3));
            }
        }
        return qRgb(178, 24, 43);
    }
} // namespace

ColorMap::ColorMap(ColorMapKind kind)
    : m_kind(kind)
{
    for (int i = 0; i < 256; ++i) {
        const double t = i / 255.0;
        switch (kind) {
        case ColorMapKind::Viridis:
            m_table[size_t(i)] = viridis(t);
            break;
        case ColorMapKind::Grayscale:
            m_table[size_t(i)] = qRgb(i, i, i);
            break;
        case ColorMapKind::Diverging:
            m_table[size_t(i)] = diverging(t);
            break;
        }
    }
}

QRgb ColorMap::at(double t) const
{
    if (!(t >= 0)) // NaN too
        t = 0;
    return m_table[size_t(std::clamp(int(t * 255.0 + 0.5), 0, 255))];
}

QRgb ColorMap::map(float value, float lo, float hi) const
{
    if (m_kind == ColorMapKind::Diverging) {
        const float m = std::max(std::fabs(lo), std::fabs(hi));
        return at(m > 0 ? 0.5 + 0.5 * double(value) / double(m) : 0.5);
    }
    return at(hi > lo ? double(value - lo) / double(hi - lo) : 0.5);
}

QString ColorMap::name(ColorMapKind kind)
{
    switch (kind) {
    case ColorMapKind::Viridis:
        return QCoreApplication::translate("ColorMap", "Viridis");
    case ColorMapKind::Grayscale:
        return QCoreApplication::translate("ColorMap", "Grayscale");
    case ColorMapKind::Diverging:
        return QCoreApplication::translate("ColorMap", "Diverging (signed)");
    }
    return {};
}

QImage renderPlane(const float* data, int64_t h, int64_t w, const ColorMap& map, float lo, float hi)
{
    QImage image(int(w), int(h), QImage::Format_RGB32);
    for (int64_t y = 0; y < h; ++y) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(int(y)));
        const float* row = data + y * w;
        for (int64_t x = 0; x < w; ++x)
            line[x] = map.map(row[x], lo, hi);
    }
    return image;
}

} // namespace convscope::gui
