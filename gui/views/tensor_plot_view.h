// A layer output that is not an image, drawn with QCustomPlot: a heat map (QCPColorMap with a colour scale and both
// axes named, rows down the screen as in a feature map) for rank 2 and 3, or bars (QCPBars) for rank 1, 500 to a
// page with a page control. A heat map larger than the screen arrives downsampled (tensor_slices.h) and says so; one
// of at most 256 cells prints its values on the cells when they fit (a classifier's scores read off the screen).
// The pointer's cell or bar is read out through `hovered`.
#pragma once

#include "gui/views/colormap.h"
#include "gui/views/tensor_slices.h"

#include <QSharedPointer>
#include <QString>
#include <QWidget>

#include <vector>

class QCPAxisTickerFixed;
class QCPBars;
class QCPColorMap;
class QCPItemText;
class QCPColorScale;
class QCustomPlot;
class QLabel;
class QMouseEvent;
class QSpinBox;

namespace convscope::gui {

class TensorPlotView : public QWidget {
    Q_OBJECT
public:
    enum class Mode { None, HeatMap, Bars };
    static constexpr int kBarsPerPage = 500;

    explicit TensorPlotView(QWidget* parent = nullptr);

    // rowAxis, colAxis: the names the axes are labelled with ("d1 (axis 1)").
    void setHeatMap(HeatMapData data, const QString& rowAxis, const QString& colAxis);
    // `axis`: the bars' axis label; difference: the values are |Δ| against the reference.
    void setBars(std::vector<float> values, const QString& axis, bool difference);
    void clear(const QString& message);
    void setColorMap(ColorMapKind kind);

    Mode mode() const { return m_mode; }
    QCustomPlot* plot() const { return m_plot; }
    QCPColorMap* colorMap() const { return m_map; }
    QCPColorScale* colorScale() const { return m_scale; }
    QCPBars* bars() const { return m_bars; }
    const HeatMapData& heatMap() const { return m_heat; }
    const std::vector<float>& barValues() const { return m_values; }
    QString note() const; // "downsampled …", "elements 0–499 of 1200 (page 1 of 3)", or empty
    QString message() const { return m_message; }
    QSpinBox* pageBox() const { return m_page; }
    // What the pointer at plot coordinates (key, value) reads: "d1 3 · d2 7 · value 0.25"; empty outside the data.
    QString readout(double key, double value) const;
    // A small heat map (class scores) prints each cell's value on it when the cells are large enough to hold it.
    int cellLabelsShown() const;

Q_SIGNALS:
    void hovered(const QString& text);

protected:
    // The application's font changed (presentation mode): the axes' labels and numbers follow it.
    void changeEvent(QEvent* event) override;

private:
    void showPage();
    void applyGradient();
    void onMouseMove(QMouseEvent* event);
    void makeCellLabels();
    void fitCells();

    Mode m_mode = Mode::None;
    ColorMapKind m_kind = ColorMapKind::Viridis;
    HeatMapData m_heat;
    std::vector<float> m_values;
    bool m_difference = false;
    QString m_rowAxis, m_colAxis, m_message;
    QCustomPlot* m_plot;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCPBars* m_bars = nullptr;
    std::vector<QCPItemText*> m_cellLabels;
    QSharedPointer<QCPAxisTickerFixed> m_xTicks, m_yTicks; // whole-number ticks for indices
    QLabel* m_note;
    QLabel* m_messageLabel;
    QSpinBox* m_page;
    QWidget* m_pageRow;
};

} // namespace convscope::gui
