// Axis names through a network (gui/document/axis_names.h, network_axes.h), the view chosen for each rank
// (output_view.h) and the cuts drawn of it (gui/views/tensor_slices.h): plain data, no window.
#include "compute/network_json.h"
#include "compute/shape_inference.h"
#include "gui/document/network_axes.h"
#include "gui/document/output_view.h"
#include "gui/views/tensor_slices.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace convscope;
using namespace convscope::gui;

namespace {
AxisNames image(int64_t n, int64_t c, int64_t h, int64_t w) { return inputAxes(Shape::nchw(n, c, h, w)); }

std::vector<std::string> textsOf(const std::vector<AxisNames>& layers)
{
    std::vector<std::string> t;
    for (const AxisNames& a : layers)
        t.push_back(axesText(a));
    return t;
}
} // namespace

TEST_CASE("views merge, split and restore axis names; a transpose permutes them", "[gui][axes]")
{
    const AxisNames nchw = image(1, 8, 4, 4);
    CHECK(axesText(nchw) == "N, C, H, W");
    CHECK(axesText(inputAxes(Shape::ncdhw(1, 2, 3, 4, 5))) == "N, C, D, H, W");
    CHECK(axesText(inputAxes(Shape::features(2, 10))) == "N, features");
    CHECK(axesText(inputAxes(Shape::of({ 2, 6, 5 }))) == "N, d1, d2");

    // Flatten merges; viewing back restores the names.
    const AxisNames flat = reshapedAxes(nchw, { 1, 128 });
    CHECK(axesText(flat) == "N, C·H·W");
    CHECK(axesText(reshapedAxes(flat, { 1, 8, 4, 4 })) == "N, C, H, W");
    CHECK(axesText(reshapedAxes(nchw, { 1, 8, 16 })) == "N, C, H·W");

    // ShuffleNet's channel shuffle: C viewed as 2 × 4, the two swapped, viewed back: the channels again.
    const AxisNames split = reshapedAxes(nchw, { 1, 2, 4, 4, 4 });
    CHECK(axesText(split) == "N, C₁, C₂, H, W");
    const AxisNames swapped = permutedAxes(split, { 0, 2, 1, 3, 4 });
    CHECK(axesText(swapped) == "N, C₂, C₁, H, W");
    CHECK(axesText(reshapedAxes(swapped, { 1, 8, 4, 4 })) == "N, C, H, W");

    // Size-1 axes: squeezed away, kept by a size-1 axis, or new (unsqueeze: unknown).
    const AxisNames pooled = image(1, 8, 1, 1);
    CHECK(axesText(reshapedAxes(pooled, { 1, 8 })) == "N, C");
    CHECK(axesText(reshapedAxes(nchw, { 1, 8, 1, 4, 4 })) == "N, C, d2, H, W");
    CHECK(axesText(reshapedAxes(image(1, 1, 28, 28), { 1, 784 })) == "N, H·W");

    // Dims that do not line up with the pieces: unknown from there on.
    CHECK(axesText(reshapedAxes(reshapedAxes(image(2, 3, 1, 1), { 2, 3 }), { 3, 2 })) == "d0, d1");
    CHECK(axesText(permutedAxes(nchw, { 0, 2, 3, 1 })) == "N, H, W, C");
    // A size that changed keeps the name as one whole axis of the new size.
    const AxisNames grown = fittedAxes(split, { 1, 2, 8, 4, 4 });
    CHECK(axesText(grown) == "N, C₁, C₂, H, W");
    CHECK(grown[2].pieces.size() == 1);
    CHECK(grown[2].size() == 8);

    CHECK(shapeWithAxes(Shape::of({ 1, 56, 56, 96 }), permutedAxes(image(1, 96, 56, 56), { 0, 2, 3, 1 }))
        == "1×56×56×96 (N, H, W, C)");
    CHECK(shapeWithAxes(Shape::of({ 2, 5, 6 }), unknownAxes({ 2, 5, 6 })) == "2×5×6");
}

TEST_CASE("axis names are derived through a network of convolutions, permutes, views and linear layers", "[gui][axes]")
{
    // A ConvNeXt-style block (channels last between two transposes), a channel shuffle, and a classifier head.
    const Network net = parseNetwork(R"({ "format": "convscope-network", "version": 1, "name": "axes",
  "input": { "batch": 1, "channels": 3, "height": 16, "width": 16, "source": "random:1" },
  "layers": [
    { "type": "conv2d", "name": "stem", "out_channels": 8, "kernel_size": 4, "stride": 4 },
    { "type": "transpose", "name": "to_nhwc", "dims": [0, 2, 3, 1] },
    { "type": "gelu", "name": "act" },
    { "type": "binary", "name": "scale", "op": "mul", "constant": [1, 2, 3, 4, 5, 6, 7, 8], "constant_shape": [8] },
    { "type": "transpose", "name": "to_nchw", "dims": [0, 3, 1, 2] },
    { "type": "reshape", "name": "groups", "shape": [1, 2, 4, 4, 4] },
    { "type": "transpose", "name": "swap", "dims": [0, 2, 1, 3, 4] },
    { "type": "reshape", "name": "shuffled", "shape": [1, 8, 4, 4] },
    { "type": "reshape", "name": "tokens", "shape": [1, 8, 16] },
    { "type": "transpose", "name": "tokens_last", "dims": [0, 2, 1] },
    { "type": "global_avgpool2d", "name": "gap", "inputs": ["shuffled"] },
    { "type": "flatten", "name": "flat" },
    { "type": "linear", "name": "fc", "out_features": 10 },
    { "type": "softmax", "name": "prob" },
    { "type": "flatten", "name": "all", "start_dim": 0 } ] })",
        "axes test", {});
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    const std::vector<AxisNames> axes = layerAxes(net, shapes);
    CHECK(textsOf(axes)
        == std::vector<std::string> { "N, C, H, W", "N, H, W, C", "N, H, W, C", "N, H, W, C", "N, C, H, W",
            "N, C₁, C₂, H, W", "N, C₂, C₁, H, W", "N, C, H, W", "N, C, H·W", "N, H·W, C", "N, C, H, W", "N, C",
            "N, features", "N, features", "features" });
    CHECK(shapeWithAxes(shapes.layers[1].out, axes[1]) == "1×4×4×8 (N, H, W, C)");

    // An invalid layer has no names; the layers after it that read it have unknown ones.
    Network broken = net;
    std::get<Reshape>(broken.layers[5].spec).shape = { 1, 3, 5, 4, 4 };
    const ShapeReport bad = inferShapes(broken);
    const std::vector<AxisNames> badAxes = layerAxes(broken, bad);
    CHECK(badAxes[5].empty());
    CHECK(axesText(badAxes[4]) == "N, C, H, W");
}

TEST_CASE("each rank gets its view: maps, permuted maps, a volume, sliced maps, a heat map, bars", "[gui][axes]")
{
    const AxisNames nchw = image(1, 8, 4, 4);
    OutputView v = chooseOutputView({ 1, 8, 4, 4 }, nchw);
    CHECK(v.form == OutputForm::FeatureMaps);
    CHECK((v.item == 0 && v.tiles == 1 && v.rows == 2 && v.cols == 3 && v.picked.empty()));
    CHECK(describeOutputView(v, { 1, 8, 4, 4 }, nchw).empty());

    const AxisNames nhwc = permutedAxes(nchw, { 0, 2, 3, 1 });
    v = chooseOutputView({ 1, 4, 4, 8 }, nhwc);
    CHECK(v.form == OutputForm::PermutedMaps);
    CHECK((v.item == 0 && v.tiles == 3 && v.rows == 1 && v.cols == 2));
    CHECK(describeOutputView(v, { 1, 4, 4, 8 }, nhwc)
        == "tiles C (axis 3) · rows H (axis 1) · columns W (axis 2) · item N (axis 0)");
    // N, W, H, C: rows are still H.
    v = chooseOutputView({ 1, 5, 4, 8 }, permutedAxes(image(1, 8, 4, 5), { 0, 3, 2, 1 }));
    CHECK((v.form == OutputForm::PermutedMaps && v.rows == 2 && v.cols == 1 && v.tiles == 3));

    // Rank 4 with unknown names: maps by position.
    v = chooseOutputView({ 2, 3, 4, 5 }, unknownAxes({ 2, 3, 4, 5 }));
    CHECK((v.form == OutputForm::FeatureMaps && v.item == 0 && v.tiles == 1));
    CHECK(describeOutputView(v, { 2, 3, 4, 5 }, unknownAxes({ 2, 3, 4, 5 }))
        == "tiles d1 (axis 1) · rows d2 (axis 2) · columns d3 (axis 3) · item d0 (axis 0)");

    // Rank 5 is a volume, whatever its names; the split channels are named in the description.
    const AxisNames split = reshapedAxes(nchw, { 1, 2, 4, 4, 4 });
    v = chooseOutputView({ 1, 2, 4, 4, 4 }, split);
    CHECK((v.form == OutputForm::Volume && v.tiles == 1 && v.depth == 2));
    CHECK(describeOutputView(v, { 1, 2, 4, 4, 4 }, split)
        == "channels C₁ (axis 1) · depth C₂ (axis 2) · rows H (axis 3) · columns W (axis 4) · item N (axis 0)");
    CHECK(describeOutputView(chooseOutputView({ 1, 2, 3, 4, 5 }, inputAxes(Shape::ncdhw(1, 2, 3, 4, 5))),
        { 1, 2, 3, 4, 5 }, inputAxes(Shape::ncdhw(1, 2, 3, 4, 5)))
              .empty());

    // Rank 6: tiles along axis 1, the last two axes, axes 2 and 3 picked.
    const std::vector<int64_t> six { 2, 3, 4, 5, 6, 7 };
    AxisNames sixNames = unknownAxes(six);
    sixNames[0] = AxisName::named("N", 2);
    v = chooseOutputView(six, sixNames);
    CHECK((v.form == OutputForm::SlicedMaps && v.item == 0 && v.tiles == 1 && v.rows == 4 && v.cols == 5));
    CHECK(v.picked == std::vector<int> { 2, 3 });

    // Rank 3: a heat map of the two axes that are not N; without N, axis 0 is picked.
    AxisNames tokens = unknownAxes({ 2, 5, 6 });
    tokens[0] = AxisName::named("N", 2);
    v = chooseOutputView({ 2, 5, 6 }, tokens);
    CHECK((v.form == OutputForm::HeatMap && v.item == 0 && v.rows == 1 && v.cols == 2 && v.picked.empty()));
    v = chooseOutputView({ 5, 2, 6 }, permutedAxes(tokens, { 1, 0, 2 }));
    CHECK((v.item == 1 && v.rows == 0 && v.cols == 2));
    v = chooseOutputView({ 2, 5, 6 }, unknownAxes({ 2, 5, 6 }));
    CHECK((v.item == -1 && v.rows == 1 && v.cols == 2 && v.picked == std::vector<int> { 0 }));
    // Rank 2: the whole batch; rank 1: bars.
    v = chooseOutputView({ 2, 10 }, inputAxes(Shape::features(2, 10)));
    CHECK((v.form == OutputForm::HeatMap && v.rows == 0 && v.cols == 1 && v.item == -1));
    CHECK(chooseOutputView({ 7 }, unknownAxes({ 7 })).form == OutputForm::Bars);
}

TEST_CASE("the cuts drawn: maps along any axes, heat maps downsampled by block means, bars", "[gui][axes]")
{
    // t[n, h, w, c] = 1000 n + 100 h + 10 w + c, an N×H×W×C tensor.
    Tensor t(Shape::of({ 2, 3, 4, 5 }));
    for (int64_t n = 0; n < 2; ++n)
        for (int64_t h = 0; h < 3; ++h)
            for (int64_t w = 0; w < 4; ++w)
                for (int64_t c = 0; c < 5; ++c)
                    t.data()[((n * 3 + h) * 4 + w) * 5 + c] = float(1000 * n + 100 * h + 10 * w + c);
    const OutputView v = chooseOutputView({ 2, 3, 4, 5 }, permutedAxes(image(2, 5, 3, 4), { 0, 2, 3, 1 }));
    const PlaneSet p = mapsOf(t, v, { 1, 0, 0, 0 });
    REQUIRE((p.channels == 5 && p.height == 3 && p.width == 4));
    CHECK(p.plane(2)[1 * 4 + 3] == 1000 + 100 + 30 + 2);
    const PlaneSet paged = mapsOf(t, v, { 0, 0, 0, 0 }, 3, 10);
    CHECK((paged.channels == 2 && paged.channelIds == std::vector<int> { 3, 4 }));
    CHECK(paged.plane(0)[0] == 3);

    // Canonical maps are planesOf's.
    Tensor img(Shape::nchw(2, 3, 4, 5));
    for (int64_t i = 0; i < img.numel(); ++i)
        img.data()[i] = float(i);
    CHECK(mapsOf(img, chooseOutputView({ 2, 3, 4, 5 }, image(2, 3, 4, 5)), { 1, 0, 0, 0 }).values
        == planesOf(img, 1).values);

    // A 5 × 7 heat map in blocks of at most 2 × 3 cells per side… of 3 rows and 3 columns.
    Tensor m(Shape::of({ 1, 5, 7 }));
    for (int64_t i = 0; i < 35; ++i)
        m.data()[i] = float(i);
    AxisNames names = unknownAxes({ 1, 5, 7 });
    names[0] = AxisName::named("N", 1);
    const OutputView hv = chooseOutputView({ 1, 5, 7 }, names);
    const HeatMapData full = heatMapOf(m, nullptr, hv, { 0, 0, 0 });
    CHECK((full.rows == 5 && full.cols == 7 && !full.downsampled() && full.at(4, 6) == 34));
    const HeatMapData small = heatMapOf(m, nullptr, hv, { 0, 0, 0 }, 3);
    REQUIRE((small.rows == 3 && small.cols == 3 && small.rowStep == 2 && small.colStep == 3));
    CHECK(small.at(0, 0) == Approx((0 + 1 + 2 + 7 + 8 + 9) / 6.0));
    CHECK(small.at(2, 2) == Approx(34)); // the last, partial block: one element
    m.data()[8] = std::numeric_limits<float>::quiet_NaN();
    CHECK(std::isnan(heatMapOf(m, nullptr, hv, { 0, 0, 0 }, 3).at(0, 0)));
    // |Δ| against a reference.
    Tensor r(Shape::of({ 1, 5, 7 }));
    r.fill(1.f);
    m.data()[8] = 8;
    const HeatMapData d = heatMapOf(m, &r, hv, { 0, 0, 0 });
    CHECK((d.difference && d.at(0, 0) == 1 && d.at(0, 3) == 2));

    Tensor b(Shape::of({ 4 }));
    for (int64_t i = 0; i < 4; ++i)
        b.data()[i] = float(i) - 1;
    CHECK(barsOf(b, nullptr) == std::vector<float> { -1, 0, 1, 2 });
    CHECK(barsOf(m, nullptr).empty());
}
