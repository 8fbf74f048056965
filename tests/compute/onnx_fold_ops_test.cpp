// The shape and mask arithmetic exports write (issue 30): the folder's comparisons, Where, Expand, Range, Tile, Split
// and the maths of constants against hand-computed values; Shape and Size of an activation; Split and Expand of an
// activation as slice and binary layers that run; and the bad input of those operators (and of Reshape and Resize)
// as an InputError naming the node and the numbers.
#include "convscope_config.h"

#if CONVSCOPE_WITH_ONNX

#include "compute/error.h"
#include "compute/memory_budget.h"
#include "compute/onnx/onnx_fold.h"
#include "compute/onnx_model.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/compute/onnx_test_graph.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

using namespace convscope;
using namespace convscope::test;
using Catch::Matchers::Contains;
using convscope::onnx::ConstTensor;

namespace {

ConstTensor ints(std::vector<int64_t> v, std::vector<int64_t> dims = {})
{
    ConstTensor t;
    t.isFloat = false;
    t.dims = dims.empty() ? std::vector<int64_t> { int64_t(v.size()) } : dims;
    t.i = std::move(v);
    return t;
}

ConstTensor floats(std::vector<float> v, std::vector<int64_t> dims = {})
{
    ConstTensor t;
    t.dims = dims.empty() ? std::vector<int64_t> { int64_t(v.size()) } : dims;
    t.f = std::move(v);
    return t;
}

void setInt(::onnx::NodeProto& n, const std::string& name, int64_t v)
{
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
}

void setInts(::onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v)
{
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v)
        a->add_ints(x);
}

// foldNode on a node of `op` with `outputs` outputs.
std::vector<ConstTensor> fold(const std::string& op, const std::vector<ConstTensor>& in, int64_t opset = 17,
    int outputs = 1, const std::function<void(::onnx::NodeProto&)>& attrs = {})
{
    ::onnx::NodeProto n;
    n.set_op_type(op);
    n.set_name("n");
    for (size_t k = 0; k < in.size(); ++k)
        n.add_input("i" + std::to_string(k));
    for (int k = 0; k < outputs; ++k)
        n.add_output("o" + std::to_string(k));
    if (attrs)
        attrs(n);
    std::vector<const ConstTensor*> ptrs;
    for (const ConstTensor& t : in)
        ptrs.push_back(&t);
    return convscope::onnx::foldNode(n, ptrs, convscope::onnx::Attributes(n, "node 0 (\"n\", " + op + ")"), opset, {});
}

::onnx::ModelProto model(int opset, std::vector<int64_t> dims = { 2, 6, 4, 5 })
{
    return oneInputModel("ops", opset, dims);
}

// Runs the network on cpu.direct with a reference, so the last layer's output is checked against the reference
// backend's (the relative error is 0 for layers that only move data).
void runs(const Network& net)
{
    ProfileOptions options;
    options.warmup = 0;
    options.repeat = 1;
    options.selections = { { "cpu", "direct" }, { "cpu", "im2col_gemm" } };
    const RunResult run = profile(net, options);
    for (const SelectionResult& sr : run.selections) {
        INFO(sr.selection.str() << ": " << sr.failure);
        REQUIRE(sr.ok);
    }
}

} // namespace

TEST_CASE("the folder computes the shape and mask arithmetic of exports", "[onnx][fold]")
{
    // Comparisons and logic give 0/1 integers; Where picks by them, with NumPy broadcasting.
    CHECK(fold("Equal", { ints({ 1, 2, 3 }), ints({ 2 }) })[0].i == std::vector<int64_t> { 0, 1, 0 });
    CHECK(fold("Less", { floats({ 1, 2, 3 }), ints({ 2 }) })[0].i == std::vector<int64_t> { 1, 0, 0 });
    CHECK(fold("GreaterOrEqual", { ints({ 1, 2, 3 }), ints({ 2 }) })[0].i == std::vector<int64_t> { 0, 1, 1 });
    CHECK(fold("Not", { ints({ 0, 1 }) })[0].i == std::vector<int64_t> { 1, 0 });
    CHECK(fold("Or", { ints({ 0, 1, 0 }), ints({ 0, 0, 1 }) })[0].i == std::vector<int64_t> { 0, 1, 1 });
    const ConstTensor w = fold("Where", { ints({ 1, 0 }, { 2, 1 }), ints({ -1, -2, -3 }), ints({ 7 }) })[0];
    CHECK(w.dims == std::vector<int64_t> { 2, 3 });
    CHECK(w.i == std::vector<int64_t> { -1, -2, -3, 7, 7, 7 });
    // Expand broadcasts both ways; Tile repeats; Range counts ceil((limit − start) / delta).
    const ConstTensor e = fold("Expand", { ints({ 4, 5 }, { 2, 1 }), ints({ 1, 3 }) })[0];
    CHECK(e.dims == std::vector<int64_t> { 2, 3 });
    CHECK(e.i == std::vector<int64_t> { 4, 4, 4, 5, 5, 5 });
    const ConstTensor t = fold("Tile", { ints({ 1, 2 }, { 1, 2 }), ints({ 2, 2 }) })[0];
    CHECK(t.dims == std::vector<int64_t> { 2, 4 });
    CHECK(t.i == std::vector<int64_t> { 1, 2, 1, 2, 1, 2, 1, 2 });
    CHECK(fold("Range", { ints({ 10 }, { 1 }), ints({ 1 }, { 1 }), ints({ -4 }, { 1 }) })[0].i
        == std::vector<int64_t> { 10, 6, 2 });
    CHECK(fold("Range", { floats({ 0 }), floats({ 1 }), floats({ 0.25f }) })[0].f
        == std::vector<float> { 0, 0.25f, 0.5f, 0.75f });
    // Min and Max of any count; the maths of constants, integers kept integers where ONNX does.
    CHECK(fold("Max", { ints({ 1, 9 }), ints({ 5 }), ints({ 3, 2 }) })[0].i == std::vector<int64_t> { 5, 9 });
    CHECK(fold("Floor", { floats({ -1.5f, 2.5f }) })[0].f == std::vector<float> { -2, 2 });
    CHECK(fold("Ceil", { floats({ -1.5f, 2.5f }) })[0].f == std::vector<float> { -1, 3 });
    CHECK(fold("Round", { floats({ 0.5f, 1.5f, -2.5f }) })[0].f == std::vector<float> { 0, 2, -2 });
    CHECK(fold("Sqrt", { floats({ 4, 9 }) })[0].f == std::vector<float> { 2, 3 });
    CHECK(fold("Pow", { ints({ 2, -3 }), ints({ 3 }) })[0].i == std::vector<int64_t> { 8, -27 });
    CHECK(fold("Mod", { ints({ -7, 7 }), ints({ 3 }) })[0].i == std::vector<int64_t> { 2, 1 }); // Python's sign
    CHECK(fold("Neg", { ints({ 3 }) })[0].i == std::vector<int64_t> { -3 });
    // Integer arithmetic on negative numbers (PyTorch writes -1 · ones for a view's free dims), overflow refused.
    CHECK(fold("Mul", { ints({ 1, 1 }), ints({ -1 }) })[0].i == std::vector<int64_t> { -1, -1 });
    CHECK(fold("Sub", { ints({ -1 }), ints({ 2 }) })[0].i == std::vector<int64_t> { -3 });
    CHECK_THROWS_WITH(fold("Mul", { ints({ int64_t(1) << 62 }), ints({ -4 }) }), Contains("overflows 64 bits"));
    // Shape (start, end) and Size of a constant; Cast to bool.
    CHECK(
        fold("Shape", { ints({ 0, 0, 0, 0, 0, 0 }, { 1, 2, 3 }) }, 17, 1, [](auto& n) { setInt(n, "start", -2); })[0].i
        == std::vector<int64_t> { 2, 3 });
    const ConstTensor size = fold("Size", { ints({ 0, 0, 0, 0, 0, 0 }, { 1, 2, 3 }) })[0];
    CHECK((size.dims.empty() && size.i == std::vector<int64_t> { 6 }));
    CHECK(fold("Cast", { floats({ 0, 0.5f }) }, 17, 1, [](auto& n) { setInt(n, "to", 9); })[0].i
        == std::vector<int64_t> { 0, 1 });
    // Split: equal parts, the split input (13+) or attribute (before 13), num_outputs (18: the last part smaller).
    const auto parts = [](const std::vector<ConstTensor>& v) {
        std::vector<std::vector<int64_t>> p;
        for (const ConstTensor& c : v)
            p.push_back(c.i);
        return p;
    };
    const ConstTensor five = ints({ 0, 1, 2, 3, 4 });
    CHECK(parts(fold("Split", { five, ints({ 2, 3 }) }, 13, 2))
        == std::vector<std::vector<int64_t>> { { 0, 1 }, { 2, 3, 4 } });
    CHECK(parts(fold("Split", { five }, 11, 2, [](auto& n) {
        setInts(n, "split", { 4, 1 });
    })) == std::vector<std::vector<int64_t>> { { 0, 1, 2, 3 }, { 4 } });
    CHECK(parts(fold("Split", { five }, 18, 2, [](auto& n) { setInt(n, "num_outputs", 2); }))
        == std::vector<std::vector<int64_t>> { { 0, 1, 2 }, { 3, 4 } });
    CHECK_THROWS_WITH(fold("Split", { five }, 13, 2), Contains("5") && Contains("2 equal parts"));
    CHECK_THROWS_WITH(fold("Split", { five, ints({ 2, 2 }) }, 13, 2),
        Contains("node 0 (\"n\", Split)") && Contains("[2, 2] (sum 4") && Contains("size 5"));
    // ScatterND (Swin's mask is built by slice assignment): rows 0 and 2 of a 3×2 replaced, then added to.
    const ConstTensor sc = fold("ScatterND",
        { ints({ 0, 0, 0, 0, 0, 0 }, { 3, 2 }), ints({ 2, 0 }, { 2, 1 }), ints({ 1, 2, 3, 4 }, { 2, 2 }) })[0];
    CHECK(sc.i == std::vector<int64_t> { 3, 4, 0, 0, 1, 2 });
    // Bad input is an InputError naming the numbers.
    CHECK_THROWS_WITH(fold("Expand", { ints({ 1, 2 }), ints({ 3 }) }), Contains("cannot broadcast [2] with [3]"));
    CHECK_THROWS_WITH(fold("Range", { ints({ 0 }), ints({ 5 }), ints({ 0 }) }), Contains("delta 0"));
    CHECK_THROWS_WITH(fold("Tile", { ints({ 1 }), ints({ int64_t(1) << 40 }) }), Contains("too large to fold"));
    CHECK_THROWS_WITH(fold("Pow", { ints({ 10 }), ints({ 40 }) }), Contains("overflows"));
}

TEST_CASE("ONNX Shape and Size of an activation fold; Split and Expand of an activation import and run", "[onnx][fold]")
{
    // x [2, 6, 4, 5] → Split on the channels into 1, 2, 3 (the last unused) → the first two concatenated; the count
    // of elements and the shape's tail computed from x fold into the Reshape's target.
    ::onnx::ModelProto m = model(13);
    auto* g = m.mutable_graph();
    int64s(g, "sizes", { 1, 2, 3 });
    setInt(*node(g, "Split", "split", { "x", "sizes" }, { "a", "b", "c" }), "axis", 1);
    auto* cat = node(g, "Concat", "cat", { "a", "b" }, { "ab" });
    setInt(*cat, "axis", 1);
    node(g, "Size", "size", { "ab" }, { "count" });
    node(g, "Shape", "shape", { "ab" }, { "dims" });
    int64s(g, "zero", { 0 });
    node(g, "Gather", "batch", { "dims", "zero" }, { "n" });
    node(g, "Div", "per", { "count", "n" }, { "rest" });
    auto* target = node(g, "Concat", "target", { "n", "rest" }, { "flat" });
    setInt(*target, "axis", 0);
    node(g, "Reshape", "view", { "ab", "flat" }, { "y" });
    Network net = import(m);
    REQUIRE(net.layers.size() == 4);
    CHECK(net.layers[0].spec == LayerSpec(Slice { 1, 0, 1 }));
    CHECK(net.layers[1].spec == LayerSpec(Slice { 1, 1, 3 }));
    ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[3].out.dims() == std::vector<int64_t> { 2, 60 });
    runs(net);

    // Expand of [2, 6, 4, 5] to [3, 1, 1, 1, 1]: [3, 2, 6, 4, 5], a mul by ones of [3, 1, 1, 1, 1].
    ::onnx::ModelProto x = model(13);
    int64s(x.mutable_graph(), "to", { 3, 1, 1, 1, 1 });
    node(x.mutable_graph(), "Expand", "grow", { "x", "to" }, { "y" });
    net = import(x);
    REQUIRE(net.layers.size() == 1);
    const auto& b = std::get<Binary>(net.layers[0].spec);
    CHECK(b.op == Binary::Op::Mul);
    CHECK(b.constant_shape == std::vector<int64_t> { 3, 1, 1, 1, 1 });
    shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[0].out.dims() == std::vector<int64_t> { 3, 2, 6, 4, 5 });
    runs(net);
}

TEST_CASE("a constant input of an ONNX Concat (ViT's class token) becomes layers from an activation input, exactly",
    "[onnx][fold]")
{
    // token [1, 1, 4] ++ x [1, 3, 4] on axis 1: slice, pow 0, mul by the token, concat.
    ::onnx::ModelProto m = model(13, { 1, 3, 4 });
    auto* g = m.mutable_graph();
    auto* token = g->add_initializer();
    token->set_name("token");
    token->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : { 1, 1, 4 })
        token->add_dims(d);
    for (float v : { 0.5f, -1.0f, 2.0f, 0.0f })
        token->add_float_data(v);
    setInt(*node(g, "Concat", "cat", { "token", "x" }, { "y" }), "axis", 1);
    const Network net = import(m);
    REQUIRE(net.layers.size() == 4);
    CHECK(net.layers[0].spec == LayerSpec(Slice { 1, 0, 1 }));
    CHECK(std::get<Binary>(net.layers[1].spec).op == Binary::Op::Pow);
    CHECK(std::get<Binary>(net.layers[2].spec).constant == std::vector<float> { 0.5f, -1.0f, 2.0f, 0.0f });
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[3].out.dims() == std::vector<int64_t> { 1, 4, 4 });
    ProfileOptions options;
    options.warmup = 0;
    options.repeat = 1;
    options.keepOutputs = true;
    options.reference.reset();
    options.selections = { { "cpu", "direct" } };
    Tensor x(Shape::of({ 1, 3, 4 }));
    for (int64_t k = 0; k < x.numel(); ++k)
        x.data()[k] = float(k) - 5.0f;
    x.data()[2] = std::numeric_limits<float>::infinity(); // pow(∞, 0) is 1 too
    const RunResult run = profile(net, x, options);
    REQUIRE(run.selections.at(0).ok);
    const Tensor& y = *run.selections[0].layers.back().output;
    const std::vector<float> want
        = { 0.5f, -1, 2, 0, -5, -4, std::numeric_limits<float>::infinity(), -2, -1, 0, 1, 2, 3, 4, 5, 6 };
    CHECK(std::vector<float>(y.data(), y.data() + y.numel()) == want);
}

TEST_CASE("ONNX Pad of axes other than H and W (Swin pads [N, H, W, C]) is concats of constant blocks, exactly",
    "[onnx][fold]")
{
    // x [1, 2, 3] padded by 1 before axis 1 and 2 after axis 2 with 7.
    ::onnx::ModelProto m = model(13, { 1, 2, 3 });
    auto* g = m.mutable_graph();
    int64s(g, "pads", { 0, 1, 0, 0, 0, 2 });
    auto* value = g->add_initializer();
    value->set_name("v");
    value->set_data_type(::onnx::TensorProto::FLOAT);
    value->add_float_data(7.0f);
    node(g, "Pad", "pad", { "x", "pads", "v" }, { "y" });
    const Network net = import(m);
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers.back().out.dims() == std::vector<int64_t> { 1, 3, 5 });
    CHECK(net.layers.back().name == "pad");
    ProfileOptions options;
    options.warmup = 0;
    options.repeat = 1;
    options.keepOutputs = true;
    options.reference.reset();
    options.selections = { { "cpu", "direct" } };
    Tensor x(Shape::of({ 1, 2, 3 }));
    for (int64_t k = 0; k < x.numel(); ++k)
        x.data()[k] = float(k + 1);
    const RunResult run = profile(net, x, options);
    REQUIRE(run.selections.at(0).ok);
    const Tensor& y = *run.selections[0].layers.back().output;
    CHECK(std::vector<float>(y.data(), y.data() + y.numel())
        == std::vector<float> { 7, 7, 7, 7, 7, 1, 2, 3, 7, 7, 4, 5, 6, 7, 7 });
}

TEST_CASE("ONNX Max, Min, Sum and Mean of more than two inputs, constants among them, are chains of binary layers",
    "[onnx][fold]")
{
    // Max(c1, c2, x) with the activation last; Mean(x, x, c) divides by 3.
    ::onnx::ModelProto m = model(13, { 1, 4 });
    auto* g = m.mutable_graph();
    for (const auto& [name, v] : { std::pair<const char*, float> { "c1", -1.0f }, { "c2", 2.0f }, { "c3", 6.0f } }) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(::onnx::TensorProto::FLOAT);
        t->add_dims(1);
        t->add_float_data(v);
    }
    node(g, "Max", "max", { "c1", "c2", "x" }, { "m" });
    node(g, "Mean", "mean", { "m", "m", "c3" }, { "y" });
    const Network net = import(m);
    REQUIRE(net.layers.size() == 5);
    CHECK(net.layers[4].name == "mean/2");
    ProfileOptions options;
    options.warmup = 0;
    options.repeat = 1;
    options.keepOutputs = true;
    options.reference.reset();
    options.selections = { { "cpu", "direct" } };
    Tensor x(Shape::of({ 1, 4 }));
    for (int64_t k = 0; k < 4; ++k)
        x.data()[k] = float(k); // 0 1 2 3 → max with -1 and 2: 2 2 2 3 → (2m + 6) / 3
    const RunResult run = profile(net, x, options);
    REQUIRE(run.selections.at(0).ok);
    const Tensor& y = *run.selections[0].layers.back().output;
    CHECK(std::vector<float>(y.data(), y.data() + 4) == std::vector<float> { 10.0f / 3, 10.0f / 3, 10.0f / 3, 4 });
}

TEST_CASE("bad Reshape, Transpose, Split, Expand and Resize nodes are InputErrors naming the node and numbers",
    "[onnx][fold]")
{
    const auto refused = [](::onnx::ModelProto m, const std::string& who, const std::string& words) {
        try {
            import(m);
            FAIL("imported");
        } catch (const InputError& e) {
            CHECK_THAT(std::string(e.what()), Contains(who) && Contains(words));
        }
    };
    ::onnx::ModelProto r = model(13);
    int64s(r.mutable_graph(), "to", { 2, 7, 20 });
    node(r.mutable_graph(), "Reshape", "bad", { "x", "to" }, { "y" });
    refused(r, "(\"bad\", Reshape)", "Reshape of [2, 6, 4, 5] to [2, 7, 20]");

    ::onnx::ModelProto t = model(13);
    setInts(*node(t.mutable_graph(), "Transpose", "bad", { "x" }, { "y" }), "perm", { 0, 1, 1, 3 });
    refused(t, "(\"bad\", Transpose)", "axis 1 twice");

    ::onnx::ModelProto s = model(13);
    int64s(s.mutable_graph(), "sizes", { 2, 2 });
    setInt(*node(s.mutable_graph(), "Split", "bad", { "x", "sizes" }, { "y", "z" }), "axis", 1);
    refused(s, "(\"bad\", Split)", "[2, 2] (sum 4, 2 parts) for axis 1 of size 6");

    ::onnx::ModelProto e = model(13);
    int64s(e.mutable_graph(), "to", { 3, 4, 5 });
    node(e.mutable_graph(), "Expand", "bad", { "x", "to" }, { "y" });
    refused(e, "(\"bad\", Expand)", "Expand of [2, 6, 4, 5] to [3, 4, 5]: dimension 1 is 6 and the shape asks 3");

    // Resize to nothing, and to more than the memory budget holds.
    for (const auto& [sizes, words] :
        { std::pair<std::vector<int64_t>, std::string> { { 2, 6, 0, 5 }, "size along H must be at least 1, got 0" },
            { { 2, 6, 400000, 400000 }, "memory budget" } }) {
        INFO(words);
        setHostMemoryBudget(int64_t(1) << 32);
        ::onnx::ModelProto z = model(13);
        int64s(z.mutable_graph(), "sizes", sizes);
        node(z.mutable_graph(), "Resize", "bad", { "x", "", "", "sizes" }, { "y" });
        refused(z, "(\"bad\", Resize)", words);
        setHostMemoryBudget(0);
    }
}

TEST_CASE("every ONNX model the fuzz preset crashed the importer with is an InputError", "[onnx][fuzz]")
{
    // tests/data/fuzz/onnx: a Reshape target whose element product overflows, a Reshape without its shape input, a
    // ConstantOfShape of gigabytes, a node named like a Pad's second layer ("p/axis0"). The fuzz build replays them
    // too; here the release build's reader does.
    setHostMemoryBudget(int64_t(256) << 20);
    int cases = 0;
    for (const auto& entry : std::filesystem::directory_iterator(test::dataDir() / "fuzz" / "onnx")) {
        INFO(entry.path().string());
        std::ifstream f(entry.path(), std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        try { // an InputError, or a network every layer of which has a shape
            const Network net = importOnnxBytes(bytes, "fuzz.onnx", "/nonexistent-convscope-fuzz", 0);
            CHECK(inferShapes(net).ok());
        } catch (const InputError&) {
        }
        ++cases;
    }
    setHostMemoryBudget(0);
    CHECK(cases >= 4);
}

#endif
