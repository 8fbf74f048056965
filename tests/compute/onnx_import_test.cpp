// The ONNX reader on models built here with the generated classes: a small network imports with its weights and
// names, and each kind of bad input is an InputError with words naming the problem (never a crash or a hang).
#include "convscope_config.h"

#if CONVSCOPE_WITH_ONNX

#include "compute/error.h"
#include "compute/memory_budget.h"
#include "compute/onnx/onnx_graph.h"
#include "compute/onnx/onnx_import.h"
#include "compute/onnx_model.h"
#include "compute/profiler.h"
#include "compute/shape_inference.h"
#include "tests/compute/onnx_test_graph.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <limits>

using namespace convscope;
using Catch::Matchers::Contains;

namespace {

::onnx::ModelProto baseModel()
{
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    auto* g = m.mutable_graph();
    g->set_name("tiny");
    auto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("batch");
    for (int d : { 2, 5, 5 })
        tt->mutable_shape()->add_dim()->set_dim_value(d);
    g->add_output()->set_name("y");
    return m;
}

::onnx::TensorProto* addWeight(::onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims)
{
    return test::floatInitializer(g, name, dims, [](int64_t k) { return float(k % 7) * 0.1f; });
}

::onnx::NodeProto* addNode(::onnx::GraphProto* g, const std::string& op, const std::string& name,
    std::vector<std::string> ins, const std::string& out)
{
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : ins)
        n->add_input(i);
    n->add_output(out);
    return n;
}

// conv (3 filters 3x3, pads 1) → relu → global average pool.
::onnx::ModelProto convModel()
{
    ::onnx::ModelProto m = baseModel();
    auto* g = m.mutable_graph();
    addWeight(g, "w", { 3, 2, 3, 3 });
    addWeight(g, "b", { 3 });
    auto* conv = addNode(g, "Conv", "conv_a", { "x", "w", "b" }, "c");
    auto* pads = conv->add_attribute();
    pads->set_name("pads");
    pads->set_type(::onnx::AttributeProto::INTS);
    for (int k = 0; k < 4; ++k)
        pads->add_ints(1);
    addNode(g, "Relu", "", { "c" }, "r");
    addNode(g, "GlobalAveragePool", "gap", { "r" }, "y");
    return m;
}

Network import(const ::onnx::ModelProto& m, const std::filesystem::path& dir = {}, int64_t batch = 0)
{
    return importOnnxBytes(m.SerializeAsString(), "model.onnx", dir, batch);
}

void expectError(const ::onnx::ModelProto& m, const std::string& words, const std::filesystem::path& dir = {})
{
    CHECK_THROWS_WITH(import(m, dir), Contains(words));
}

} // namespace

TEST_CASE("an ONNX model imports with node names, weights and a batch for its symbolic dimension", "[onnx]")
{
    Network net = import(convModel(), {}, 4);
    REQUIRE(net.layers.size() == 3);
    CHECK(net.layers[0].name == "conv_a");
    CHECK(net.layers[1].name == "relu1");
    CHECK(net.layers[2].name == "gap");
    CHECK(net.input.batch == 4);
    CHECK(net.layers[0].init.kind == "embedded");
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[0].out == Shape::nchw(4, 3, 5, 5));
    CHECK(shapes.layers[2].out == Shape::nchw(4, 3, 1, 1));
    REQUIRE(net.layers[0].embedded->weight);
    CHECK(net.layers[0].embedded->weight->data()[1] == Approx(0.1f));
}

TEST_CASE("ONNX PRelu, Clip with any bounds and GlobalMaxPool import as prelu, hardtanh, relu6 and maxpool2d", "[onnx]")
{
    // x [batch, 2, 5, 5] → PRelu (slope [1, 2, 1, 1]: one per channel) → Clip(-0.5, none) → Clip(0, 6) →
    // GlobalMaxPool.
    ::onnx::ModelProto m = baseModel();
    auto* g = m.mutable_graph();
    addWeight(g, "slope", { 1, 2, 1, 1 })->set_float_data(1, -0.5f);
    addWeight(g, "lo", {})->set_float_data(0, -0.5f);
    addWeight(g, "zero", {});
    addWeight(g, "six", {})->set_float_data(0, 6.0f);
    addNode(g, "PRelu", "pr", { "x", "slope" }, "p");
    addNode(g, "Clip", "clip", { "p", "lo" }, "c");
    addNode(g, "Clip", "clip6", { "c", "zero", "six" }, "c6");
    addNode(g, "GlobalMaxPool", "gmp", { "c6" }, "y");
    Network net = import(m, {}, 3);
    REQUIRE(net.layers.size() == 4);
    REQUIRE(std::holds_alternative<PReLU>(net.layers[0].spec));
    CHECK(std::get<PReLU>(net.layers[0].spec).num_parameters == 2);
    CHECK(net.layers[0].init.kind == "embedded");
    REQUIRE(net.layers[0].embedded->weight);
    CHECK(net.layers[0].embedded->weight->shape() == Shape::nchw(2, 1, 1, 1));
    CHECK(net.layers[0].embedded->weight->data()[1] == -0.5f);
    REQUIRE(std::holds_alternative<Hardtanh>(net.layers[1].spec));
    CHECK(std::get<Hardtanh>(net.layers[1].spec).min_val == -0.5);
    CHECK(std::get<Hardtanh>(net.layers[1].spec).max_val == double(std::numeric_limits<float>::max()));
    CHECK(std::holds_alternative<ReLU6>(net.layers[2].spec));
    REQUIRE(std::holds_alternative<MaxPool2d>(net.layers[3].spec));
    CHECK(std::get<MaxPool2d>(net.layers[3].spec).kernel_size == Pair { 5, 5 });
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[3].out == Shape::nchw(3, 2, 1, 1));

    // A slope that would broadcast along W instead of the channels, and Clip with min above max, are refused.
    ::onnx::ModelProto w = baseModel();
    addWeight(w.mutable_graph(), "slope", { 5 });
    addNode(w.mutable_graph(), "PRelu", "pr", { "x", "slope" }, "y");
    expectError(w, "one per channel");
    ::onnx::ModelProto c = baseModel();
    addWeight(c.mutable_graph(), "lo", {})->set_float_data(0, 2.0f);
    addWeight(c.mutable_graph(), "hi", {})->set_float_data(0, 1.0f);
    addNode(c.mutable_graph(), "Clip", "clip", { "x", "lo", "hi" }, "y");
    expectError(c, "needs min below max");
}

TEST_CASE("an ONNX Concat of one input imports as a concat of one input (DenseNet-121 has them) and runs", "[onnx]")
{
    ::onnx::ModelProto m = baseModel();
    auto* g = m.mutable_graph();
    addNode(g, "Relu", "r", { "x" }, "r");
    auto* axis = addNode(g, "Concat", "cat", { "r" }, "c")->add_attribute();
    axis->set_name("axis");
    axis->set_type(::onnx::AttributeProto::INT);
    axis->set_i(1);
    addNode(g, "Sigmoid", "s", { "c" }, "y");
    Network net = import(m, {}, 2);
    REQUIRE(net.layers.size() == 3);
    CHECK(net.layers[1].name == "cat");
    CHECK(net.layers[1].spec == LayerSpec(Concat { 1 }));
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[2].out == Shape::nchw(2, 2, 5, 5));
    ProfileOptions options;
    options.warmup = 0;
    options.repeat = 1;
    options.selections = { { "cpu", "direct" }, { "cpu", "im2col_gemm" } };
    const RunResult run = profile(net, options);
    for (const SelectionResult& sr : run.selections) {
        INFO(sr.selection.str() << ": " << sr.failure);
        REQUIRE(sr.ok);
        CHECK(sr.layers[2].error.valid);
        CHECK(sr.layers[2].error.relL2 <= 1e-6);
    }
}

TEST_CASE("an ONNX model older than opset 6 goes through ONNX's version converter", "[onnx]")
{
    for (int64_t opset : { 1, 5 }) {
        INFO("opset " << opset);
        ::onnx::ModelProto m = convModel();
        m.mutable_opset_import(0)->set_version(opset);
        Network net = import(m, {}, 1);
        REQUIRE(net.layers.size() == 3);
        CHECK(std::holds_alternative<Conv2d>(net.layers[0].spec));
        CHECK(inferShapes(net).ok());
    }
    // IR version 2 and no opset named: opset 1 (and, as IR versions before 4 require, the weights are graph inputs).
    ::onnx::ModelProto old = convModel();
    old.clear_opset_import();
    old.set_ir_version(2);
    for (const char* w : { "w", "b" }) {
        auto* in = old.mutable_graph()->add_input();
        in->set_name(w);
        in->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
    }
    CHECK(import(old, {}, 1).layers.size() == 3);
    // What the converter cannot bring forward is an InputError saying so, never a crash.
    ::onnx::ModelProto later = baseModel();
    later.mutable_opset_import(0)->set_version(3);
    addNode(later.mutable_graph(), "HardSwish", "hs", { "x" }, "y"); // HardSwish is opset 14's
    CHECK_THROWS_AS(import(later), InputError);
}

TEST_CASE("the ONNX operator table: one list of what converts, the opsets of each in the messages", "[onnx]")
{
    const std::vector<std::string> ops = convscope::onnx::convertedOperators();
    CHECK(std::is_sorted(ops.begin(), ops.end()));
    CHECK(std::adjacent_find(ops.begin(), ops.end()) == ops.end());
    const std::string list = convscope::onnx::supportedOperators();
    for (const std::string& op : ops)
        CHECK_THAT(list, Contains(op));
    CHECK_THAT(
        list, Contains("folded when their inputs are constant: Abs, Add, And, Cast, Ceil, Clip, Concat, Constant"));
    CHECK_THAT(list,
        Contains("MatMul, Max, Min, Mod, Mul, Neg, Not, Or, Pow, Range, Reciprocal, Relu, Reshape, Round, ScatterND, "
                 "Shape, Sigmoid, "
                 "Sign, Size, Slice, Split"));
    // An operator the table has, in an opset outside its rows, names the opsets it is read in.
    ::onnx::ModelProto m = baseModel();
    m.mutable_opset_import(0)->set_version(13);
    addNode(m.mutable_graph(), "HardSwish", "hs", { "x" }, "y");
    expectError(m, "HardSwish in opset 13 (ConvScope reads it in opsets 14 to 21)");
}

TEST_CASE("ONNX ConvTranspose output_shape past the natural size is output_padding; pool padding beyond half the "
          "kernel is a pad layer",
    "[onnx]")
{
    // x [batch, 2, 5, 5] → ConvTranspose (3 filters 3×3, stride 2) to output_shape [12, 11]: natural 11 × 11, so H
    // gets one row of output_padding (ONNX's negative end padding).
    ::onnx::ModelProto m = baseModel();
    auto* g = m.mutable_graph();
    addWeight(g, "w", { 2, 3, 3, 3 });
    auto* t = addNode(g, "ConvTranspose", "up", { "x", "w" }, "y");
    for (const auto& [key, values] :
        { std::pair<const char*, std::vector<int64_t>> { "strides", { 2, 2 } }, { "output_shape", { 12, 11 } } }) {
        auto* at = t->add_attribute();
        at->set_name(key);
        at->set_type(::onnx::AttributeProto::INTS);
        for (int64_t v : values)
            at->add_ints(v);
    }
    Network net = import(m, {}, 1);
    CHECK(std::get<ConvTranspose2d>(net.layers.at(0).spec).output_padding == Pair { 1, 0 });
    CHECK(inferShapes(net).layers[0].out == Shape::nchw(1, 3, 12, 11));

    // MaxPool 3×3 with pads 2 (PyTorch allows 1): replicate pad, then an unpadded pool.
    ::onnx::ModelProto p = baseModel();
    auto* pool = addNode(p.mutable_graph(), "MaxPool", "mp", { "x" }, "y");
    for (const auto& [key, values] :
        { std::pair<const char*, std::vector<int64_t>> { "kernel_shape", { 3, 3 } }, { "pads", { 2, 2, 2, 2 } } }) {
        auto* at = pool->add_attribute();
        at->set_name(key);
        at->set_type(::onnx::AttributeProto::INTS);
        for (int64_t v : values)
            at->add_ints(v);
    }
    net = import(p, {}, 1);
    REQUIRE(net.layers.size() == 2);
    CHECK(std::get<Pad>(net.layers[0].spec).mode == Pad::Mode::Replicate);
    CHECK(std::get<MaxPool2d>(net.layers[1].spec).padding == Padding2d {});
    CHECK(inferShapes(net).layers[1].out == Shape::nchw(1, 2, 7, 7));
}

TEST_CASE("bad ONNX input is an InputError naming the problem", "[onnx]")
{
    const std::string good = convModel().SerializeAsString();
    SECTION("truncated and random protobuf")
    {
        for (size_t cut : { size_t(1), size_t(7), good.size() / 2, good.size() - 1 })
            CHECK_THROWS_AS(importOnnxBytes(good.substr(0, cut), "model.onnx", {}, 0), InputError);
        uint64_t s = 12345;
        for (int k = 0; k < 200; ++k) {
            std::string bytes(64 + k, '\0');
            for (char& c : bytes) {
                s = s * 6364136223846793005ULL + 1442695040888963407ULL;
                c = char(s >> 56);
            }
            CHECK_THROWS_AS(importOnnxBytes(bytes, "model.onnx", {}, 0), InputError);
        }
    }
    SECTION("a cycle")
    {
        ::onnx::ModelProto m = baseModel();
        addNode(m.mutable_graph(), "Relu", "a", { "z" }, "y");
        addNode(m.mutable_graph(), "Relu", "b", { "y" }, "z");
        expectError(m, "node 0 (\"a\", Relu): reads tensor \"z\", which no graph input");
    }
    SECTION("a node reading an undefined tensor")
    {
        ::onnx::ModelProto m = baseModel();
        addNode(m.mutable_graph(), "Relu", "r", { "nowhere" }, "y");
        expectError(m, "reads tensor \"nowhere\"");
    }
    SECTION("an operator ConvScope has no layer for lists what it takes")
    {
        ::onnx::ModelProto m = baseModel();
        addNode(m.mutable_graph(), "Sin", "e", { "x" }, "y");
        expectError(
            m, "node 0 (\"e\", Sin): the operator Sin is not one ConvScope has a layer for. ConvScope takes Abs, Add");
    }
    SECTION("dims that overflow")
    {
        ::onnx::ModelProto m = convModel();
        auto* w = m.mutable_graph()->mutable_initializer(0);
        w->clear_dims();
        for (int k = 0; k < 4; ++k)
            w->add_dims(int64_t(1) << 20);
        expectError(m, "initializer \"w\"");
    }
    SECTION("an initializer shorter than its shape")
    {
        ::onnx::ModelProto m = convModel();
        m.mutable_graph()->mutable_initializer(0)->mutable_float_data()->RemoveLast();
        expectError(m, "needs 54 values but the tensor has 53");
        auto* w = m.mutable_graph()->mutable_initializer(0);
        w->clear_float_data();
        w->set_raw_data(std::string(100, '\0'));
        expectError(m, "needs 216 bytes but the data has 100");
    }
    SECTION("external data outside the model's folder")
    {
        test::TempDir dir;
        std::filesystem::create_directories(dir.path / "model");
        std::ofstream(dir.path / "secret.bin", std::ios::binary) << std::string(216, 'x');
        ::onnx::ModelProto m = convModel();
        auto* w = m.mutable_graph()->mutable_initializer(0);
        w->clear_float_data();
        w->set_data_location(::onnx::TensorProto::EXTERNAL);
        auto* kv = w->add_external_data();
        kv->set_key("location");
        kv->set_value("../secret.bin");
        expectError(m, "outside the model's folder", dir.path / "model");
        kv->set_value((dir.path / "secret.bin").string());
        expectError(m, "outside the model's folder", dir.path / "model");
    }
    SECTION("an initializer that claims 10 GB is refused by the memory budget")
    {
        setHostMemoryBudget(int64_t(1) << 30);
        ::onnx::ModelProto m = convModel();
        auto* w = m.mutable_graph()->mutable_initializer(0);
        w->clear_dims();
        w->add_dims(int64_t(2500) * 1000 * 1000);
        CHECK_THROWS_WITH(import(m), Contains("memory budget"));
        setHostMemoryBudget(0);
    }
}

#endif

namespace {
::onnx::TensorProto* addInts(::onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& v)
{
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_dims(int64_t(v.size()));
    for (int64_t x : v)
        t->add_int64_data(x);
    return t;
}
void addPerm(::onnx::NodeProto* n, const std::vector<int64_t>& perm)
{
    auto* a = n->add_attribute();
    a->set_name("perm");
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t p : perm)
        a->add_ints(p);
}
} // namespace

TEST_CASE("ONNX Slice and PyTorch's channel shuffle (Reshape, Transpose, Reshape) import as slice and channel_shuffle",
    "[onnx]")
{
    // ShuffleNet V2's block, as torchvision exports it: x.chunk(2, dim=1) as two Slices, cat, channel_shuffle(2).
    ::onnx::ModelProto m = baseModel();
    auto* g = m.mutable_graph();
    addInts(g, "zero", { 0 });
    addInts(g, "one", { 1 });
    addInts(g, "big", { std::numeric_limits<int64_t>::max() });
    addInts(g, "axis1", { 1 });
    addInts(g, "grouped", { 0, 2, 1, 5, 5 });
    addInts(g, "back", { 0, 2, 5, 5 });
    addNode(g, "Slice", "first", { "x", "zero", "one", "axis1" }, "a");
    addNode(g, "Slice", "second", { "x", "one", "big", "axis1" }, "b");
    addNode(g, "Relu", "r", { "b" }, "rb");
    auto* cat = addNode(g, "Concat", "cat", { "a", "rb" }, "c")->add_attribute();
    cat->set_name("axis");
    cat->set_type(::onnx::AttributeProto::INT);
    cat->set_i(1);
    addNode(g, "Reshape", "view", { "c", "grouped" }, "v");
    addPerm(addNode(g, "Transpose", "swap", { "v" }, "t"), { 0, 2, 1, 3, 4 });
    addNode(g, "Reshape", "shuffle", { "t", "back" }, "y");
    Network net = import(m, {}, 2);
    REQUIRE(net.layers.size() == 5);
    CHECK(net.layers[0].spec == LayerSpec(Slice { 1, 0, 1 }));
    CHECK(net.layers[1].spec == LayerSpec(Slice { 1, 1, 2 }));
    CHECK(net.layers[4].name == "shuffle");
    CHECK(net.layers[4].spec == LayerSpec(ChannelShuffle { 2 }));
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[4].out == Shape::nchw(2, 2, 5, 5));

    // A Transpose that is not a channel shuffle's is a transpose layer; one with a repeated axis is refused, naming it.
    ::onnx::ModelProto t = baseModel();
    addPerm(addNode(t.mutable_graph(), "Transpose", "nhwc", { "x" }, "y"), { 0, 2, 3, 1 });
    const Network nhwc = import(t, {}, 2);
    REQUIRE(nhwc.layers.size() == 1);
    CHECK(nhwc.layers[0].spec == LayerSpec(Transpose { { 0, 2, 3, 1 } }));
    ::onnx::ModelProto twice = baseModel();
    addPerm(addNode(twice.mutable_graph(), "Transpose", "bad", { "x" }, "y"), { 0, 2, 2, 1 });
    expectError(twice, "name axis 2 twice");
    // A Slice with a step other than 1 is a gather of start, start + step, … (onnx_einsum_test.cpp has more).
    ::onnx::ModelProto s = baseModel();
    auto* sg = s.mutable_graph();
    addInts(sg, "zero", { 0 });
    addInts(sg, "four", { 4 });
    addInts(sg, "axis2", { 2 });
    addInts(sg, "two", { 2 });
    addNode(sg, "Slice", "strided", { "x", "zero", "four", "axis2", "two" }, "y");
    const Network strided = import(s, {}, 2);
    REQUIRE(strided.layers.size() == 1);
    CHECK(strided.layers[0].spec == LayerSpec(Gather { 2, { 0, 2 }, { 2 } }));
}
