// The saliency map of a training step (issue 33): which input pixels the loss depended on. For each item of the batch
// the gradient of the loss with respect to the input, |∂L/∂x| taken as its maximum over the channels (Simonyan et
// al.'s saliency), divided by the item's largest value, drawn over the input picture as a heat map: transparent where
// the loss did not care (the picture shows through), dark red to yellow where it cared most. One tile per item,
// wrapped in rows, each captioned (the item's class).
#pragma once

#include "compute/tensor.h"

#include <QImage>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <vector>

namespace convscope::gui {

// |∂L/∂x| of item `item`, its maximum over the channels at every pixel, divided by the item's largest (H·W values
// in [0, 1], row-major; all zero when the gradient is zero). `peak` gets the largest |∂L/∂x| before dividing.
std::vector<float> saliencyOf(const Tensor& inputGradient, int64_t item, float* peak = nullptr);
// Item `item` of an image input as a picture: one channel grey, three channels RGB (others: their mean, grey), the
// item's own minimum to maximum stretched over black to white.
QImage pictureOf(const Tensor& input, int64_t item);
// The heat colour of saliency s in [0, 1] (dark red, red, orange, yellow) and the picture with the map over it.
QRgb heatColour(float s);
QImage saliencyOverlay(const QImage& picture, const std::vector<float>& saliency);

class SaliencyView : public QWidget {
    Q_OBJECT
public:
    explicit SaliencyView(QWidget* parent = nullptr);

    // The input and ∂L/∂input of the same shape ([N, C, H, W]); one caption per item (may be shorter).
    void setData(std::shared_ptr<const Tensor> input, std::shared_ptr<const Tensor> gradient, QStringList captions);
    void clear(const QString& message);
    // Over the picture (the default), or the saliency alone on black.
    void setOverlay(bool on);
    bool overlay() const { return m_overlay; }

    int tileCount() const { return int(m_maps.size()); }
    QImage tileImage(int index) const; // what the tile draws, at the input's size
    const std::vector<float>& saliency(int index) const { return m_maps.at(size_t(index)); }
    QString message() const { return m_message; }

    QSize sizeHint() const override;
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;

protected:
    void paintEvent(QPaintEvent*) override;

private:
    QSize tileSize() const; // the picture scaled up, without its caption
    int columns(int width) const;

    std::shared_ptr<const Tensor> m_input, m_gradient;
    QStringList m_captions;
    std::vector<std::vector<float>> m_maps;
    std::vector<QImage> m_pictures;
    bool m_overlay = true;
    QString m_message;
};

} // namespace convscope::gui
