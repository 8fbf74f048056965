// Output shapes against PyTorch (the expected numbers were produced with torch.nn.functional), the
// readable errors, the formulas and the costs.
#include "compute/shape_inference.h"

#include <catch2/catch.hpp>

using namespace convscope;

namespace {

Conv2d conv(int64_t cout, Pair k, Pair s, Padding2d p, Pair d, int64_t groups = 1)
{
    Conv2d c;
    c.out_channels = cout;
    c.kernel_size = k;
    c.stride = s;
    c.padding = p;
    c.dilation = d;
    c.groups = groups;
    return c;
}

ConvTranspose2d convT(int64_t cout, Pair k, Pair s, Padding2d p, Pair op, Pair d)
{
    ConvTranspose2d c;
    c.out_channels = cout;
    c.kernel_size = k;
    c.stride = s;
    c.padding = p;
    c.output_padding = op;
    c.dilation = d;
    return c;
}

Shape outOf(const LayerSpec& spec, Shape in)
{
    const LayerShape s = inferLayer(spec, in);
    INFO(s.error);
    REQUIRE(s.ok);
    return s.out;
}

std::string errorOf(const LayerSpec& spec, Shape in)
{
    const LayerShape s = inferLayer(spec, in);
    REQUIRE_FALSE(s.ok);
    return s.error;
}

} // namespace

TEST_CASE("conv2d output sizes match PyTorch", "[shapes]")
{
    const auto P = Padding2d::symmetric;
    CHECK(
        outOf(conv(6, { 5, 5 }, { 1, 1 }, P(2, 2), { 1, 1 }), Shape::nchw(1, 4, 28, 28)) == Shape::nchw(1, 6, 28, 28));
    CHECK(outOf(conv(6, { 3, 5 }, { 2, 3 }, P(1, 2), { 2, 1 }), Shape::nchw(1, 4, 13, 17)) == Shape::nchw(1, 6, 6, 6));
    CHECK(outOf(conv(6, { 3, 3 }, { 2, 2 }, P(0, 0), { 3, 3 }), Shape::nchw(1, 4, 7, 9)) == Shape::nchw(1, 6, 1, 2));
    CHECK(outOf(conv(8, { 3, 3 }, { 1, 1 }, P(1, 1), { 1, 1 }, 8), Shape::nchw(1, 8, 10, 10))
        == Shape::nchw(1, 8, 10, 10));
}

TEST_CASE("same and valid padding follow TensorFlow, the extra pixel at the bottom and right", "[shapes]")
{
    Conv2d c = conv(1, { 3, 3 }, { 2, 2 }, { Padding2d::Mode::Same }, { 1, 1 });
    const LayerShape s = inferLayer(c, Shape::nchw(1, 1, 26, 26));
    REQUIRE(s.ok);
    CHECK(s.out == Shape::nchw(1, 1, 13, 13)); // ceil(26 / 2)
    CHECK(s.resolvedPadding.top == 0);
    CHECK(s.resolvedPadding.bottom == 1);
    CHECK(s.resolvedPadding.left == 0);
    CHECK(s.resolvedPadding.right == 1);

    c.stride = { 1, 1 };
    c.kernel_size = { 4, 5 };
    const LayerShape odd = inferLayer(c, Shape::nchw(1, 1, 9, 9));
    CHECK(odd.out == Shape::nchw(1, 1, 9, 9));
    CHECK(odd.resolvedPadding.top == 1);
    CHECK(odd.resolvedPadding.bottom == 2);
    CHECK(odd.resolvedPadding.left == 2);
    CHECK(odd.resolvedPadding.right == 2);

    c.padding = { Padding2d::Mode::Valid };
    CHECK(outOf(c, Shape::nchw(1, 1, 9, 9)) == Shape::nchw(1, 1, 6, 5));
}

TEST_CASE("conv_transpose2d output sizes with output_padding match PyTorch", "[shapes]")
{
    const auto P = Padding2d::symmetric;
    CHECK(outOf(convT(6, { 4, 4 }, { 2, 2 }, P(1, 1), { 0, 0 }, { 1, 1 }), Shape::nchw(1, 4, 4, 4))
        == Shape::nchw(1, 6, 8, 8));
    CHECK(outOf(convT(6, { 3, 4 }, { 3, 2 }, P(1, 0), { 2, 1 }, { 1, 2 }), Shape::nchw(1, 4, 5, 7))
        == Shape::nchw(1, 6, 15, 20));
    CHECK(outOf(convT(6, { 4, 4 }, { 1, 1 }, P(0, 0), { 0, 0 }, { 1, 1 }), Shape::nchw(1, 4, 1, 1))
        == Shape::nchw(1, 6, 4, 4));
    // PyTorch: output padding must be smaller than either stride or dilation.
    CHECK_THAT(errorOf(convT(6, { 3, 3 }, { 2, 2 }, P(0, 0), { 2, 0 }, { 1, 1 }), Shape::nchw(1, 4, 5, 5)),
        Catch::Contains("output_padding 2"));
    CHECK_THAT(
        errorOf(convT(6, { 3, 3 }, { 1, 1 }, { Padding2d::Mode::Same }, { 0, 0 }, { 1, 1 }), Shape::nchw(1, 4, 5, 5)),
        Catch::Contains("same"));
}

TEST_CASE("pooling output sizes with ceil_mode match PyTorch", "[shapes]")
{
    MaxPool2d m;
    m.kernel_size = { 2, 2 };
    m.ceil_mode = true;
    CHECK(outOf(m, Shape::nchw(1, 3, 13, 13)) == Shape::nchw(1, 3, 7, 7));
    m.ceil_mode = false;
    CHECK(outOf(m, Shape::nchw(1, 3, 13, 13)) == Shape::nchw(1, 3, 6, 6));
    m = {};
    m.kernel_size = { 3, 3 };
    m.stride = Pair { 2, 2 };
    m.padding = Padding2d::symmetric(1, 1);
    m.dilation = { 2, 2 };
    m.ceil_mode = true;
    CHECK(outOf(m, Shape::nchw(1, 3, 10, 11)) == Shape::nchw(1, 3, 5, 5));
    // The last window would start in the padding: PyTorch drops it.
    m = {};
    m.kernel_size = { 2, 2 };
    m.padding = Padding2d::symmetric(1, 1);
    m.ceil_mode = true;
    const LayerShape dropped = inferLayer(m, Shape::nchw(1, 3, 5, 5));
    CHECK(dropped.out == Shape::nchw(1, 3, 3, 3));
    CHECK_THAT(dropped.formula, Catch::Contains("last window would start in the padding"));

    AvgPool2d a;
    a.kernel_size = { 2, 2 };
    a.padding = Padding2d::symmetric(1, 1);
    a.ceil_mode = true;
    CHECK(outOf(a, Shape::nchw(1, 3, 5, 5)) == Shape::nchw(1, 3, 3, 3));
    a.kernel_size = { 3, 2 };
    a.stride = Pair { 2, 3 };
    CHECK(outOf(a, Shape::nchw(1, 3, 7, 8)) == Shape::nchw(1, 3, 4, 3));
    // PyTorch refuses padding above half the kernel.
    a = {};
    a.kernel_size = { 2, 2 };
    a.padding = Padding2d::symmetric(2, 0);
    CHECK_THAT(errorOf(a, Shape::nchw(1, 3, 8, 8)), Catch::Contains("more than half"));
}

TEST_CASE("a max pool window that reads only padding is refused, in 2-D and 3-D", "[shapes]")
{
    // "same" on a width of 1 with kernel 4, dilation 2, stride 3 pads 3 + 3: the taps at −3, −1, 1, 3 miss the one
    // input column (the cross-backend test's seed 1795878830 drew it; cpu.direct gave −FLT_MAX there).
    MaxPool2d m;
    m.kernel_size = { 3, 4 };
    m.stride = Pair { 2, 3 };
    m.dilation = { 1, 2 };
    m.padding = Padding2d { Padding2d::Mode::Same };
    CHECK(errorOf(m, Shape::nchw(3, 3, 18, 1))
        == "maxpool2d: window 0 along W reads only padding (it covers -3 … 3 in steps of 2 of an input of 1): it has "
           "no maximum (PyTorch gives −inf there); use less padding, a smaller dilation or a larger input");
    // The same kernel on a wider input reaches it; explicit padding within PyTorch's half-kernel limit too.
    CHECK(outOf(m, Shape::nchw(3, 3, 18, 4)) == Shape::nchw(3, 3, 9, 2));
    m.padding = Padding2d::symmetric(0, 3);
    CHECK_THAT(errorOf(m, Shape::nchw(1, 1, 5, 1)), Catch::Contains("window 0 along W reads only padding"));

    MaxPool3d v;
    v.kernel_size = { 1, 1, 2 };
    v.dilation = { 1, 1, 2 };
    v.padding = Padding3d::symmetric(0, 0, 1); // taps at −1 and 1 of a width of 1
    CHECK_THAT(
        errorOf(v, Shape::ncdhw(1, 1, 2, 2, 1)), Catch::Contains("maxpool3d: window 0 along W reads only padding"));
}

TEST_CASE("errors a teacher can read", "[shapes]")
{
    const auto P = Padding2d::symmetric;
    CHECK(errorOf(conv(2, { 5, 5 }, { 1, 1 }, P(1, 1), { 2, 2 }), Shape::nchw(1, 1, 6, 6))
        == "kernel 5 with dilation 2 spans 9 pixels but the padded input, which is only 8 tall (H 6 + padding 1 + 1)");
    CHECK_THAT(errorOf(conv(4, { 3, 3 }, { 1, 1 }, P(1, 1), { 1, 1 }, 3), Shape::nchw(1, 6, 8, 8)),
        Catch::Contains("groups 3 does not divide out_channels 4"));
    CHECK_THAT(errorOf(conv(4, { 3, 3 }, { 0, 1 }, P(1, 1), { 1, 1 }), Shape::nchw(1, 6, 8, 8)),
        Catch::Contains("stride must be at least 1"));
    CHECK_THAT(
        errorOf(Linear { 0, true }, Shape::nchw(1, 6, 8, 8)), Catch::Contains("out_features must be at least 1"));
    CHECK_THAT(errorOf(conv(4, { 3, 3 }, { 1, 1 }, P(1, 1), { 1, 1 }), Shape::features(1, 10)),
        Catch::Contains("image-shaped input"));
    // An element count that does not fit in 64 bits is an error, not a wrapped number.
    const int64_t huge = int64_t(1) << 40;
    CHECK_THAT(errorOf(ReLU {}, Shape::nchw(huge, huge, 2, 2)), Catch::Contains("overflow"));
}

TEST_CASE("the formula shows the numbers", "[shapes]")
{
    const LayerShape s
        = inferLayer(conv(6, { 5, 5 }, { 1, 1 }, Padding2d::symmetric(2, 2), { 1, 1 }), Shape::nchw(1, 1, 28, 28));
    CHECK(s.formula
        == "H_out = ⌊(28 + 2·2 − 1·(5−1) − 1) / 1⌋ + 1 = 28\nW_out = ⌊(28 + 2·2 − 1·(5−1) − 1) / 1⌋ + 1 = 28");
    const LayerShape a = inferLayer(
        conv(1, { 4, 4 }, { 1, 1 }, { Padding2d::Mode::Explicit, 2, 1, 0, 3 }, { 1, 1 }), Shape::nchw(1, 1, 13, 10));
    CHECK_THAT(a.formula, Catch::Contains("H_out = ⌊(13 + 2 + 1 − 1·(4−1) − 1) / 1⌋ + 1 = 13"));
    CHECK_THAT(a.formula, Catch::Contains("W_out = ⌊(10 + 0 + 3 − 1·(4−1) − 1) / 1⌋ + 1 = 10"));
}

TEST_CASE("costs: parameters, FLOPs counted 2 per multiply-add, transposed conv on the input", "[shapes]")
{
    const LayerShape c
        = inferLayer(conv(6, { 5, 5 }, { 1, 1 }, Padding2d::symmetric(2, 2), { 1, 1 }), Shape::nchw(1, 1, 28, 28));
    CHECK(c.cost.params == 6 * 25 + 6);
    CHECK(c.cost.flops == 2.0 * 6 * 28 * 28 * 25);
    CHECK(c.cost.bytesRead == 4.0 * (28 * 28 + 156));
    CHECK(c.cost.bytesWritten == 4.0 * 6 * 28 * 28);

    // 64→64 at 512², batch 4, 3×3: the unet-encoder's 77.3 GFLOP layer.
    const LayerShape u
        = inferLayer(conv(64, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }), Shape::nchw(4, 64, 512, 512));
    CHECK(u.cost.flops == Approx(77.309e9).epsilon(1e-4));

    // A transposed conv 4→6, k4 s2 on 4×4: every input pixel scatters into 6·16 outputs.
    const LayerShape t = inferLayer(
        convT(6, { 4, 4 }, { 2, 2 }, Padding2d::symmetric(1, 1), { 0, 0 }, { 1, 1 }), Shape::nchw(1, 4, 4, 4));
    CHECK(t.cost.flops == 2.0 * (4 * 4 * 4) * 6 * 16);
    CHECK(t.cost.params == 4 * 6 * 16 + 6);

    const LayerShape l = inferLayer(Linear { 10, true }, Shape::features(3, 84));
    CHECK(l.out == Shape::features(3, 10));
    CHECK(l.cost.params == 850);
    CHECK(l.cost.flops == 2.0 * 3 * 84 * 10);
}

TEST_CASE("a network infers channels from the layer above and stops at the first invalid layer", "[shapes]")
{
    Network net;
    net.input = { 2, 3, 32, 32, false, "random" };
    net.layers.push_back(
        { "c1", conv(8, { 3, 3 }, { 1, 1 }, Padding2d::symmetric(1, 1), { 1, 1 }), {}, {}, {}, {}, {}, {}, {} });
    net.layers.push_back({ "p", MaxPool2d {}, {}, {}, {}, {}, {}, {}, {}, {} });
    net.layers.push_back({ "f", Flatten {}, {}, {}, {}, {}, {}, {}, {}, {} });
    net.layers.push_back({ "fc", Linear { 10, true }, {}, {}, {}, {}, {}, {}, {} });
    ShapeReport r = inferShapes(net);
    REQUIRE(r.ok());
    CHECK(r.layers[0].out == Shape::nchw(2, 8, 32, 32));
    CHECK(r.layers[2].out == Shape::features(2, 8 * 16 * 16));
    CHECK(r.layers[3].cost.params == 8 * 16 * 16 * 10 + 10);
    CHECK(r.total.params == r.layers[0].cost.params + r.layers[3].cost.params);

    net.layers.insert(
        net.layers.begin() + 1, { "big", conv(8, { 40, 40 }, { 1, 1 }, {}, { 1, 1 }), {}, {}, {}, {}, {}, {}, {} });
    r = inferShapes(net);
    CHECK_FALSE(r.ok());
    CHECK_FALSE(r.layers[1].ok);
    CHECK_FALSE(r.layers[2].ok);
    CHECK_THAT(r.layers[2].error, Catch::Contains("layer 1 (big) is invalid"));
    CHECK_THAT(r.firstError(), Catch::StartsWith("layer 1 (big): kernel 40 is larger than the padded input"));

    net.input.height = 0;
    CHECK_THAT(inferShapes(net).firstError(), Catch::Contains("at least 1"));
}

TEST_CASE("channel_shuffle and slice: shapes, formulas and the errors a teacher reads", "[shapes]")
{
    CHECK(outOf(ChannelShuffle { 3 }, Shape::nchw(1, 12, 4, 4)) == Shape::nchw(1, 12, 4, 4));
    CHECK_THAT(errorOf(ChannelShuffle { 5 }, Shape::nchw(1, 12, 4, 4)),
        Catch::Contains("groups 5 does not divide the 12 input channels"));
    CHECK_THAT(errorOf(ChannelShuffle { 2 }, Shape::features(1, 12)), Catch::Contains("fully connected"));
    CHECK(outOf(Slice { 1, 2, 5 }, Shape::nchw(2, 6, 4, 4)) == Shape::nchw(2, 3, 4, 4));
    CHECK(outOf(Slice { 3, 0, 1 }, Shape::nchw(2, 6, 4, 4)) == Shape::nchw(2, 6, 4, 1));
    CHECK(outOf(Slice { 2, 1, 3 }, Shape::ncdhw(1, 2, 5, 4, 4)) == Shape::ncdhw(1, 2, 2, 4, 4));
    CHECK(outOf(Slice { 1, 3, 8 }, Shape::features(2, 10)) == Shape::features(2, 5));
    CHECK(inferLayer(Slice { 2, 1, 3 }, Shape::nchw(1, 1, 5, 5)).formula == "H_out = 3 − 1 = 2");
    CHECK(errorOf(Slice { 2, 3, 9 }, Shape::nchw(1, 1, 5, 5))
        == "slice [3, 9) of H (dim 2, size 5) is empty or out of range: need 0 ≤ start < end ≤ 5");
    CHECK_THAT(errorOf(Slice { 4, 0, 1 }, Shape::nchw(1, 1, 5, 5)), Catch::Contains("dim 4 is not an axis of"));
}
