// The feature maps a report holds: for each chosen layer, the grid the window shows of it (FeatureMapGrid drawn off
// screen), from the first selection that kept the layer's output.
#include "gui/app/html_report.h"

#include "gui/views/feature_map_grid.h"

#include <QPixmap>

#include <algorithm>
#include <cmath>

namespace convscope::gui {

namespace {
    constexpr int64_t kMaxChannels = 64;
    constexpr int kWidth = 880;
} // namespace

ReportMaps reportMaps(const RunOutcome& run, const QList<int>& layers)
{
    ReportMaps maps;
    const RunResult& r = run.result;
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
        PlaneSet planes = planesOf(out, 0);
        if (planes.empty())
            continue;
        const int64_t all = planes.channels;
        const int64_t shown = planes.flat ? planes.channels : std::min(planes.channels, kMaxChannels);
        if (shown < planes.channels) {
            planes.values.resize(size_t(shown * planes.height * planes.width));
            if (!planes.channelIds.empty())
                planes.channelIds.resize(size_t(shown));
            if (!planes.ranges.empty())
                planes.ranges.resize(size_t(shown));
            planes.channels = shown;
        }
        // Tiles in a near-square grid a page wide; a feature vector is one strip.
        const int cols = planes.flat ? 1 : std::max(1, int(std::ceil(std::sqrt(double(shown)))));
        const int rows = planes.flat ? 1 : int((shown + cols - 1) / cols);
        const double aspect = planes.flat ? 0.1 : double(planes.height) / double(std::max<int64_t>(1, planes.width));
        const int height = std::clamp(int(double(kWidth) / cols * aspect * rows * 1.15) + 24, 80, 1100);
        FeatureMapGrid grid;
        grid.setAttribute(Qt::WA_DontShowOnScreen);
        grid.resize(kWidth, height);
        grid.setPlanes(std::move(planes));
        QString title
            = QObject::tr("%1 (layer %2) · %3 · output %4")
                  .arg(QString::fromStdString(run.network.layers[size_t(layer)].name))
                  .arg(layer)
                  .arg(QString::fromStdString(from->selection.str()), QString::fromStdString(out.shape().str()));
        if (shown < all)
            title += QObject::tr(" · channels 0–%1 of %2").arg(shown - 1).arg(all);
        maps.push_back({ title, grid.grab().toImage() });
    }
    return maps;
}

} // namespace convscope::gui
