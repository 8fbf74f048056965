// The normalization kinds (layer_norm, group_norm, instance_norm; issue 30): values against PyTorch's formula written
// out per kind, cpu.direct against the fast path (long rows split in chunks, data far from zero), the file's fields
// (round trip, defaults, errors naming the numbers), and ONNX: LayerNormalization, GroupNormalization (per-group
// scale in opset 18, per channel in 21), InstanceNormalization, the decomposed LayerNorm PyTorch writes below opset 17
// folded into one layer, and export → import giving the same outputs.
#include "convscope_config.h"

#include "compute/cpu/cpu_ops.h"
#include "compute/error.h"
#include "compute/network_json.h"
#include "compute/normalization.h"
#include "compute/npy.h"
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
Tensor run(const Network& net, const Tensor& input, const char* selection = "cpu.direct")
{
    return test::onePassOutput(net, input, selection);
}

double relL2Of(const Tensor& a, const std::vector<double>& b)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
        num += std::pow(double(a.data()[i]) - b[size_t(i)], 2);
        den += b[size_t(i)] * b[size_t(i)];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

double relL2Of(const Tensor& a, const Tensor& b)
{
    return relL2Of(a, std::vector<double>(b.data(), b.data() + b.numel()));
}

// PyTorch's formula on one set of elements (indices into x), in double: biased variance.
void normalizeSet(const Tensor& x, const std::vector<int64_t>& at, const std::vector<double>& w,
    const std::vector<double>& b, double eps, std::vector<double>& y)
{
    double mean = 0, var = 0;
    for (const int64_t i : at)
        mean += x.data()[i];
    mean /= double(at.size());
    for (const int64_t i : at)
        var += (x.data()[i] - mean) * (x.data()[i] - mean);
    var /= double(at.size());
    for (size_t k = 0; k < at.size(); ++k)
        y[size_t(at[k])] = (x.data()[at[k]] - mean) / std::sqrt(var + eps) * w[k] + b[k];
}

// F.layer_norm over the last `count` elements; w, b of that count.
std::vector<double> layerNormRef(
    const Tensor& x, int64_t count, const std::vector<double>& w, const std::vector<double>& b, double eps)
{
    std::vector<double> y(size_t(x.numel()));
    for (int64_t r = 0; r < x.numel() / count; ++r) {
        std::vector<int64_t> at;
        for (int64_t j = 0; j < count; ++j)
            at.push_back(r * count + j);
        normalizeSet(x, at, w, b, eps, y);
    }
    return y;
}

// F.group_norm on [N, C, S...]: w, b per channel (instance norm: groups = C).
std::vector<double> groupNormRef(
    const Tensor& x, int64_t groups, const std::vector<double>& w, const std::vector<double>& b, double eps)
{
    const std::vector<int64_t> d = x.shape().dims();
    const int64_t n = d[0], c = d[1], s = x.numel() / (n * c), per = c / groups;
    std::vector<double> y(size_t(x.numel()));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t g = 0; g < groups; ++g) {
            std::vector<int64_t> at;
            std::vector<double> wg, bg;
            for (int64_t ch = g * per; ch < (g + 1) * per; ++ch)
                for (int64_t p = 0; p < s; ++p) {
                    at.push_back((i * c + ch) * s + p);
                    wg.push_back(w[size_t(ch)]);
                    bg.push_back(b[size_t(ch)]);
                }
            normalizeSet(x, at, wg, bg, eps, y);
        }
    return y;
}

std::vector<double> values(int64_t count, double start, double step)
{
    std::vector<double> v;
    for (int64_t k = 0; k < count; ++k)
        v.push_back(start + step * double(k));
    return v;
}

Tensor vectorTensor(const std::vector<double>& v)
{
    Tensor t(Shape::nchw(int64_t(v.size()), 1, 1, 1));
    for (size_t k = 0; k < v.size(); ++k)
        t.data()[k] = float(v[k]);
    return t;
}

Network parse(const std::string& input, const std::string& layers)
{
    return parseNetwork(
        R"({"format": "convscope-network", "version": 1, "input": )" + input + R"(, "layers": [)" + layers + "]}",
        "net", ".");
}
} // namespace

TEST_CASE("normalization kinds: PyTorch's values on cpu.direct and the fast path", "[norm]")
{
    SECTION("layer_norm of [1, 2, 3, 4]: mean 2.5, variance 1.25")
    {
        Tensor x(Shape::features(1, 4)), y(Shape::features(1, 4));
        for (int k = 0; k < 4; ++k)
            x.data()[k] = float(k + 1);
        const NormPlan p = normPlan(LayerNorm { { 4 } }, x.shape());
        const Tensor w = vectorTensor({ 1, 1, 1, 1 }), b = vectorTensor({ 0, 0, 0, 0 });
        for (const bool fast : { false, true }) {
            fast ? cpu::fast::normalization(x, w, b, p, y) : cpu::direct::normalization(x, w, b, p, y);
            for (int k = 0; k < 4; ++k)
                CHECK(y.data()[k] == Approx((k + 1 - 2.5) / std::sqrt(1.25 + 1e-5)).epsilon(1e-6));
        }
    }
    SECTION("every kind at several ranks, weights per element or per channel")
    {
        struct Case {
            LayerSpec spec;
            std::vector<int64_t> dims;
        };
        const std::vector<Case> cases = {
            { LayerNorm { { 6 }, 1e-5 }, { 3, 5, 6 } },
            { LayerNorm { { 4, 5 }, 1e-3 }, { 2, 3, 4, 5 } },
            { LayerNorm { { 2, 3, 2, 2, 3 }, 0.1 }, { 2, 2, 3, 2, 2, 3 } },
            { GroupNorm { 2, 1e-5 }, { 2, 6, 3, 4 } },
            { GroupNorm { 3, 1e-5 }, { 3, 6 } },
            { GroupNorm { 1, 1e-3 }, { 1, 4, 2, 3, 2 } },
            { InstanceNorm { 1e-5, true }, { 2, 3, 7 } },
            { InstanceNorm { 1e-5, true }, { 1, 2, 2, 3, 2, 2 } },
        };
        for (const Case& c : cases) {
            INFO(layerSummary(c.spec) << " on " << Shape::of(c.dims).str());
            const Tensor x = randomTensor(Shape::of(c.dims), 5);
            const std::vector<int64_t> pd = normParameterDims(c.spec, x.shape());
            int64_t count = 1;
            for (const int64_t v : pd)
                count *= v;
            const std::vector<double> w = values(count, -1.5, 0.37), b = values(count, 0.8, -0.21);
            const std::vector<double> want = std::holds_alternative<LayerNorm>(c.spec)
                ? layerNormRef(x, count, w, b, normPlan(c.spec, x.shape()).eps)
                : groupNormRef(x,
                    std::holds_alternative<GroupNorm>(c.spec) ? std::get<GroupNorm>(c.spec).num_groups : c.dims[1], w,
                    b, normPlan(c.spec, x.shape()).eps);
            Tensor y(x.shape());
            const NormPlan p = normPlan(c.spec, x.shape());
            cpu::direct::normalization(x, vectorTensor(w), vectorTensor(b), p, y);
            CHECK(relL2Of(y, want) < 1e-6);
            cpu::fast::normalization(x, vectorTensor(w), vectorTensor(b), p, y);
            CHECK(relL2Of(y, want) < 1e-6);
        }
    }
    SECTION("long rows in chunks and data far from zero: the fast path's one pass stays exact")
    {
        Tensor x = randomTensor(Shape::of({ 2, 3, 50000 }), 9);
        for (int64_t k = 0; k < x.numel(); ++k)
            x.data()[k] = 1000.0f + x.data()[k];
        const std::vector<double> w(50000, 1.0), b(50000, 0.0);
        const std::vector<double> want = layerNormRef(x, 50000, w, b, 1e-5);
        Tensor y(x.shape());
        const NormPlan p = normPlan(LayerNorm { { 50000 } }, x.shape());
        cpu::fast::normalization(x, vectorTensor(w), vectorTensor(b), p, y);
        CHECK(relL2Of(y, want) < 1e-5);
        const NormPlan g = normPlan(GroupNorm { 1 }, x.shape()); // one row of 150000
        const std::vector<double> w3(3, 1.0), b3(3, 0.0);
        cpu::fast::normalization(x, vectorTensor(w3), vectorTensor(b3), g, y);
        CHECK(relL2Of(y, groupNormRef(x, 1, w3, b3, 1e-5)) < 1e-5);
        // Many long rows (group_norm's 32 rows of 18000): each row's statistics and output by one thread.
        Tensor many = randomTensor(Shape::of({ 16, 4, 9000 }), 10);
        for (int64_t k = 0; k < many.numel(); ++k)
            many.data()[k] = 1000.0f + many.data()[k];
        const std::vector<double> w4 = values(4, -1.5, 0.37), b4 = values(4, 0.8, -0.21);
        Tensor ym(many.shape());
        cpu::fast::normalization(many, vectorTensor(w4), vectorTensor(b4), normPlan(GroupNorm { 2 }, many.shape()), ym);
        CHECK(relL2Of(ym, groupNormRef(many, 2, w4, b4, 1e-5)) < 1e-5);
    }
}

TEST_CASE("normalization kinds: file fields, defaults, round trip and errors", "[norm]")
{
    const std::string image = R"({"batch": 2, "channels": 6, "height": 3, "width": 4, "source": "random"})";
    const Network net = parse(image,
        R"({"type": "layer_norm", "name": "ln", "normalized_shape": [3, 4], "eps": 1e-3, "init": {"kind": "uniform", "seed": 3}},
        {"type": "group_norm", "name": "gn", "num_groups": 3, "affine": false},
        {"type": "instance_norm", "name": "in", "affine": true, "init": {"kind": "constant", "value": 2}},
        {"type": "layer_norm", "name": "ln2", "normalized_shape": 4, "bias": false, "elementwise_affine": true})");
    const auto& ln = std::get<LayerNorm>(net.layers[0].spec);
    CHECK(ln.normalized_shape == std::vector<int64_t> { 3, 4 });
    CHECK(ln.eps == 1e-3);
    CHECK(ln.elementwise_affine);
    CHECK(std::get<GroupNorm>(net.layers[1].spec) == GroupNorm { 3, 1e-5, false });
    CHECK(std::get<InstanceNorm>(net.layers[2].spec).affine);
    CHECK(std::get<LayerNorm>(net.layers[3].spec).normalized_shape == std::vector<int64_t> { 4 });
    CHECK_FALSE(std::get<LayerNorm>(net.layers[3].spec).bias);
    CHECK(InstanceNorm {}.affine == false); // PyTorch's default
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    CHECK(shapes.layers[0].cost.params == 24);
    CHECK(shapes.layers[1].cost.params == 0);
    CHECK(shapes.layers[3].cost.params == 4); // a weight, no bias
    CHECK_THAT(shapes.layers[0].formula, Contains("12 elements"));
    const Network back = parseNetwork(serializeNetwork(net), "back", ".");
    CHECK(back.sameDescription(net));
    const Tensor x = randomTensor(net.input.shape(), 4);
    CHECK(relL2Of(run(back, x), run(net, x)) == 0);
    CHECK(relL2Of(run(net, x, "cpu.im2col_gemm"), run(net, x)) < 1e-6);

    const auto shapeError = [&](const std::string& input, const std::string& layer) {
        return inferShapes(parse(input, layer)).firstError();
    };
    CHECK_THAT(shapeError(image, R"({"type": "group_norm", "num_groups": 4})"),
        Contains("num_groups 4 does not divide the 6 channels"));
    CHECK_THAT(shapeError(image, R"({"type": "layer_norm", "normalized_shape": [5]})"),
        Contains("must be the last 1 dims") && Contains("dim 3 is 4"));
    CHECK_THAT(shapeError(image, R"({"type": "layer_norm", "normalized_shape": [1, 2, 6, 3, 4]})"),
        Contains("has 5 axes but the input [2, 6, 3, 4] has only 4"));
    CHECK_THAT(shapeError(R"({"batch": 2, "features": 6})", R"({"type": "instance_norm"})"), Contains("rank 3 to 6"));
    const auto fileError = [&](const std::string& layer) {
        try {
            parse(image, layer);
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(fileError(R"({"type": "layer_norm", "normalized_shape": [4], "eps": -1e-5})"),
        Contains("\"eps\" must be a non-negative number"));
    CHECK_THAT(fileError(R"({"type": "group_norm", "num_groups": 2, "eps": -1})"), Contains("\"eps\""));
    CHECK_THAT(fileError(R"({"type": "layer_norm"})"), Contains("\"normalized_shape\" is missing"));
    CHECK_THAT(fileError(R"({"type": "group_norm"})"), Contains("\"num_groups\" is missing"));
    CHECK_THAT(fileError(R"({"type": "group_norm", "num_groups": 0})"), Contains("num_groups"));
    CHECK_THAT(fileError(R"({"type": "instance_norm", "init": {"kind": "uniform"}})"), Contains("has no weight"));
    CHECK_THAT(fileError(R"({"type": "instance_norm", "affine": true, "init": {"kind": "he_uniform"}})"),
        Contains("does not apply to instance_norm"));
    CHECK_THAT(
        fileError(
            R"({"type": "layer_norm", "normalized_shape": [4], "bias": false, "init": {"weight": "w.npy", "bias": "b.npy"}})"),
        Contains("\"bias\": false"));
}

TEST_CASE("normalization kinds: weights from .npy files of PyTorch's dims", "[norm]")
{
    test::TempDir dir;
    std::vector<float> w(12), b(12);
    for (int k = 0; k < 12; ++k) {
        w[size_t(k)] = 0.5f + 0.1f * float(k);
        b[size_t(k)] = -0.2f * float(k);
    }
    writeNpy(dir.path / "w.npy", { 3, 4 }, w.data());
    writeNpy(dir.path / "b.npy", { 3, 4 }, b.data());
    writeNpy(dir.path / "flat.npy", { 12 }, w.data());
    const std::string head
        = R"({"format": "convscope-network", "version": 1, "input": {"batch": 2, "channels": 2, "height": 3, "width": 4, "source": "random"}, "layers": [)";
    Network net = parseNetwork(
        head + R"({"type": "layer_norm", "normalized_shape": [3, 4], "init": {"weight": "w.npy", "bias": "b.npy"}}]})",
        "net", dir.path);
    const Tensor x = randomTensor(net.input.shape(), 8);
    const std::vector<double> wd(w.begin(), w.end()), bd(b.begin(), b.end());
    CHECK(relL2Of(run(net, x), layerNormRef(x, 12, wd, bd, 1e-5)) < 1e-6);
    net = parseNetwork(head + R"({"type": "layer_norm", "normalized_shape": [3, 4], "init": {"weight": "flat.npy"}}]})",
        "net", dir.path);
    ProfileOptions o;
    o.selections = { Selection::parse("cpu.direct") };
    CHECK_THROWS_WITH(profile(net, x, o), Contains("flat.npy has shape [12] but layer_norm needs [3, 4]"));
}

#if CONVSCOPE_WITH_ONNX
namespace {
::onnx::ModelProto model(int opset, const std::vector<int64_t>& dims)
{
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    auto* g = m.mutable_graph();
    g->set_name("norm");
    auto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    for (const int64_t d : dims)
        tt->mutable_shape()->add_dim()->set_dim_value(d);
    g->add_output()->set_name("y");
    return m;
}

void floats(
    ::onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims, const std::vector<double>& v)
{
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (const int64_t d : dims)
        t->add_dims(d);
    for (const double x : v)
        t->add_float_data(float(x));
}

void ints(::onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& v)
{
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_dims(int64_t(v.size()));
    for (const int64_t x : v)
        t->add_int64_data(x);
}

::onnx::NodeProto* node(
    ::onnx::GraphProto* g, const std::string& op, std::vector<std::string> ins, const std::string& out)
{
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out + "_node");
    for (const auto& i : ins)
        n->add_input(i);
    n->add_output(out);
    return n;
}

void attr(::onnx::NodeProto* n, const std::string& name, int64_t v)
{
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
}

void attr(::onnx::NodeProto* n, const std::string& name, float v)
{
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
}

Network import(const ::onnx::ModelProto& m) { return importOnnxBytes(m.SerializeAsString(), "m.onnx", {}, 0); }
} // namespace

TEST_CASE("ONNX: LayerNormalization, GroupNormalization and InstanceNormalization import", "[onnx][norm]")
{
    const std::vector<int64_t> dims { 2, 4, 3, 5 };
    const Tensor x = randomTensor(Shape::of(dims), 12);
    SECTION("LayerNormalization over the last two axes, with B")
    {
        ::onnx::ModelProto m = model(17, dims);
        const std::vector<double> w = values(15, -1, 0.13), b = values(15, 0.5, -0.07);
        floats(m.mutable_graph(), "scale", { 3, 5 }, w);
        floats(m.mutable_graph(), "bias", { 3, 5 }, b);
        auto* n = node(m.mutable_graph(), "LayerNormalization", { "x", "scale", "bias" }, "y");
        attr(n, "axis", int64_t(-2));
        attr(n, "epsilon", 1e-3f);
        const Network net = import(m);
        REQUIRE(net.layers.size() == 1);
        CHECK(std::get<LayerNorm>(net.layers[0].spec).normalized_shape == std::vector<int64_t> { 3, 5 });
        CHECK(relL2Of(run(net, x), layerNormRef(x, 15, w, b, double(1e-3f))) < 1e-6);
    }
    SECTION("InstanceNormalization")
    {
        ::onnx::ModelProto m = model(6, dims);
        const std::vector<double> w = values(4, 0.5, 0.5), b = values(4, -1, 0.4);
        floats(m.mutable_graph(), "s", { 4 }, w);
        floats(m.mutable_graph(), "b", { 4 }, b);
        node(m.mutable_graph(), "InstanceNormalization", { "x", "s", "b" }, "y");
        const Network net = import(m);
        CHECK(std::get<InstanceNorm>(net.layers.at(0).spec).affine);
        ::onnx::ModelProto plain = model(6, dims); // scale 1 and B 0: the layer without affine
        floats(plain.mutable_graph(), "s", { 4 }, { 1, 1, 1, 1 });
        floats(plain.mutable_graph(), "b", { 4 }, { 0, 0, 0, 0 });
        node(plain.mutable_graph(), "InstanceNormalization", { "x", "s", "b" }, "y");
        CHECK_FALSE(std::get<InstanceNorm>(import(plain).layers.at(0).spec).affine);
        CHECK(relL2Of(run(net, x), groupNormRef(x, 4, w, b, double(1e-5f))) < 1e-6);
    }
    SECTION("GroupNormalization: per group in opset 18, per channel in 21")
    {
        for (const int opset : { 18, 21 }) {
            INFO("opset " << opset);
            ::onnx::ModelProto m = model(opset, dims);
            const std::vector<double> w = values(4, 0.5, 0.25), b = values(4, 1, -0.5);
            const std::vector<double> wg = { 0.5, 1.5 }, bg = { 1, -2 };
            floats(m.mutable_graph(), "s", { opset == 18 ? 2 : 4 }, opset == 18 ? wg : w);
            floats(m.mutable_graph(), "b", { opset == 18 ? 2 : 4 }, opset == 18 ? bg : b);
            attr(node(m.mutable_graph(), "GroupNormalization", { "x", "s", "b" }, "y"), "num_groups", int64_t(2));
            const Network net = import(m);
            CHECK(std::get<GroupNorm>(net.layers.at(0).spec).num_groups == 2);
            const std::vector<double> wc = opset == 18 ? std::vector<double> { 0.5, 0.5, 1.5, 1.5 } : w;
            const std::vector<double> bc = opset == 18 ? std::vector<double> { 1, 1, -2, -2 } : b;
            CHECK(relL2Of(run(net, x), groupNormRef(x, 2, wc, bc, double(1e-5f))) < 1e-6);
        }
        ::onnx::ModelProto m = model(18, dims);
        floats(m.mutable_graph(), "s", { 2 }, { 1, 1 });
        floats(m.mutable_graph(), "b", { 2 }, { 0, 0 });
        attr(node(m.mutable_graph(), "GroupNormalization", { "x", "s", "b" }, "y"), "num_groups", int64_t(3));
        CHECK_THROWS_WITH(import(m), Contains("num_groups 3 does not divide the 4 channels"));
    }
}

TEST_CASE("ONNX: PyTorch's decomposed LayerNorm (opset < 17) folds into one layer_norm", "[onnx][norm]")
{
    const std::vector<int64_t> dims { 2, 7, 6 };
    const Tensor x = randomTensor(Shape::of(dims), 31);
    const std::vector<double> w = values(6, 0.7, 0.11), b = values(6, -0.3, 0.05);
    for (const int opset : { 13, 18 }) {
        for (const bool affine : { true, false }) {
            INFO("opset " << opset << (affine ? ", weight and bias" : ", no affine"));
            ::onnx::ModelProto m = model(opset, dims);
            auto* g = m.mutable_graph();
            const auto reduce = [&](const std::string& in, const std::string& out) {
                if (opset >= 18) {
                    node(g, "ReduceMean", { in, "axes" }, out);
                } else {
                    auto* a = node(g, "ReduceMean", { in }, out)->add_attribute();
                    a->set_name("axes");
                    a->set_type(::onnx::AttributeProto::INTS);
                    a->add_ints(-1);
                }
            };
            if (opset >= 18)
                ints(g, "axes", { -1 });
            floats(g, "two", {}, { 2 });
            floats(g, "eps", {}, { 1e-5 });
            reduce("x", "mean");
            node(g, "Sub", { "x", "mean" }, "d");
            node(g, "Pow", { "d", "two" }, "sq");
            reduce("sq", "var");
            node(g, "Add", { "var", "eps" }, "ve");
            node(g, "Sqrt", { "ve" }, "sd");
            node(g, "Div", { "d", "sd" }, affine ? "n" : "y");
            if (affine) {
                floats(g, "w", { 6 }, w);
                floats(g, "b", { 6 }, b);
                node(g, "Mul", { "n", "w" }, "nw");
                node(g, "Add", { "nw", "b" }, "y");
            }
            const Network net = import(m);
            REQUIRE(net.layers.size() == 1);
            const auto& l = std::get<LayerNorm>(net.layers[0].spec);
            CHECK(l.normalized_shape == std::vector<int64_t> { 6 });
            CHECK(l.elementwise_affine == affine);
            const std::vector<double> ones(6, 1.0), zeros(6, 0.0);
            CHECK(
                relL2Of(run(net, x), layerNormRef(x, 6, affine ? w : ones, affine ? b : zeros, double(1e-5f))) < 1e-6);
        }
    }
}

TEST_CASE("ONNX: the normalization kinds export and read back with the same outputs", "[onnx][norm]")
{
    struct Case {
        const char* input;
        const char* normalized;
        bool instance; // instance_norm needs a position axis
    };
    for (const Case& c :
        { Case { R"({"batch": 2, "channels": 6, "height": 3, "width": 4, "source": "random"})", "[3, 4]", true },
            Case { R"({"shape": [2, 6, 5], "source": "random"})", "[6, 5]", true },
            Case { R"({"batch": 3, "features": 6, "source": "random"})", "[6]", false } }) {
        INFO(c.input);
        const Network net = parse(c.input,
            std::string(R"({"type": "layer_norm", "name": "ln", "normalized_shape": )") + c.normalized
                + R"(, "init": {"kind": "uniform", "seed": 2}},)"
                + R"({"type": "group_norm", "name": "gn", "num_groups": 2, "init": {"kind": "uniform", "seed": 3}})"
                + (c.instance
                        ? R"(, {"type": "instance_norm", "name": "in", "affine": true, "init": {"kind": "uniform", "seed": 4}})"
                        : ""));
        const Tensor x = randomTensor(net.input.shape(), 6);
        const Network back = importOnnxBytes(exportOnnxBytes(net), "back.onnx", {}, x.shape().dims()[0]);
        CHECK(relL2Of(run(back, x), run(net, x)) < 1e-6);
        CHECK(std::holds_alternative<LayerNorm>(back.layers.at(0).spec));
    }
}
#endif
