#include "gui/views/saliency_view.h"

#include <QPainter>

#include <algorithm>
#include <cmath>
#include <limits>

namespace convscope::gui {

namespace {
    constexpr int kSaliencyMinTile = 96; // screen pixels: a 28×28 digit is drawn at least this large
    constexpr int kSaliencyMaxTile = 200;
    constexpr int kSaliencyGap = 8;
} // namespace

std::vector<float> saliencyOf(const Tensor& g, int64_t item, float* peak)
{
    const Shape& s = g.shape();
    const int64_t area = s.h * s.w;
    std::vector<float> map(size_t(area), 0.0f);
    const float* base = g.data() + item * s.c * area;
    for (int64_t c = 0; c < s.c; ++c)
        for (int64_t p = 0; p < area; ++p) {
            const float v = std::fabs(base[c * area + p]);
            if (std::isfinite(v))
                map[size_t(p)] = std::max(map[size_t(p)], v);
        }
    const float top = map.empty() ? 0.0f : *std::max_element(map.begin(), map.end());
    if (peak)
        *peak = top;
    if (top > 0)
        for (float& v : map)
            v /= top;
    return map;
}

QImage pictureOf(const Tensor& input, int64_t item)
{
    const Shape& s = input.shape();
    const int64_t area = s.h * s.w;
    const float* base = input.data() + item * s.c * area;
    float lo = std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::lowest();
    for (int64_t k = 0; k < s.c * area; ++k)
        if (std::isfinite(base[k])) {
            lo = std::min(lo, base[k]);
            hi = std::max(hi, base[k]);
        }
    const float span = hi > lo ? hi - lo : 1.0f;
    auto byte
        = [&](float v) { return std::isfinite(v) ? std::clamp(int(std::lround((v - lo) / span * 255)), 0, 255) : 0; };
    QImage img(int(s.w), int(s.h), QImage::Format_RGB32);
    for (int64_t y = 0; y < s.h; ++y) {
        auto* line = reinterpret_cast<QRgb*>(img.scanLine(int(y)));
        for (int64_t x = 0; x < s.w; ++x) {
            const int64_t p = y * s.w + x;
            if (s.c == 3) {
                line[x] = qRgb(byte(base[p]), byte(base[area + p]), byte(base[2 * area + p]));
            } else {
                float sum = 0;
                for (int64_t c = 0; c < s.c; ++c)
                    sum += base[c * area + p];
                const int v = byte(sum / float(s.c));
                line[x] = qRgb(v, v, v);
            }
        }
    }
    return img;
}

QRgb heatColour(float s)
{
    s = std::clamp(s, 0.0f, 1.0f);
    // Dark red (0.45, 0, 0) → red at 0.4 → orange → yellow at 1.
    const float r = s < 0.4f ? 0.45f + 0.55f * s / 0.4f : 1.0f;
    const float g = s < 0.4f ? 0.0f : (s - 0.4f) / 0.6f;
    return qRgb(int(r * 255), int(g * 255), 0);
}

QImage saliencyOverlay(const QImage& picture, const std::vector<float>& saliency)
{
    QImage out = picture.convertToFormat(QImage::Format_RGB32);
    for (int y = 0; y < out.height(); ++y) {
        auto* line = reinterpret_cast<QRgb*>(out.scanLine(y));
        for (int x = 0; x < out.width(); ++x) {
            const float s = saliency[size_t(y * out.width() + x)];
            // The picture dimmed to 60% so the heat reads on white strokes too, the heat laid over by its strength.
            const float a = std::min(1.0f, s * 1.25f);
            const QRgb h = heatColour(s), p = line[x];
            auto mix = [&](int pic, int heat) { return int(std::lround((1 - a) * 0.6f * pic + a * heat)); };
            line[x] = qRgb(mix(qRed(p), qRed(h)), mix(qGreen(p), qGreen(h)), mix(qBlue(p), qBlue(h)));
        }
    }
    return out;
}

SaliencyView::SaliencyView(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("saliencyView"));
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
    clear(tr("The saliency map appears here after a training run with the input gradient."));
}

void SaliencyView::clear(const QString& message)
{
    m_input.reset();
    m_gradient.reset();
    m_maps.clear();
    m_pictures.clear();
    m_captions.clear();
    m_message = message;
    updateGeometry();
    update();
}

void SaliencyView::setData(
    std::shared_ptr<const Tensor> input, std::shared_ptr<const Tensor> gradient, QStringList captions)
{
    if (!input || !gradient || input->shape() != gradient->shape() || input->shape().isVolume()
        || input->shape().flat) {
        clear(tr("No saliency map: the input gradient of an image input is needed (a flat or volume input has no "
                 "picture to draw it over)."));
        return;
    }
    m_input = std::move(input);
    m_gradient = std::move(gradient);
    m_captions = std::move(captions);
    m_maps.clear();
    m_pictures.clear();
    for (int64_t n = 0; n < m_input->shape().n; ++n) {
        m_maps.push_back(saliencyOf(*m_gradient, n));
        m_pictures.push_back(pictureOf(*m_input, n));
    }
    m_message.clear();
    updateGeometry();
    update();
}

void SaliencyView::setOverlay(bool on)
{
    m_overlay = on;
    update();
}

QImage SaliencyView::tileImage(int index) const
{
    const std::vector<float>& map = m_maps.at(size_t(index));
    const QImage& picture = m_pictures.at(size_t(index));
    if (m_overlay)
        return saliencyOverlay(picture, map);
    QImage black(picture.size(), QImage::Format_RGB32);
    black.fill(Qt::black);
    return saliencyOverlay(black, map);
}

QSize SaliencyView::tileSize() const
{
    if (m_pictures.empty())
        return {};
    const QSize s = m_pictures.front().size();
    const int longest = std::max(1, std::max(s.width(), s.height()));
    const int scale
        = std::clamp((kSaliencyMinTile + longest - 1) / longest, 1, std::max(1, kSaliencyMaxTile / longest));
    return s * scale;
}

int SaliencyView::columns(int width) const
{
    const int tile = tileSize().width() + kSaliencyGap;
    return std::clamp((width - kSaliencyGap) / std::max(1, tile), 1, std::max(1, tileCount()));
}

QSize SaliencyView::sizeHint() const
{
    if (m_maps.empty())
        return { 320, fontMetrics().height() * 3 };
    const QSize t = tileSize();
    const int cols = std::min(tileCount(), 5);
    return { kSaliencyGap + cols * (t.width() + kSaliencyGap),
        heightForWidth(kSaliencyGap + cols * (t.width() + kSaliencyGap)) };
}

int SaliencyView::heightForWidth(int width) const
{
    if (m_maps.empty())
        return fontMetrics().height() * 3;
    const int cols = columns(width);
    const int rows = (tileCount() + cols - 1) / cols;
    return kSaliencyGap + rows * (tileSize().height() + fontMetrics().height() + 4 + kSaliencyGap);
}

void SaliencyView::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    if (m_maps.empty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, m_message);
        return;
    }
    const QSize t = tileSize();
    const int cols = columns(width()), label = fontMetrics().height() + 4;
    p.setPen(palette().color(QPalette::Text));
    for (int i = 0; i < tileCount(); ++i) {
        const QRect r(kSaliencyGap + (i % cols) * (t.width() + kSaliencyGap),
            kSaliencyGap + (i / cols) * (t.height() + label + kSaliencyGap), t.width(), t.height());
        p.drawImage(r, tileImage(i)); // nearest: every input pixel a block
        const QString caption = i < m_captions.size() ? m_captions.at(i) : QString::number(i);
        p.drawText(QRect(r.left(), r.bottom() + 2, r.width(), label), Qt::AlignHCenter | Qt::AlignTop,
            fontMetrics().elidedText(caption, Qt::ElideRight, r.width()));
    }
}

} // namespace convscope::gui
