#include "gui/document/output_view.h"

#include <algorithm>

namespace convscope::gui {

namespace {
    int axisNamed(const AxisNames& names, const char* name)
    {
        for (size_t i = 0; i < names.size(); ++i)
            if (names[i].is(name))
                return int(i);
        return -1;
    }

    // Every axis not shown and not the batch item.
    void pickTheRest(OutputView& v, size_t rank)
    {
        for (int i = 0; i < int(rank); ++i)
            if (i != v.item && i != v.tiles && i != v.rows && i != v.cols && i != v.depth)
                v.picked.push_back(i);
    }
} // namespace

OutputView chooseOutputView(const std::vector<int64_t>& dims, const AxisNames& given)
{
    const size_t rank = dims.size();
    const AxisNames names = given.size() == rank ? given : unknownAxes(dims);
    const int n = axisNamed(names, "N"), h = axisNamed(names, "H"), w = axisNamed(names, "W");
    OutputView v;
    if (rank == 5) { // a volume, as the window has always shown rank 5
        v.form = OutputForm::Volume;
        v.item = 0;
        v.tiles = 1;
        v.depth = 2;
        v.rows = 3;
        v.cols = 4;
        return v;
    }
    if (rank == 1) {
        v.form = OutputForm::Bars;
        v.cols = 0;
        return v;
    }
    if (rank >= 3 && h >= 0 && w >= 0) { // an image, its axes wherever they lie
        v.item = n;
        v.rows = h;
        v.cols = w;
        v.tiles = axisNamed(names, "C");
        if (v.tiles < 0) { // the one other axis longer than 1 (a linear's "features" in an N×H×W×C block)
            std::vector<int> others;
            for (int i = 0; i < int(rank); ++i)
                if (i != n && i != h && i != w && dims[size_t(i)] > 1)
                    others.push_back(i);
            if (others.size() == 1)
                v.tiles = others.front();
        }
        v.form = rank == 4 && v.item == 0 && v.tiles == 1 && v.rows == 2 && v.cols == 3 ? OutputForm::FeatureMaps
                                                                                        : OutputForm::PermutedMaps;
        pickTheRest(v, rank);
        return v;
    }
    if (rank == 4 || rank == 6) { // by position: tiles along axis 1, the last two axes down and across
        v.form = rank == 4 ? OutputForm::FeatureMaps : OutputForm::SlicedMaps;
        v.item = n == 0 || n < 0 ? 0 : -1;
        v.tiles = 1;
        v.rows = int(rank) - 2;
        v.cols = int(rank) - 1;
        pickTheRest(v, rank);
        return v;
    }
    v.form = OutputForm::HeatMap;
    if (rank == 2) { // every item at once
        v.rows = 0;
        v.cols = 1;
        return v;
    }
    // Rank 3: the two axes that are not the batch, at the item shown; without a batch axis, at a picked index of
    // axis 0.
    v.item = n;
    std::vector<int> shown;
    for (int i = 0; i < 3; ++i)
        if (i != n)
            shown.push_back(i);
    if (shown.size() == 3)
        shown.erase(shown.begin());
    v.rows = shown[0];
    v.cols = shown[1];
    pickTheRest(v, rank);
    return v;
}

std::string describeOutputView(const OutputView& v, const std::vector<int64_t>& dims, const AxisNames& given)
{
    const AxisNames names = given.size() == dims.size() ? given : unknownAxes(dims);
    auto axis = [&](int i) { return names[size_t(i)].text(size_t(i)) + " (axis " + std::to_string(i) + ")"; };
    const bool plain = (v.form == OutputForm::FeatureMaps && names.size() == 4 && names[1].is("C") && names[2].is("H")
                           && names[3].is("W"))
        || (v.form == OutputForm::Volume && names[1].is("C") && names[2].is("D") && names[3].is("H")
            && names[4].is("W"));
    if (plain)
        return {};
    std::string s;
    auto add = [&s](const std::string& part) { s += (s.empty() ? "" : " · ") + part; };
    switch (v.form) {
    case OutputForm::Volume:
        add("channels " + axis(v.tiles));
        add("depth " + axis(v.depth));
        add("rows " + axis(v.rows));
        add("columns " + axis(v.cols));
        break;
    case OutputForm::Bars:
        add("one per element of " + axis(v.cols));
        break;
    default:
        if (v.tiles >= 0)
            add("tiles " + axis(v.tiles));
        add("rows " + axis(v.rows));
        add("columns " + axis(v.cols));
        break;
    }
    if (v.item >= 0 && v.form != OutputForm::HeatMap)
        add("item " + axis(v.item));
    else if (v.item >= 0)
        add("at the item of " + axis(v.item));
    return s;
}

const char* outputFormName(OutputForm form)
{
    switch (form) {
    case OutputForm::FeatureMaps:
        return "feature maps";
    case OutputForm::PermutedMaps:
        return "permuted maps";
    case OutputForm::Volume:
        return "volume";
    case OutputForm::SlicedMaps:
        return "sliced maps";
    case OutputForm::HeatMap:
        return "heat map";
    case OutputForm::Bars:
        return "bars";
    }
    return "";
}

} // namespace convscope::gui
