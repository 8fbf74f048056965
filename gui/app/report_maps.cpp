// The feature maps a report holds: for each chosen layer, what the window shows of it (gui/document/output_view.h),
// drawn off screen from the first selection that kept the layer's output: the grid of an image's channels (also
// when its axes are permuted; a volume's middle depth slice; a rank-6 tensor's first slice), or the heat map or bars
// of any other rank. Its axis names are in the title.
#include "gui/app/html_report.h"

#include "gui/document/network_axes.h"
#include "gui/document/output_view.h"
#include "gui/views/feature_map_grid.h"
#include "gui/views/tensor_plot_view.h"
#include "gui/views/tensor_slices.h"

#include <QCoreApplication>
#include <QPixmap>

#include <algorithm>
#include <cmath>

namespace convscope::gui {

namespace {
    constexpr int64_t kMaxChannels = 64;
    constexpr int kWidth = 880;

    QImage plotImage(const Tensor& out, const OutputView& view, const AxisNames& names)
    {
        auto label = [&](int axis) {
            return QObject::tr("%1 (axis %2)")
                .arg(QString::fromStdString(names[size_t(axis)].text(size_t(axis))))
                .arg(axis);
        };
        TensorPlotView plot;
        plot.setAttribute(Qt::WA_DontShowOnScreen);
        plot.resize(kWidth, 360);
        plot.show();
        const std::vector<int64_t> index(out.shape().dims().size(), 0);
        if (view.form == OutputForm::HeatMap)
            plot.setHeatMap(heatMapOf(out, nullptr, view, index), label(view.rows), label(view.cols));
        else
            plot.setBars(barsOf(out, nullptr), label(view.cols), false);
        QCoreApplication::processEvents(); // the layout, before the picture
        return plot.grab().toImage();
    }
} // namespace

ReportMaps reportMaps(const RunOutcome& run, const QList<int>& layers)
{
    ReportMaps maps;
    const RunResult& r = run.result;
    const std::vector<AxisNames> axes = layerAxes(run.network, r.shapes);
    for (int layer : layers) {
        if (layer < 0 || size_t(layer) >= run.network.layers.size())
            continue;
        const SelectionResult* from = nullptr;
        for (const SelectionResult& sel : r.selections)
            if (sel.ok && size_t(layer) < sel.layers.size() && sel.layers[size_t(layer)].output) {
                from = &sel;
                break;
            }
        if (!from)
            continue;
        const Tensor& out = *from->layers[size_t(layer)].output;
        if (out.empty())
            continue;
        const std::vector<int64_t> dims = out.shape().dims();
        const AxisNames names = size_t(layer) < axes.size() && axes[size_t(layer)].size() == dims.size()
            ? axes[size_t(layer)]
            : unknownAxes(dims);
        const OutputView view = chooseOutputView(dims, names);
        QString title = QObject::tr("%1 (layer %2) · %3 · output %4")
                            .arg(QString::fromStdString(run.network.layers[size_t(layer)].name))
                            .arg(layer)
                            .arg(QString::fromStdString(from->selection.str()),
                                QString::fromStdString(shapeWithAxes(out.shape(), names)));
        const std::string described = describeOutputView(view, dims, names);
        if (!described.empty())
            title += QObject::tr(" · %1: %2")
                         .arg(QString::fromLatin1(outputFormName(view.form)), QString::fromStdString(described));
        if (view.form == OutputForm::HeatMap || view.form == OutputForm::Bars) {
            maps.push_back({ title, plotImage(out, view, names) });
            continue;
        }
        // The first item, the first index of every picked axis.
        PlaneSet planes = view.form == OutputForm::Volume
            ? planesOf(out, 0)
            : mapsOf(out, view, std::vector<int64_t>(dims.size(), 0), 0, kMaxChannels);
        if (planes.empty())
            continue;
        const int64_t all = view.tiles >= 0 ? dims[size_t(view.tiles)] : 1;
        const int64_t shown = std::min(planes.channels, kMaxChannels);
        if (shown < planes.channels) {
            planes.values.resize(size_t(shown * planes.height * planes.width));
            planes.channelIds.resize(size_t(shown));
            planes.channels = shown;
        }
        // Tiles in a near-square grid a page wide.
        const int cols = std::max(1, int(std::ceil(std::sqrt(double(shown)))));
        const int rows = int((shown + cols - 1) / cols);
        const double aspect = double(planes.height) / double(std::max<int64_t>(1, planes.width));
        const int height = std::clamp(int(double(kWidth) / cols * aspect * rows * 1.15) + 24, 80, 1100);
        FeatureMapGrid grid;
        grid.setAttribute(Qt::WA_DontShowOnScreen);
        grid.resize(kWidth, height);
        grid.setPlanes(std::move(planes));
        if (shown < all)
            title += QObject::tr(" · channels 0–%1 of %2").arg(shown - 1).arg(all);
        maps.push_back({ title, grid.grab().toImage() });
    }
    return maps;
}

} // namespace convscope::gui
