// ONNX Resize and Upsample into the resize kind, built here with the generated classes: scales and sizes as
// initializers, sizes computed from Shape → Slice → Concat (torchvision's FCN writes that), the older operators'
// rules, the opset-18 axes, and each refusal naming the node; and the way back (export, then import, same output).
#include "convscope_config.h"

#if CONVSCOPE_WITH_ONNX

#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/onnx_model.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/compute/onnx_test_graph.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

using namespace convscope;
using namespace convscope::test;
using Catch::Matchers::Contains;

namespace {

// x [1, 2, 4, 5] (or [1, 2, 3, 4, 5]) → one node of `op`.
::onnx::ModelProto model(int opset, bool volume = false)
{
    return oneInputModel(
        "resize", opset, volume ? std::vector<int64_t> { 1, 2, 3, 4, 5 } : std::vector<int64_t> { 1, 2, 4, 5 });
}

void floats(::onnx::GraphProto* g, const std::string& name, std::vector<float> v)
{
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_dims(int64_t(v.size()));
    for (float f : v)
        t->add_float_data(f);
}

const Resize& resizeOf(const Network& net)
{
    REQUIRE(net.layers.size() == 1);
    return std::get<Resize>(net.layers[0].spec);
}

Tensor output(const Network& net, const Tensor& input) { return onePassOutput(net, input); }

} // namespace

TEST_CASE("ONNX Resize imports with its attributes, by scales or by sizes", "[onnx][resize]")
{
    SECTION("scales, cubic with its parameters")
    {
        ::onnx::ModelProto m = model(13);
        floats(m.mutable_graph(), "scales", { 1, 1, 2, 0.6f });
        auto* n = node(m.mutable_graph(), "Resize", "up", { "x", "", "scales" }, "y");
        text(n, "mode", "cubic");
        text(n, "coordinate_transformation_mode", "align_corners");
        integer(n, "exclude_outside", 1);
        const Network net = import(m);
        const Resize& r = resizeOf(net);
        CHECK(r.mode == Resize::Mode::Cubic);
        CHECK(r.coordinate_transformation_mode == Resize::Coordinates::AlignCorners);
        CHECK(r.exclude_outside);
        CHECK(r.cubic_coeff_a == -0.75);
        CHECK(r.scale_factor == std::vector<double> { 2.0, double(0.6f) });
        CHECK(inferShapes(net).layers[0].out == Shape::nchw(1, 2, 8, 3));
    }
    SECTION("sizes from Shape → Slice → Concat, as torchvision's segmentation models write them")
    {
        ::onnx::ModelProto m = model(13);
        auto* g = m.mutable_graph();
        int64s(g, "starts", { 0 });
        int64s(g, "ends", { 2 });
        int64s(g, "hw", { 7, 9 });
        node(g, "Shape", "shape", { "x" }, "s");
        node(g, "Slice", "slice", { "s", "starts", "ends" }, "nc");
        integer(node(g, "Concat", "cat", { "nc", "hw" }, "sizes"), "axis", 0);
        auto* n = node(g, "Resize", "up", { "x", "", "", "sizes" }, "y");
        text(n, "mode", "linear");
        const Network net = import(m);
        const Resize& r = resizeOf(net);
        CHECK(r.mode == Resize::Mode::Linear);
        CHECK(r.coordinate_transformation_mode == Resize::Coordinates::HalfPixel); // ONNX's default
        CHECK(r.size == std::vector<int64_t> { 7, 9 });
        CHECK(r.scale_factor.empty());
    }
    SECTION("opset 18's axes and keep_aspect_ratio_policy")
    {
        ::onnx::ModelProto m = model(18);
        int64s(m.mutable_graph(), "sizes", { 8, 8 });
        auto* n = node(m.mutable_graph(), "Resize", "up", { "x", "", "", "sizes" }, "y");
        auto* axes = n->add_attribute();
        axes->set_name("axes");
        axes->set_type(::onnx::AttributeProto::INTS);
        axes->add_ints(2);
        axes->add_ints(-1);
        text(n, "keep_aspect_ratio_policy", "not_larger");
        const Resize r = resizeOf(import(m));
        CHECK(r.size == std::vector<int64_t> { 6, 8 }); // scale min(8/4, 8/5) = 1.6: 4 → 6.4 → 6, 5 → 8
        CHECK(r.scale_factor == std::vector<double> { 1.6, 1.6 });
    }
    SECTION("a volume")
    {
        ::onnx::ModelProto m = model(19, true);
        floats(m.mutable_graph(), "scales", { 1, 1, 2, 1, 0.5f });
        text(node(m.mutable_graph(), "Resize", "up", { "x", "", "scales" }, "y"), "coordinate_transformation_mode",
            "half_pixel_symmetric");
        const Network net = import(m);
        CHECK(resizeOf(net).coordinate_transformation_mode == Resize::Coordinates::HalfPixelSymmetric);
        CHECK(inferShapes(net).layers[0].out == Shape::ncdhw(1, 2, 6, 4, 2));
    }
}

TEST_CASE("ONNX Upsample and Resize-10 read as asymmetric nearest or linear", "[onnx][resize]")
{
    ::onnx::ModelProto m = model(9);
    floats(m.mutable_graph(), "scales", { 1, 1, 2, 3 });
    text(node(m.mutable_graph(), "Upsample", "up", { "x", "scales" }, "y"), "mode", "linear");
    Resize r = resizeOf(import(m));
    CHECK(r.mode == Resize::Mode::Linear);
    CHECK(r.coordinate_transformation_mode == Resize::Coordinates::Asymmetric);
    CHECK(r.scale_factor == std::vector<double> { 2, 3 });

    ::onnx::ModelProto seven = model(7);
    auto* n = node(seven.mutable_graph(), "Upsample", "up", { "x" }, "y");
    auto* scales = n->add_attribute();
    scales->set_name("scales");
    scales->set_type(::onnx::AttributeProto::FLOATS);
    for (float s : { 1.0f, 1.0f, 2.0f, 2.0f })
        scales->add_floats(s);
    r = resizeOf(import(seven));
    CHECK(r.mode == Resize::Mode::Nearest);
    CHECK(r.nearest_mode == Resize::NearestMode::Floor);

    ::onnx::ModelProto ten = model(10);
    floats(ten.mutable_graph(), "scales", { 1, 1, 0.5f, 0.5f });
    node(ten.mutable_graph(), "Resize", "down", { "x", "scales" }, "y");
    r = resizeOf(import(ten));
    CHECK(r.nearest_mode == Resize::NearestMode::Ceil); // onnxruntime's rule when downsampling
}

TEST_CASE("ONNX Resize that the kind cannot express is refused naming the node", "[onnx][resize]")
{
    const auto refused
        = [](int opset, std::vector<float> scales, const char* attr, const char* value, const std::string& words) {
              ::onnx::ModelProto m = model(opset);
              floats(m.mutable_graph(), "scales", std::move(scales));
              auto* n = node(m.mutable_graph(), "Resize", "rs", { "x", "", "scales" }, "y");
              if (attr)
                  text(n, attr, value);
              CHECK_THROWS_WITH(import(m), Contains("\"rs\", Resize") && Contains(words));
          };
    refused(13, { 1, 2, 2, 2 }, nullptr, nullptr, "scale 1 on N and C");
    refused(13, { 1, 1, 2, 2 }, "coordinate_transformation_mode", "tf_crop_and_resize", "tf_crop_and_resize");
    refused(13, { 1, 1, 2 }, nullptr, nullptr, "do not match the rank-4 input");
    refused(13, { 1, 1, 2, 2 }, "mode", "area", "mode \"area\"");
    refused(13, { 1, 1, 0, 2 }, nullptr, nullptr, "must be positive");
    // W 5 × 0.5 = 2.5: ONNX's reference and onnxruntime disagree on align_corners there.
    refused(13, { 1, 1, 2, 0.5f }, "coordinate_transformation_mode", "align_corners", "is not whole");

    ::onnx::ModelProto m = model(18);
    floats(m.mutable_graph(), "scales", { 1, 1, 0.5f, 0.5f });
    auto* n = node(m.mutable_graph(), "Resize", "rs", { "x", "", "scales" }, "y");
    text(n, "mode", "linear");
    integer(n, "antialias", 1);
    CHECK_THROWS_WITH(import(m), Contains("antialias"));

    ::onnx::ModelProto both = model(13);
    floats(both.mutable_graph(), "scales", { 1, 1, 2, 2 });
    int64s(both.mutable_graph(), "sizes", { 1, 2, 8, 10 });
    node(both.mutable_graph(), "Resize", "rs", { "x", "", "scales", "sizes" }, "y");
    CHECK_THROWS_WITH(import(both), Contains("both scales and sizes"));
}

TEST_CASE("resize exports as ONNX Resize and reads back to the same output", "[onnx][resize][export]")
{
    const char* layers[] = {
        R"({"type": "resize", "name": "r", "scale_factor": [2, 1.5], "mode": "bilinear",
            "coordinate_transformation_mode": "align_corners"})",
        R"({"type": "resize", "name": "r", "size": [3, 11], "mode": "cubic", "cubic_coeff_a": -0.5,
            "exclude_outside": true, "coordinate_transformation_mode": "half_pixel"})",
        R"({"type": "resize", "name": "r", "scale_factor": 3, "mode": "nearest", "nearest_mode": "round_prefer_ceil",
            "coordinate_transformation_mode": "half_pixel"})",
        R"({"type": "resize", "name": "r", "size": [4, 6], "coordinate_transformation_mode": "half_pixel_symmetric"})",
    };
    for (const char* layer : layers) {
        INFO(layer);
        const Network net = parseNetwork(std::string(R"({"format": "convscope-network", "version": 1, "name": "t",
            "input": {"batch": 2, "channels": 3, "height": 5, "width": 7, "source": "random"}, "layers": [)")
                + layer + "]}",
            "t.json", "/base");
        const Tensor input = test::randomTensor(net.input.shape(), 5);
        const Network back = importOnnxBytes(exportOnnxBytes(net), "exported", {}, net.input.batch);
        REQUIRE(back.layers.size() == 1);
        const Tensor a = output(net, input), b = output(back, input);
        REQUIRE(a.shape() == b.shape());
        const ErrorMetrics e = compare(b, a);
        CHECK(e.relL2 <= 1e-7);
    }
    const Network tf = parseNetwork(R"({"format": "convscope-network", "version": 1, "name": "t", "input": {"batch": 1,
        "channels": 1, "height": 4, "width": 4, "source": "random"}, "layers": [{"type": "resize", "name": "r",
        "coordinate_transformation_mode": "tf_half_pixel_for_nn"}]})",
        "t.json", "/base");
    CHECK_THROWS_WITH(exportOnnxBytes(tf), Contains("layer 0 (r)") && Contains("tf_half_pixel_for_nn"));
}

#endif
