// The tensor-maths kinds of one input (gelu, softplus, mish, unary; issue 30): values against closed forms, the file's
// fields and their errors, shapes at every rank the engine has, and ONNX: the operators, the Erf form of GELU folded
// into one layer in both orders PyTorch and hand-written GELUs export, and export → import giving the same outputs.
#include "convscope_config.h"

#include "compute/binary.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/error.h"
#include "compute/layer_kinds.h"
#include "compute/network_json.h"
#include "compute/onnx_model.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>
#if CONVSCOPE_WITH_ONNX
#include <onnx/onnx_pb.h>
#endif

#include <cmath>

using namespace convscope;
using Catch::Matchers::Contains;
using convscope::test::randomTensor;

namespace {
float apply(const LayerSpec& spec, float x)
{
    Tensor in(Shape::features(1, 1)), out(Shape::features(1, 1));
    in.data()[0] = x;
    cpu::direct::activation(in, spec, out);
    return out.data()[0];
}

Tensor run(const Network& net, const Tensor& input, const char* selection = "cpu.direct")
{
    return test::onePassOutput(net, input, selection);
}

double relL2Of(const Tensor& a, const Tensor& b)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
        num += std::pow(double(a.data()[i]) - double(b.data()[i]), 2);
        den += std::pow(double(b.data()[i]), 2);
    }
    return std::sqrt(num / std::max(den, 1e-30));
}
} // namespace

TEST_CASE("gelu, softplus, mish and unary compute PyTorch's values", "[math]")
{
    CHECK(apply(GELU {}, 1.0f) == Approx(0.8413447460685429).epsilon(1e-7));
    CHECK(apply(GELU {}, -2.0f) == Approx(-0.04550026389635842).epsilon(1e-6));
    CHECK(apply(GELU { true }, 1.0f) == Approx(0.8411919906082768).epsilon(1e-7));
    CHECK(apply(Softplus {}, 0.0f) == Approx(std::log(2.0)).epsilon(1e-7));
    CHECK(apply(Softplus { 2.0, 3.0 }, 1.0f) == Approx(std::log1p(std::exp(2.0)) / 2).epsilon(1e-7));
    CHECK(apply(Softplus { 2.0, 3.0 }, 2.0f) == 2.0f); // β·x = 4 > threshold 3: x
    CHECK(apply(Mish {}, 1.0f) == Approx(0.8650983882673103).epsilon(1e-7));
    CHECK(apply(Unary { Unary::Op::Exp }, 1.0f) == Approx(std::exp(1.0)).epsilon(1e-7));
    CHECK(apply(Unary { Unary::Op::Log }, 2.0f) == Approx(std::log(2.0)).epsilon(1e-7));
    CHECK(std::isnan(apply(Unary { Unary::Op::Log }, -1.0f)));
    CHECK(std::isinf(apply(Unary { Unary::Op::Log }, 0.0f)));
    CHECK(apply(Unary { Unary::Op::Sqrt }, 9.0f) == 3.0f);
    CHECK(apply(Unary { Unary::Op::Reciprocal }, -4.0f) == -0.25f);
    CHECK(apply(Unary { Unary::Op::Neg }, 3.0f) == -3.0f);
    CHECK(apply(Unary { Unary::Op::Abs }, -3.0f) == 3.0f);
    CHECK(apply(Unary { Unary::Op::Erf }, 0.5f) == Approx(std::erf(0.5)).epsilon(1e-7));
}

TEST_CASE("tensor-maths kinds: file fields, errors and shapes", "[math]")
{
    const std::string head
        = R"({"format": "convscope-network", "version": 1, "input": {"batch": 2, "channels": 3, "height": 4, "width": 5}, "layers": [)";
    const Network net = parseNetwork(head + R"({"type": "gelu", "approximate": "tanh"},
        {"type": "softplus", "beta": 2, "threshold": 5}, {"type": "mish"}, {"type": "unary", "op": "erf"}]})",
        "t", ".");
    CHECK(std::get<GELU>(net.layers[0].spec).tanh_approximation);
    CHECK(std::get<Softplus>(net.layers[1].spec) == Softplus { 2.0, 5.0 });
    CHECK(std::get<Unary>(net.layers[3].spec).op == Unary::Op::Erf);
    const Network back = parseNetwork(serializeNetwork(net), "back", ".");
    for (size_t i = 0; i < net.layers.size(); ++i)
        CHECK(back.layers[i].spec == net.layers[i].spec);
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[3].out == Shape::nchw(2, 3, 4, 5));
    CHECK(shapes.layers[0].cost.flops > 0);
    CHECK_THROWS_WITH(parseNetwork(head + R"({"type": "unary", "op": "sin"}]})", "t", "."), Contains("\"op\""));
    CHECK_THROWS_WITH(parseNetwork(head + R"({"type": "unary"}]})", "t", "."), Contains("op"));
    CHECK_THROWS_WITH(
        parseNetwork(head + R"({"type": "gelu", "approximate": "fast"}]})", "t", "."), Contains("approximate"));
    CHECK_THROWS_WITH(parseNetwork(head + R"({"type": "softplus", "beta": 0}]})", "t", "."), Contains("beta"));
    // Flat inputs and volumes keep their shape.
    const Network flat = parseNetwork(
        R"({"format": "convscope-network", "version": 1, "input": {"batch": 3, "features": 7}, "layers": [{"type": "unary", "op": "abs"}]})",
        "flat", ".");
    CHECK(inferShapes(flat).layers[0].out == Shape::features(3, 7));
}

TEST_CASE("binary: NumPy broadcasting, constants from the file, errors naming both shapes", "[math][binary]")
{
    const Network net = parseNetwork(
        R"({"format": "convscope-network", "version": 1, "input": {"batch": 2, "channels": 3, "height": 4, "width": 5}, "layers": [
        {"type": "global_avgpool2d", "name": "g"},
        {"type": "binary", "op": "sub", "inputs": ["input", "g"], "name": "centred"},
        {"type": "binary", "op": "pow", "constant": 2, "name": "sq"},
        {"type": "binary", "op": "div", "constant": [1, 2, 4], "constant_shape": [3, 1, 1], "constant_first": true,
         "name": "d"}]})",
        "b", ".");
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[1].out == Shape::nchw(2, 3, 4, 5));
    CHECK(shapes.layers[3].out == Shape::nchw(2, 3, 4, 5));
    const Network back = parseNetwork(serializeNetwork(net), "back", ".");
    for (size_t i = 0; i < net.layers.size(); ++i)
        CHECK(back.layers[i].spec == net.layers[i].spec);
    // Values: (x − mean)² then [1, 2, 4][c] / that, against a loop here.
    const Tensor x = randomTensor(Shape::nchw(2, 3, 4, 5), 5);
    const Tensor y = run(net, x);
    const Tensor yFast = run(net, x, "cpu.im2col_gemm");
    double worst = 0;
    for (int64_t n = 0; n < 2; ++n)
        for (int64_t c = 0; c < 3; ++c) {
            double mean = 0;
            for (int64_t k = 0; k < 20; ++k)
                mean += x.data()[(n * 3 + c) * 20 + k];
            mean /= 20;
            for (int64_t k = 0; k < 20; ++k) {
                const double d = double(x.data()[(n * 3 + c) * 20 + k]) - double(float(mean));
                const double want = double(1 << c) / (d * d);
                worst = std::max(worst, std::abs(y.data()[(n * 3 + c) * 20 + k] - want) / std::abs(want));
            }
        }
    CHECK(worst < 1e-4);
    CHECK(relL2Of(yFast, y) < 1e-6);
    const ShapeReport bad = inferShapes(parseNetwork(
        R"({"format": "convscope-network", "version": 1, "input": {"batch": 2, "channels": 3, "height": 4, "width": 5}, "layers": [
        {"type": "binary", "op": "add", "constant": [1, 2], "constant_shape": [2, 1]}]})",
        "bad", "."));
    CHECK_THAT(bad.firstError(), Contains("[2, 3, 4, 5]") && Contains("[2, 1]") && Contains("do not broadcast"));
    CHECK_THROWS_WITH(
        parseNetwork(
            R"({"format": "convscope-network", "version": 1, "input": {"batch": 2, "features": 3}, "layers": [{"type": "binary", "op": "mod"}]})",
            "bad", "."),
        Contains("\"op\""));
}

#if CONVSCOPE_WITH_ONNX
namespace {
::onnx::ModelProto model(int opset)
{
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    auto* g = m.mutable_graph();
    g->set_name("math");
    auto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    for (int d : { 1, 2, 4, 5 })
        tt->mutable_shape()->add_dim()->set_dim_value(d);
    g->add_output()->set_name("y");
    return m;
}

void scalar(::onnx::GraphProto* g, const std::string& name, float v)
{
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_float_data(v);
}

// A Constant node holding one float (torch.onnx writes the GELU's 1 and 0.5 so).
void constant(::onnx::GraphProto* g, const std::string& name, float v)
{
    auto* n = g->add_node();
    n->set_op_type("Constant");
    n->add_output(name);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(::onnx::TensorProto::FLOAT);
    a->mutable_t()->add_float_data(v);
}

void node(::onnx::GraphProto* g, const std::string& op, std::vector<std::string> ins, const std::string& out)
{
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out + "_node");
    for (const auto& i : ins)
        n->add_input(i);
    n->add_output(out);
}

Network import(const ::onnx::ModelProto& m) { return importOnnxBytes(m.SerializeAsString(), "m.onnx", {}, 0); }
} // namespace

TEST_CASE("ONNX: the Erf form of GELU imports as one gelu layer", "[onnx][math]")
{
    const Tensor x = randomTensor(Shape::nchw(1, 2, 4, 5), 17);
    const Network reference = parseNetwork(
        R"({"format": "convscope-network", "version": 1, "input": {"batch": 1, "channels": 2, "height": 4, "width": 5}, "layers": [{"type": "gelu"}]})",
        "r", ".");
    const Tensor want = run(reference, x);
    SECTION("torch.onnx's order: Div, Erf, Add, Mul by x, Mul by 0.5")
    {
        ::onnx::ModelProto m = model(17);
        auto* g = m.mutable_graph();
        scalar(g, "sqrt2", 1.4142135f);
        node(g, "Div", { "x", "sqrt2" }, "d");
        node(g, "Erf", { "d" }, "e");
        constant(g, "one", 1.0f);
        node(g, "Add", { "e", "one" }, "a");
        node(g, "Mul", { "x", "a" }, "m");
        constant(g, "half", 0.5f);
        node(g, "Mul", { "m", "half" }, "y");
        const Network net = import(m);
        REQUIRE(net.layers.size() == 1);
        CHECK(std::get<GELU>(net.layers[0].spec) == GELU {});
        CHECK(relL2Of(run(net, x), want) < 1e-6);
    }
    SECTION("the half first: Mul(x, 0.5), Mul by 1/√2, Erf, Add, Mul")
    {
        ::onnx::ModelProto m = model(17);
        auto* g = m.mutable_graph();
        scalar(g, "half", 0.5f);
        scalar(g, "inv", 0.70710678f);
        scalar(g, "one", 1.0f);
        node(g, "Mul", { "half", "x" }, "h");
        node(g, "Mul", { "x", "inv" }, "d");
        node(g, "Erf", { "d" }, "e");
        node(g, "Add", { "one", "e" }, "a");
        node(g, "Mul", { "h", "a" }, "y");
        const Network net = import(m);
        REQUIRE(net.layers.size() == 1);
        CHECK(relL2Of(run(net, x), want) < 1e-6);
    }
    SECTION("a GELU whose constant is not the formula's is not folded: its nodes are layers of their own")
    {
        ::onnx::ModelProto m = model(17);
        auto* g = m.mutable_graph();
        scalar(g, "sqrt2", 1.4142135f);
        scalar(g, "one", 2.0f); // not the formula's 1
        scalar(g, "half", 0.5f);
        node(g, "Div", { "x", "sqrt2" }, "d");
        node(g, "Erf", { "d" }, "e");
        node(g, "Add", { "e", "one" }, "a");
        node(g, "Mul", { "x", "a" }, "m");
        node(g, "Mul", { "m", "half" }, "y");
        const Network net = import(m);
        CHECK(net.layers.size() == 5);
        for (const Layer& l : net.layers)
            CHECK_FALSE(std::holds_alternative<GELU>(l.spec));
    }
}

TEST_CASE(
    "ONNX: Gelu, Softplus, Mish and the unary operators import, and every kind exports and reads back", "[onnx][math]")
{
    const Tensor x = randomTensor(Shape::nchw(1, 2, 4, 5), 23);
    for (const char* op : { "Exp", "Neg", "Abs", "Erf", "Softplus" }) {
        INFO(op);
        ::onnx::ModelProto m = model(17);
        node(m.mutable_graph(), op, { "x" }, "y");
        const Network net = import(m);
        REQUIRE(net.layers.size() == 1);
        CHECK(layerKind(net.layers[0].spec).family == KindFamily::Activation);
    }
    ::onnx::ModelProto gelu = model(20);
    node(gelu.mutable_graph(), "Gelu", { "x" }, "y");
    auto* a = gelu.mutable_graph()->mutable_node(0)->add_attribute();
    a->set_name("approximate");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s("tanh");
    CHECK(std::get<GELU>(import(gelu).layers[0].spec).tanh_approximation);
    ::onnx::ModelProto mish = model(18);
    node(mish.mutable_graph(), "Mish", { "x" }, "y");
    CHECK(std::holds_alternative<Mish>(import(mish).layers[0].spec));

    // Export writes opset 17's operators; reading back gives the same outputs (gelu none through the fold, softplus,
    // mish and the unary ops as operators of their own).
    const Network net = parseNetwork(
        R"({"format": "convscope-network", "version": 1, "input": {"batch": 1, "channels": 2, "height": 4, "width": 5}, "layers": [
        {"type": "gelu", "name": "g"}, {"type": "softplus", "name": "s"}, {"type": "mish", "name": "m"},
        {"type": "unary", "op": "abs", "name": "u1"}, {"type": "unary", "op": "sqrt", "name": "u2"},
        {"type": "unary", "op": "erf", "name": "u3"}, {"type": "unary", "op": "neg", "name": "u4"},
        {"type": "unary", "op": "exp", "name": "u5"}, {"type": "unary", "op": "reciprocal", "name": "u6"},
        {"type": "unary", "op": "log", "name": "u7"}]})",
        "net", ".");
    const Network back = importOnnxBytes(exportOnnxBytes(net), "back.onnx", {}, 0);
    CHECK(std::holds_alternative<GELU>(back.layers[0].spec));
    CHECK(relL2Of(run(back, x), run(net, x)) < 1e-6);
}

TEST_CASE("ONNX: Sub, Div, Pow, Min, Max and broadcasting Add and Mul import as binary layers", "[onnx][math]")
{
    const Tensor x = randomTensor(Shape::nchw(1, 2, 4, 5), 29);
    ::onnx::ModelProto m = model(17);
    auto* g = m.mutable_graph();
    auto* c = g->add_initializer(); // a per-channel [2, 1, 1] scale
    c->set_name("scale");
    c->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : { 2, 1, 1 })
        c->add_dims(d);
    c->add_float_data(2.0f);
    c->add_float_data(-3.0f);
    scalar(g, "two", 2.0f);
    node(g, "Mul", { "x", "scale" }, "a"); // not the mul kind: a constant operand
    node(g, "Sub", { "two", "a" }, "b"); // the constant first
    node(g, "Max", { "b", "x" }, "c");
    node(g, "Add", { "c", "x" }, "y"); // two activations of one shape: the add kind
    const Network net = import(m);
    REQUIRE(net.layers.size() == 4);
    const auto& mul = std::get<Binary>(net.layers[0].spec);
    CHECK(mul.op == Binary::Op::Mul);
    CHECK(mul.constant_shape == std::vector<int64_t> { 2, 1, 1 });
    CHECK(std::get<Binary>(net.layers[1].spec).constant_first);
    CHECK(std::get<Binary>(net.layers[2].spec).op == Binary::Op::Max);
    CHECK(std::holds_alternative<Add>(net.layers[3].spec));
    const Tensor y = run(net, x);
    for (int64_t k = 0; k < x.numel(); ++k) {
        const double v = x.data()[k], s = k < 20 ? 2.0 : -3.0;
        const double b = 2.0 - double(float(v * s));
        CHECK(y.data()[k] == Approx(std::max(b, v) + v).epsilon(1e-6));
    }
    const Network back = importOnnxBytes(exportOnnxBytes(net), "back.onnx", {}, 0);
    CHECK(relL2Of(run(back, x), y) < 1e-7);
}
#endif
