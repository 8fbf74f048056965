// Colour maps for feature maps: viridis (perceptually uniform, the default), grayscale, and a diverging
// blue-white-red map centred on zero for signed values.
#pragma once

#include <QColor>
#include <QImage>
#include <QString>

#include <array>
#include <cstdint>

namespace convscope::gui {

enum class ColorMapKind { Viridis, Grayscale, Diverging };

class ColorMap {
public:
    explicit ColorMap(ColorMapKind kind = ColorMapKind::Viridis);
    ColorMapKind kind() const { return m_kind; }
    QRgb at(double t) const; // t in [0, 1]
    // Maps value into the table for the range [lo, hi] (a diverging map uses [-m, m], m = max(|lo|, |hi|)).
    QRgb map(float value, float lo, float hi) const;
    static QString name(ColorMapKind kind);

private:
    ColorMapKind m_kind;
    std::array<QRgb, 256> m_table {};
};

// A w x h float plane as an image with `map` over [lo, hi].
QImage renderPlane(const float* data, int64_t h, int64_t w, const ColorMap& map, float lo, float hi);

} // namespace convscope::gui
