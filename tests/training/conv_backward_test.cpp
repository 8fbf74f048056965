// The backward of conv2d, conv_transpose2d and linear: cpu.direct's against finite differences of the forward (in
// double) over many small shapes (strides, asymmetric padding, dilation, groups, bias), and the fast path (im2col +
// parallel sgemm) against cpu.direct.
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu/dense_convolution.h"
#include "compute/cpu_threads.h"
#include "compute/training/cpu_backward_ops.h"
#include "tests/test_support.h"
#include "tests/training/gradcheck.h"

#include <sstream>

using namespace convscope;
using namespace convscope::test;

namespace {

struct ConvCase {
    int64_t n, cin, h, w, cout;
    Pair k, s;
    Padding2d pad;
    Pair d;
    int64_t groups;
    bool bias;
};

std::string describe(const ConvCase& c)
{
    std::ostringstream o;
    o << "n" << c.n << " cin" << c.cin << " " << c.h << "x" << c.w << " cout" << c.cout << " k" << c.k[0] << "x"
      << c.k[1] << " s" << c.s[0] << "x" << c.s[1] << " pad " << c.pad.top << "," << c.pad.bottom << "," << c.pad.left
      << "," << c.pad.right << " d" << c.d[0] << "x" << c.d[1] << " g" << c.groups << (c.bias ? " bias" : "");
    return o.str();
}

const ConvCase kConvCases[] = {
    { 1, 1, 5, 5, 1, { 3, 3 }, { 1, 1 }, explicitPadding(0, 0, 0, 0), { 1, 1 }, 1, true },
    { 2, 3, 6, 7, 4, { 3, 3 }, { 1, 1 }, explicitPadding(1, 1, 1, 1), { 1, 1 }, 1, true },
    { 2, 2, 7, 6, 3, { 3, 2 }, { 2, 1 }, explicitPadding(1, 0, 2, 1), { 1, 1 }, 1, false },
    { 1, 4, 8, 8, 4, { 3, 3 }, { 2, 2 }, explicitPadding(2, 2, 2, 2), { 2, 2 }, 2, true },
    { 2, 4, 5, 9, 6, { 1, 1 }, { 1, 1 }, explicitPadding(0, 0, 0, 0), { 1, 1 }, 2, true },
    { 1, 6, 6, 6, 6, { 3, 3 }, { 1, 2 }, explicitPadding(1, 1, 0, 2), { 1, 2 }, 6, true }, // depthwise
    { 2, 2, 9, 7, 2, { 5, 3 }, { 3, 2 }, explicitPadding(2, 1, 1, 0), { 1, 1 }, 1, true },
    { 1, 3, 4, 4, 2, { 2, 2 }, { 1, 1 }, explicitPadding(0, 1, 1, 0), { 3, 2 }, 1, false },
};

Conv2d convSpec(const ConvCase& c)
{
    Conv2d s;
    s.out_channels = c.cout;
    s.kernel_size = c.k;
    s.stride = c.s;
    s.padding = c.pad;
    s.dilation = c.d;
    s.groups = c.groups;
    s.bias = c.bias;
    return s;
}

ConvTranspose2d convTSpec(const ConvCase& c, Pair outputPadding)
{
    ConvTranspose2d s;
    s.out_channels = c.cout;
    s.kernel_size = c.k;
    s.stride = c.s;
    s.padding = c.pad;
    s.output_padding = outputPadding;
    s.dilation = c.d;
    s.groups = c.groups;
    s.bias = c.bias;
    return s;
}

} // namespace

TEST_CASE("conv2d backward matches finite differences, and the fast path matches cpu.direct", "[training][conv]")
{
    uint64_t seed = 100;
    for (const ConvCase& c : kConvCases) {
        INFO(describe(c));
        const Conv2d spec = convSpec(c);
        const Shape inShape = Shape::nchw(c.n, c.cin, c.h, c.w);
        const LayerShape ls = inferLayer(spec, inShape);
        REQUIRE(ls.ok);
        Tensor x = randomTensor(inShape, ++seed);
        Tensor w = randomTensor(Shape::nchw(c.cout, c.cin / c.groups, c.k[0], c.k[1]), ++seed);
        Tensor b = randomTensor(Shape::nchw(c.cout, 1, 1, 1), ++seed);
        const Tensor gy = randomTensor(ls.out, ++seed);
        const Padding2d& pad = ls.resolvedPadding;
        Tensor* bias = c.bias ? &b : nullptr;
        checkConvBackward(x, w, bias, gy,
            { [&](Tensor& y) { cpu::direct::conv2d(x, w, bias, spec, pad, y); },
                [&](bool fast, Tensor& gx) {
                    fast ? cpu::grad::fast::conv2dData(gy, w, spec, pad, gx)
                         : cpu::grad::direct::conv2dData(gy, w, spec, pad, gx);
                },
                [&](bool fast, Tensor& gw, Tensor* gb) {
                    fast ? cpu::grad::fast::conv2dWeights(gy, x, spec, pad, gw, gb)
                         : cpu::grad::direct::conv2dWeights(gy, x, spec, pad, gw, gb);
                } });
    }
}

TEST_CASE(
    "conv_transpose2d backward matches finite differences, and the fast path matches cpu.direct", "[training][conv]")
{
    uint64_t seed = 200;
    for (const ConvCase& c : kConvCases) {
        // output_padding must be smaller than the stride or the dilation (PyTorch's rule).
        const Pair outputPadding { std::min<int64_t>(1, std::max(c.s[0], c.d[0]) - 1),
            std::min<int64_t>(1, std::max(c.s[1], c.d[1]) - 1) };
        INFO(describe(c) << " output_padding " << outputPadding[0] << "," << outputPadding[1]);
        const ConvTranspose2d spec = convTSpec(c, outputPadding);
        const Shape inShape = Shape::nchw(c.n, c.cin, c.h, c.w);
        const LayerShape ls = inferLayer(spec, inShape);
        if (!ls.ok)
            continue; // padding larger than the transposed output: PyTorch refuses it too
        Tensor x = randomTensor(inShape, ++seed);
        Tensor w = randomTensor(Shape::nchw(c.cin, c.cout / c.groups, c.k[0], c.k[1]), ++seed);
        Tensor b = randomTensor(Shape::nchw(c.cout, 1, 1, 1), ++seed);
        const Tensor gy = randomTensor(ls.out, ++seed);
        const Padding2d& pad = ls.resolvedPadding;
        Tensor* bias = c.bias ? &b : nullptr;
        checkConvBackward(x, w, bias, gy,
            { [&](Tensor& y) { cpu::direct::convTranspose2d(x, w, bias, spec, pad, y); },
                [&](bool fast, Tensor& gx) {
                    fast ? cpu::grad::fast::convTranspose2dData(gy, w, spec, pad, gx)
                         : cpu::grad::direct::convTranspose2dData(gy, w, spec, pad, gx);
                },
                [&](bool fast, Tensor& gw, Tensor* gb) {
                    fast ? cpu::grad::fast::convTranspose2dWeights(gy, x, spec, pad, gw, gb)
                         : cpu::grad::direct::convTranspose2dWeights(gy, x, spec, pad, gw, gb);
                } });
    }
}

TEST_CASE("convolutions that are linear layers take one GEMM each way, and match cpu.direct", "[training][conv]")
{
    // A conv2d window over the whole input (DCGAN's discriminator head) and a conv_transpose2d from one pixel (its
    // generator's stem), with a stride that does not matter and a bias; the same with padding stays on im2col.
    uint64_t seed = 700;
    for (const bool padded : { false, true }) {
        INFO((padded ? "padded" : "dense"));
        ConvCase head { 3, 6, 4, 3, 5, { 4, 3 }, { 2, 2 }, explicitPadding(0, 0, 0, 0), { 1, 1 }, 1, true };
        if (padded)
            head.pad = explicitPadding(1, 0, 0, 1);
        const Conv2d conv = convSpec(head);
        const Shape convIn = Shape::nchw(head.n, head.cin, head.h, head.w);
        const LayerShape cs = inferLayer(conv, convIn);
        REQUIRE(cs.ok);
        CHECK(cpu::fast::conv2dIsDense(conv, cs.resolvedPadding, convIn, cs.out) == !padded);
        Tensor x = randomTensor(convIn, ++seed), w = randomTensor(Shape::nchw(5, 6, 4, 3), ++seed);
        Tensor b = randomTensor(Shape::nchw(5, 1, 1, 1), ++seed);
        Tensor gy = randomTensor(cs.out, ++seed);
        Tensor yFast(cs.out), yDirect(cs.out);
        cpu::fast::conv2d(x, w, &b, conv, cs.resolvedPadding, yFast);
        cpu::direct::conv2d(x, w, &b, conv, cs.resolvedPadding, yDirect);
        CHECK(relL2(yFast, yDirect) < 1e-6);
        checkConvBackward(x, w, &b, gy,
            { [&](Tensor& y) { cpu::direct::conv2d(x, w, &b, conv, cs.resolvedPadding, y); },
                [&](bool fast, Tensor& gx) {
                    fast ? cpu::grad::fast::conv2dData(gy, w, conv, cs.resolvedPadding, gx)
                         : cpu::grad::direct::conv2dData(gy, w, conv, cs.resolvedPadding, gx);
                },
                [&](bool fast, Tensor& gw, Tensor* gb) {
                    fast ? cpu::grad::fast::conv2dWeights(gy, x, conv, cs.resolvedPadding, gw, gb)
                         : cpu::grad::direct::conv2dWeights(gy, x, conv, cs.resolvedPadding, gw, gb);
                } });

        ConvCase stem { 3, 7, 1, 1, 4, { 4, 3 }, { 2, 2 }, explicitPadding(0, 0, 0, 0), { 1, 1 }, 1, true };
        if (padded)
            stem.pad = explicitPadding(1, 1, 0, 0);
        const ConvTranspose2d convT = convTSpec(stem, { 0, 0 });
        const Shape tIn = Shape::nchw(stem.n, stem.cin, 1, 1);
        const LayerShape ts = inferLayer(convT, tIn);
        REQUIRE(ts.ok);
        CHECK(cpu::fast::convTranspose2dIsDense(convT, ts.resolvedPadding, tIn, ts.out) == !padded);
        Tensor tx = randomTensor(tIn, ++seed), tw = randomTensor(Shape::nchw(7, 4, 4, 3), ++seed);
        Tensor tb = randomTensor(Shape::nchw(4, 1, 1, 1), ++seed);
        Tensor tgy = randomTensor(ts.out, ++seed);
        Tensor tFast(ts.out), tDirect(ts.out);
        cpu::fast::convTranspose2d(tx, tw, &tb, convT, ts.resolvedPadding, tFast);
        cpu::direct::convTranspose2d(tx, tw, &tb, convT, ts.resolvedPadding, tDirect);
        CHECK(relL2(tFast, tDirect) < 1e-6);
        checkConvBackward(tx, tw, &tb, tgy,
            { [&](Tensor& y) { cpu::direct::convTranspose2d(tx, tw, &tb, convT, ts.resolvedPadding, y); },
                [&](bool fast, Tensor& gx) {
                    fast ? cpu::grad::fast::convTranspose2dData(tgy, tw, convT, ts.resolvedPadding, gx)
                         : cpu::grad::direct::convTranspose2dData(tgy, tw, convT, ts.resolvedPadding, gx);
                },
                [&](bool fast, Tensor& gw, Tensor* gb) {
                    fast ? cpu::grad::fast::convTranspose2dWeights(tgy, tx, convT, ts.resolvedPadding, gw, gb)
                         : cpu::grad::direct::convTranspose2dWeights(tgy, tx, convT, ts.resolvedPadding, gw, gb);
                } });
    }
}

TEST_CASE("the fast weight gradient split across its reduction matches cpu.direct on 2 and 16 threads",
    "[training][conv][threads]")
{
    // Products with fewer blocks of C than threads split the items and their runs of lines across the team instead
    // (conv_backward_gemm.cpp, weightGradientByTasks): ResNet's stem at batch 3 (fewer items than threads), DCGAN's
    // first layer and its last transposed layer (64 × 48), two groups, and a volume; on 2 threads the 3 → 16 layer.
    // And the other path's bundles of items where an item has few positions.
    const auto check = [](const char* what, const Tensor& fast, const Tensor& direct) {
        INFO(what);
        CHECK(relL2(fast, direct) < 1e-5);
    };
    for (const int threads : { 2, 16 }) {
        INFO(threads << " threads");
        setCpuThreadCount(threads);
        enterCpuThreadPolicy(); // the ops are called directly here, not through a session that sizes the team
        uint64_t seed = 900;
        const auto conv2d = [&](Shape in, int64_t out, Pair k, Pair s, int64_t pad, int64_t groups) {
            Conv2d spec;
            spec.out_channels = out;
            spec.kernel_size = k;
            spec.stride = s;
            spec.padding = Padding2d::symmetric(pad, pad);
            spec.groups = groups;
            spec.bias = true;
            const LayerShape ls = inferLayer(spec, in);
            REQUIRE(ls.ok);
            const Tensor x = randomTensor(in, ++seed), gy = randomTensor(ls.out, ++seed);
            const Shape ws = Shape::nchw(out, in.c / groups, k[0], k[1]), bs = Shape::nchw(out, 1, 1, 1);
            Tensor gwFast(ws), gwDirect(ws), gbFast(bs), gbDirect(bs);
            cpu::grad::fast::conv2dWeights(gy, x, spec, ls.resolvedPadding, gwFast, &gbFast);
            cpu::grad::direct::conv2dWeights(gy, x, spec, ls.resolvedPadding, gwDirect, &gbDirect);
            check("conv2d weight", gwFast, gwDirect);
            check("conv2d bias", gbFast, gbDirect);
        };
        conv2d(Shape::nchw(3, 3, 40, 40), 64, { 7, 7 }, { 2, 2 }, 3, 1);
        conv2d(Shape::nchw(5, 3, 64, 64), 64, { 4, 4 }, { 2, 2 }, 1, 1);
        conv2d(Shape::nchw(2, 8, 64, 64), 16, { 3, 3 }, { 1, 1 }, 1, 2);
        conv2d(Shape::nchw(3, 3, 64, 64), 16, { 3, 3 }, { 1, 1 }, 1, 1);
        // Few positions an item (DCGAN's 4² layer): items in bundles, one product over 16 of them
        // (weightGradientByItem).
        conv2d(Shape::nchw(19, 64, 8, 8), 128, { 4, 4 }, { 2, 2 }, 1, 1);
        {
            ConvTranspose2d spec;
            spec.out_channels = 3;
            spec.kernel_size = { 4, 4 };
            spec.stride = { 2, 2 };
            spec.padding = Padding2d::symmetric(1, 1);
            spec.bias = false;
            const Shape in = Shape::nchw(4, 64, 24, 24);
            const LayerShape ls = inferLayer(spec, in);
            REQUIRE(ls.ok);
            const Tensor x = randomTensor(in, ++seed), gy = randomTensor(ls.out, ++seed);
            Tensor gwFast(Shape::nchw(64, 3, 4, 4)), gwDirect(Shape::nchw(64, 3, 4, 4));
            cpu::grad::fast::convTranspose2dWeights(gy, x, spec, ls.resolvedPadding, gwFast, nullptr);
            cpu::grad::direct::convTranspose2dWeights(gy, x, spec, ls.resolvedPadding, gwDirect, nullptr);
            check("conv_transpose2d weight", gwFast, gwDirect);
        }
        {
            const Conv3d spec = conv3dSpec(8, { 3, 3, 3 }, { 1, 1, 1 }, explicitPadding3d(1, 1, 1, 1, 1, 1));
            const Shape in = Shape::ncdhw(3, 2, 16, 16, 16);
            const LayerShape ls = inferLayer(spec, in);
            REQUIRE(ls.ok);
            const Tensor x = randomTensor(in, ++seed), gy = randomTensor(ls.out, ++seed);
            Tensor gwFast(Shape::ncdhw(8, 2, 3, 3, 3)), gwDirect(Shape::ncdhw(8, 2, 3, 3, 3));
            cpu::grad::fast::conv3dWeights(gy, x, spec, ls.resolvedPadding3d, gwFast, nullptr);
            cpu::grad::direct::conv3dWeights(gy, x, spec, ls.resolvedPadding3d, gwDirect, nullptr);
            check("conv3d weight", gwFast, gwDirect);
        }
    }
    setCpuThreadCount(0);
    enterCpuThreadPolicy();
}

TEST_CASE("linear backward matches finite differences, and the fast path matches cpu.direct", "[training][linear]")
{
    uint64_t seed = 300;
    for (const auto& [batch, in, out] : { std::tuple { 1, 5, 3 }, std::tuple { 4, 7, 2 }, std::tuple { 3, 16, 10 } }) {
        INFO("linear " << in << " -> " << out << " batch " << batch);
        Linear spec;
        spec.out_features = out;
        Tensor x = randomTensor(Shape::features(batch, in), ++seed);
        Tensor w = randomTensor(Shape::nchw(out, in, 1, 1), ++seed);
        Tensor b = randomTensor(Shape::nchw(out, 1, 1, 1), ++seed);
        const Shape outShape = Shape::features(batch, out);
        const Tensor gy = randomTensor(outShape, ++seed);
        const auto fwd = [&](Tensor& y) { cpu::direct::linear(x, w, &b, y); };
        Tensor gx(x.shape()), gw(w.shape()), gb(b.shape());
        cpu::grad::direct::linearData(gy, w, gx);
        cpu::grad::direct::linearWeights(gy, x, gw, &gb);
        CHECK(relL2(gx, numericalGradient(x, gy, outShape, fwd, 0.25)) < 1e-5);
        CHECK(relL2(gw, numericalGradient(w, gy, outShape, fwd, 0.25)) < 1e-5);
        CHECK(relL2(gb, numericalGradient(b, gy, outShape, fwd, 0.25)) < 1e-5);
        Tensor fx(x.shape()), fw(w.shape()), fb(b.shape());
        cpu::grad::fast::linearData(gy, w, fx);
        cpu::grad::fast::linearWeights(gy, x, fw, &fb);
        CHECK(relL2(fx, gx) < 1e-6);
        CHECK(relL2(fw, gw) < 1e-6);
        CHECK(relL2(fb, gb) < 1e-6);
    }
}
