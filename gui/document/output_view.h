// How the window shows one layer's output, chosen from its dims and axis names (axis_names.h):
//  - feature maps: an image N, C, H, W (or any rank-4 tensor, by position), one tile per channel;
//  - permuted maps: an image whose axes were permuted (N×H×W×C inside ConvNeXt), one tile per channel of the axes
//    named C, H and W wherever they lie;
//  - a volume (rank 5), as volume_view.h shows it;
//  - sliced maps (rank 6 without H and W named): tiles along axis 1, rows and columns the last two axes, axes 2 and
//    3 at an index the user picks;
//  - a heat map (rank 2 and 3): rank 2 whole, rank 3 one slice along the batch axis (or axis 0);
//  - bars (rank 1).
// An axis that is neither shown nor the batch item is "picked": the window shows it at one index with a control.
#pragma once

#include "gui/document/axis_names.h"

#include <cstdint>
#include <string>
#include <vector>

namespace convscope::gui {

enum class OutputForm { FeatureMaps, PermutedMaps, Volume, SlicedMaps, HeatMap, Bars };

struct OutputView {
    OutputForm form = OutputForm::FeatureMaps;
    int item = -1; // the axis the batch item indexes (the axis named N), or -1
    int tiles = -1; // the axis of the tiles (channels); -1: one tile
    int rows = -1, cols = -1; // the axes down and across a tile or heat map (a volume: its H and W; bars: cols)
    int depth = -1; // a volume's D axis
    std::vector<int> picked; // every other axis, shown at an index the user picks
};

OutputView chooseOutputView(const std::vector<int64_t>& dims, const AxisNames& names);

// What each shown axis is: "tiles C (axis 3) · rows H (axis 1) · columns W (axis 2)"; a heat map's
// "rows d1 (axis 1) · columns d2 (axis 2) at N = item"; empty for canonical feature maps.
std::string describeOutputView(const OutputView& view, const std::vector<int64_t>& dims, const AxisNames& names);
// "feature maps", "permuted maps", "volume", "sliced maps", "heat map", "bars".
const char* outputFormName(OutputForm form);

} // namespace convscope::gui
