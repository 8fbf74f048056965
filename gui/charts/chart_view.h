// The base of every chart page: one QCustomPlot, a caption above it, presentation mode (larger fonts,
// thicker lines) and rendering to an image, SVG or PDF for the exports. Only chart files include
// <qcustomplot.h>; everything else sees this class.
#pragma once

#include <QPicture>
#include <QWidget>

#include <functional>

class QCustomPlot;
class QHBoxLayout;
class QIODevice;
class QLabel;

namespace convscope::gui {

class ChartView : public QWidget {
    Q_OBJECT
public:
    explicit ChartView(QWidget* parent = nullptr);

    virtual QString chartTitle() const = 0;
    QString caption() const;
    void setPresentation(bool on);
    bool presentation() const { return m_presentation; }

    // Draws now whatever a throttled redraw still has pending (before an export).
    virtual void flush() { }
    // Before a report draws the chart: a view of it that reads as one picture (the timing chart of a large network
    // shows its slowest layers rather than the rows scrolled into view); the function returned puts the page back.
    virtual std::function<void()> showForReport() { return {}; }
    // The chart alone (no caption), drawn at `size` whatever the widget's size.
    QImage toImage(QSize size) const;
    bool writePng(QIODevice* out, QSize size) const;
    bool writeSvg(QIODevice* out, QSize size) const;
    bool writePdf(QIODevice* out, QSize size) const;
    // The chart drawn at `size` as vectors (text stays text), for a page that scales it (the PDF report), and the
    // smallest text it draws there, in points at 96 pixels to the inch (how the report picks a scale that keeps it
    // readable).
    QPicture toPicture(QSize size) const;
    double smallestFontPoints() const;
    QCustomPlot* plot() const { return m_plot; }
    int replotCount() const { return m_replots; }

protected:
    void setCaption(const QString& text);
    // Line width and font scale for the current mode; subclasses use them when they rebuild.
    double lineWidth(double normal = 1.5) const { return m_presentation ? normal * 2.2 : normal; }
    void applyFonts();
    void replot();
    virtual void rebuild() = 0; // presentation changed: redraw everything

    QCustomPlot* m_plot;
    QLabel* m_caption;
    QHBoxLayout* m_controls; // switches above the caption

private:
    void fitLegend();
    bool m_presentation = false;
    bool m_legendHidden = false; // hidden here because it was empty, shown again when entries come
    int m_replots = 0;
};

} // namespace convscope::gui
