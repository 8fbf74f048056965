// The resize kind (layer_spec.h's Resize): its shape rule and formula, the file's fields (PyTorch's mode names read
// too) and their round trip, the bad inputs each named, and the CPU op on values worked out by hand from ONNX's
// definition and PyTorch's F.interpolate (ONNX's own tests run in tests/onnx, the other backends in tests/backends).
#include "compute/cpu/cpu_ops.h"
#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/resize.h"
#include "compute/shape_inference.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace convscope;
using Catch::Matchers::Contains;

namespace {

Network parse(const std::string& input, const std::string& layer)
{
    return parseNetwork(R"({"format": "convscope-network", "version": 1, "name": "t", "input": {)" + input
            + R"(, "source": "random"}, "layers": [)" + layer + "]}",
        "r.json", "/base");
}

LayerShape shapeOf(const std::string& input, const std::string& layer)
{
    return inferShapes(parse(input, layer)).layers.at(0);
}

const char* kImage = R"("batch": 2, "channels": 3, "height": 5, "width": 7)";

// One plane [1, 1, h, w] of `values` through the direct and the fast op; both must agree exactly.
std::vector<float> run(const Resize& l, int64_t h, int64_t w, const std::vector<float>& values)
{
    Tensor in(Shape::nchw(1, 1, h, w));
    std::copy(values.begin(), values.end(), in.data());
    const LayerShape s = inferLayer(l, in.shape());
    REQUIRE(s.ok);
    Tensor out(s.out), fast(s.out);
    cpu::direct::resize(in, resizePlan(l, s), out);
    cpu::fast::resize(in, resizePlan(l, s), fast);
    std::vector<float> v(out.data(), out.data() + out.numel());
    CHECK(std::vector<float>(fast.data(), fast.data() + fast.numel()) == v);
    return v;
}

Resize make(Resize::Mode m, Resize::Coordinates c, std::vector<int64_t> size, std::vector<double> scale = {})
{
    Resize l;
    l.mode = m;
    l.coordinate_transformation_mode = c;
    l.size = std::move(size);
    l.scale_factor = std::move(scale);
    return l;
}

void checkClose(const std::vector<float>& got, const std::vector<float>& want)
{
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k)
        CHECK(got[k] == Approx(want[k]).margin(1e-6));
}

} // namespace

TEST_CASE("resize: the output size from scale_factor (floor) or size, with its formula, images and volumes", "[resize]")
{
    LayerShape r = shapeOf(kImage, R"({"type": "resize"})"); // PyTorch's default here: nearest ×2
    REQUIRE(r.ok);
    CHECK(r.out == Shape::nchw(2, 3, 10, 14));
    CHECK_THAT(r.formula, Contains("H_out = ⌊5 · 2⌋ = 10") && Contains("nearest (floor), asymmetric"));
    r = shapeOf(kImage, R"({"type": "resize", "scale_factor": [0.5, 1.5], "mode": "bilinear"})");
    CHECK(r.out == Shape::nchw(2, 3, 2, 10));
    r = shapeOf(kImage, R"({"type": "resize", "size": [9, 4], "mode": "cubic"})");
    CHECK(r.out == Shape::nchw(2, 3, 9, 4));
    CHECK(r.cost.flops == 2.0 * 16 * 2 * 3 * 9 * 4);
    r = shapeOf(R"("batch": 1, "channels": 2, "depth": 3, "height": 4, "width": 5)",
        R"({"type": "resize", "size": 6, "mode": "trilinear"})");
    CHECK(r.out == Shape::ncdhw(1, 2, 6, 6, 6));
    r = shapeOf(R"("batch": 1, "channels": 2, "depth": 3, "height": 4, "width": 5)",
        R"({"type": "resize", "scale_factor": [1, 2, 0.5]})");
    CHECK(r.out == Shape::ncdhw(1, 2, 3, 8, 2));
}

TEST_CASE("resize: bad sizes and fields are errors with the numbers", "[resize]")
{
    CHECK_THAT(shapeOf(kImage, R"({"type": "resize", "scale_factor": 0.1})").error,
        Contains("resize of H 5 by 0.1 gives H_out = 0") && Contains("empty"));
    CHECK_THAT(shapeOf(kImage, R"({"type": "resize", "size": [2, 3, 4]})").error,
        Contains("size has 3 values, but its input has 2 spatial axes"));
    CHECK_THAT(shapeOf(kImage, R"({"type": "resize", "scale_factor": 1e30})").error, Contains("2^63"));
    CHECK_THAT(shapeOf(kImage, R"({"type": "resize", "size": [3037000500, 3037000500]})").error, Contains("overflow"));
    CHECK_THAT(shapeOf(R"("batch": 2, "features": 6)", R"({"type": "resize"})").error,
        Contains("resize needs an image") && Contains("[2, 6]"));
    CHECK_THROWS_WITH(parse(kImage, R"({"type": "resize", "scale_factor": -2})"), Contains("must be positive"));
    CHECK_THROWS_WITH(parse(kImage, R"({"type": "resize", "size": 0})"), Contains("size"));
    CHECK_THROWS_WITH(parse(kImage, R"({"type": "resize", "mode": "area"})"), Contains("\"mode\" must be"));
    CHECK_THROWS_WITH(parse(kImage, R"({"type": "resize", "coordinate_transformation_mode": "tf_crop_and_resize"})"),
        Contains("\"coordinate_transformation_mode\" must be"));
    CHECK_THROWS_WITH(
        parse(kImage, R"({"type": "resize", "nearest_mode": "round"})"), Contains("\"nearest_mode\" must be"));
    CHECK_THROWS_WITH(parse(kImage, R"({"type": "resize", "antialias": true})"), Contains("antialias"));
}

TEST_CASE("resize: the file round-trips every field", "[resize]")
{
    const Network net = parse(kImage,
        R"({"type": "resize", "name": "a", "size": [6, 9], "mode": "bicubic", "coordinate_transformation_mode":
        "align_corners", "cubic_coeff_a": -0.5, "exclude_outside": true},
        {"type": "resize", "name": "b", "scale_factor": [0.5, 1.25], "mode": "nearest", "nearest_mode":
        "round_prefer_ceil", "coordinate_transformation_mode": "half_pixel_symmetric"})");
    const Resize& a = std::get<Resize>(net.layers[0].spec);
    CHECK(a.mode == Resize::Mode::Cubic);
    CHECK(a.scale_factor.empty());
    CHECK(a.size == std::vector<int64_t> { 6, 9 });
    const Network again = parseNetwork(serializeNetwork(net), "again.json", "/base");
    CHECK(again.sameDescription(net));
    CHECK(std::get<Resize>(again.layers[1].spec) == std::get<Resize>(net.layers[1].spec));
    CHECK(layerSummary(net.layers[0].spec) == "resize →6×9 cubic");
}

TEST_CASE("resize: the CPU op on values worked out by hand", "[resize]")
{
    using C = Resize::Coordinates;
    using M = Resize::Mode;
    const std::vector<float> x = { 1, 2, 3, 4 }; // [[1, 2], [3, 4]]
    // ONNX's test_resize_upsample_scales_linear: half_pixel ×2.
    checkClose(run(make(M::Linear, C::HalfPixel, {}, { 2 }), 2, 2, x),
        { 1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4 });
    // align_corners ×2 (F.interpolate(..., align_corners=True)): the corners kept, thirds between.
    checkClose(run(make(M::Linear, C::AlignCorners, { 4, 4 }), 2, 2, x),
        { 1, 4 / 3.f, 5 / 3.f, 2, 5 / 3.f, 2, 7 / 3.f, 8 / 3.f, 7 / 3.f, 8 / 3.f, 3, 10 / 3.f, 3, 10 / 3.f, 11 / 3.f,
            4 });
    // PyTorch's nearest (asymmetric, floor) ×[1, 3]: each column three times.
    checkClose(run(make(M::Nearest, C::Asymmetric, {}, { 1, 3 }), 2, 2, x), { 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4 });
    // nearest-exact down 4 → 2 along W: (x + 0.5) · 2 − 0.5 = 0.5, 2.5 → round half up: columns 1 and 3.
    Resize exact = make(M::Nearest, C::HalfPixel, { 1, 2 });
    exact.nearest_mode = Resize::NearestMode::RoundPreferCeil;
    checkClose(run(exact, 1, 4, { 10, 11, 12, 13 }), { 11, 13 });
    exact.nearest_mode = Resize::NearestMode::RoundPreferFloor;
    checkClose(run(exact, 1, 4, { 10, 11, 12, 13 }), { 10, 12 });
    // Cubic at an integer coordinate reads the pixel itself; A = −0.75, half_pixel, ×2 of a ramp keeps its middle.
    const std::vector<float> ramp = run(make(M::Cubic, C::Asymmetric, { 1, 8 }), 1, 4, { 0, 1, 2, 3 });
    CHECK(ramp[0] == 0);
    CHECK(ramp[2] == 1);
    CHECK(ramp[4] == 2);
    CHECK(ramp[3] == Approx(1.5));
    // exclude_outside: the taps outside the input get no weight, the others are renormalised (a constant stays).
    Resize excl = make(M::Cubic, C::HalfPixel, { 1, 7 });
    excl.exclude_outside = true;
    excl.cubic_coeff_a = -0.5;
    checkClose(run(excl, 1, 3, { 5, 5, 5 }), std::vector<float>(7, 5));
}

TEST_CASE("resize: the fast path's rows of 16 outputs equal the direct op on every mode", "[resize]")
{
    using C = Resize::Coordinates;
    using M = Resize::Mode;
    struct Size {
        int64_t h, w, oh, ow;
    };
    // Upsampling (taps within a window of 32 inputs), widths not a multiple of 16, downsampling by 5 (gathered),
    // the identity, and one input column.
    const Size sizes[] = { { 7, 37, 15, 80 }, { 9, 100, 5, 21 }, { 3, 50, 3, 50 }, { 4, 1, 6, 19 }, { 5, 33, 11, 66 } };
    std::vector<float> values(9 * 100);
    for (size_t k = 0; k < values.size(); ++k)
        values[k] = float((k * 7919) % 1013) / 101.0f - 5.0f;
    for (const M m : { M::Nearest, M::Linear, M::Cubic })
        for (const C c : { C::HalfPixel, C::AlignCorners, C::Asymmetric, C::PytorchHalfPixel })
            for (const Size& s : sizes) {
                INFO("mode " << int(m) << ", coordinates " << int(c) << ", " << s.h << "×" << s.w << " → " << s.oh
                             << "×" << s.ow);
                const std::vector<float> in(values.begin(), values.begin() + s.h * s.w);
                run(make(m, c, { s.oh, s.ow }), s.h, s.w, in); // run() checks fast == direct
            }
}
