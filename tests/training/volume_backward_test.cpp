// The backward of the 3-D kinds: conv3d and conv_transpose3d (cpu.direct against finite differences, the vol2col fast
// path against cpu.direct), maxpool3d and avgpool3d against finite differences, and a volume network's input gradient
// through the training session (batch norm 3-D and global pooling included).
#include "compute/backend_registry.h"
#include "compute/cpu/cpu_ops.h"
#include "compute/materialize.h"
#include "compute/training/cpu_backward_ops.h"
#include "compute/training/training.h"
#include "tests/training/gradcheck.h"

using namespace convscope;
using namespace convscope::test;

namespace {
struct Conv3dCase {
    int64_t n, cin, d, h, w, cout;
    Triple k, s;
    Padding3d pad;
    Triple dil;
    int64_t groups;
};
const Conv3dCase kCases[] = {
    { 1, 2, 4, 4, 4, 3, { 3, 3, 3 }, { 1, 1, 1 }, explicitPadding3d(1, 1, 1, 1, 1, 1), { 1, 1, 1 }, 1 },
    { 2, 4, 5, 4, 6, 2, { 2, 3, 1 }, { 2, 1, 2 }, explicitPadding3d(1, 0, 0, 1, 0, 0), { 1, 1, 1 }, 2 },
    { 1, 2, 6, 5, 5, 4, { 2, 2, 2 }, { 1, 2, 1 }, explicitPadding3d(0, 1, 1, 0, 1, 1), { 2, 1, 2 }, 2 },
};
} // namespace

TEST_CASE("conv3d and conv_transpose3d backward match finite differences; the fast path matches cpu.direct",
    "[training][volume]")
{
    uint64_t seed = 2000;
    for (const Conv3dCase& c : kCases) {
        INFO("case with " << c.cin << " -> " << c.cout << " channels, groups " << c.groups);
        const Shape inShape = Shape::ncdhw(c.n, c.cin, c.d, c.h, c.w);
        {
            Conv3d spec = conv3dSpec(c.cout, c.k, c.s, c.pad, c.dil, c.groups);
            const LayerShape ls = inferLayer(spec, inShape);
            REQUIRE(ls.ok);
            Tensor x = randomTensor(inShape, ++seed);
            Tensor w = randomTensor(Shape::ncdhw(c.cout, c.cin / c.groups, c.k[0], c.k[1], c.k[2]), ++seed);
            Tensor b = randomTensor(Shape::nchw(c.cout, 1, 1, 1), ++seed);
            const Tensor gy = randomTensor(ls.out, ++seed);
            const Padding3d& pad = ls.resolvedPadding3d;
            checkConvBackward(x, w, &b, gy,
                { [&](Tensor& y) { cpu::direct::conv3d(x, w, &b, spec, pad, y); },
                    [&](bool fast, Tensor& gx) {
                        fast ? cpu::grad::fast::conv3dData(gy, w, spec, pad, gx)
                             : cpu::grad::direct::conv3dData(gy, w, spec, pad, gx);
                    },
                    [&](bool fast, Tensor& gw, Tensor* gb) {
                        fast ? cpu::grad::fast::conv3dWeights(gy, x, spec, pad, gw, gb)
                             : cpu::grad::direct::conv3dWeights(gy, x, spec, pad, gw, gb);
                    } });
        }
        {
            ConvTranspose3d spec;
            spec.out_channels = c.cout;
            spec.kernel_size = c.k;
            spec.stride = c.s;
            spec.padding = explicitPadding3d(0, 0, 0, 0, 0, 0);
            spec.dilation = c.dil;
            spec.groups = c.groups;
            for (int a = 0; a < 3; ++a)
                spec.output_padding[size_t(a)] = std::max(c.s[size_t(a)], c.dil[size_t(a)]) > 1 ? 1 : 0;
            const LayerShape ls = inferLayer(spec, inShape);
            REQUIRE(ls.ok);
            Tensor x = randomTensor(inShape, ++seed);
            Tensor w = randomTensor(Shape::ncdhw(c.cin, c.cout / c.groups, c.k[0], c.k[1], c.k[2]), ++seed);
            Tensor b = randomTensor(Shape::nchw(c.cout, 1, 1, 1), ++seed);
            const Tensor gy = randomTensor(ls.out, ++seed);
            const Padding3d& pad = ls.resolvedPadding3d;
            checkConvBackward(x, w, &b, gy,
                { [&](Tensor& y) { cpu::direct::convTranspose3d(x, w, &b, spec, pad, y); },
                    [&](bool fast, Tensor& gx) {
                        fast ? cpu::grad::fast::convTranspose3dData(gy, w, spec, pad, gx)
                             : cpu::grad::direct::convTranspose3dData(gy, w, spec, pad, gx);
                    },
                    [&](bool fast, Tensor& gw, Tensor* gb) {
                        fast ? cpu::grad::fast::convTranspose3dWeights(gy, x, spec, pad, gw, gb)
                             : cpu::grad::direct::convTranspose3dWeights(gy, x, spec, pad, gw, gb);
                    } });
        }
    }
}

TEST_CASE("maxpool3d and avgpool3d backward match finite differences", "[training][volume]")
{
    const Shape shape = Shape::ncdhw(1, 2, 5, 4, 6);
    Tensor x(shape);
    Tensor order = randomTensor(shape, 2100);
    std::vector<int64_t> idx(size_t(shape.numel()));
    for (size_t i = 0; i < idx.size(); ++i)
        idx[i] = int64_t(i);
    std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return order.data()[a] < order.data()[b]; });
    for (size_t i = 0; i < idx.size(); ++i)
        x.data()[idx[i]] = static_cast<float>(double(i) * 0.01); // distinct: no argmax moves under a small step
    MaxPool3d mp;
    mp.kernel_size = { 2, 3, 2 };
    mp.stride = Triple { 2, 1, 2 };
    mp.padding = explicitPadding3d(1, 1, 1, 1, 0, 0);
    mp.ceil_mode = true;
    LayerShape ls = inferLayer(mp, shape);
    REQUIRE(ls.ok);
    Tensor gy = randomTensor(ls.out, 2101);
    Tensor gx(shape);
    cpu::grad::maxPool3d(gy, x, mp, ls.resolvedPadding3d, gx);
    const auto fwdMax = [&](Tensor& y) { cpu::direct::maxPool3d(x, mp, ls.resolvedPadding3d, y); };
    CHECK(relL2(gx, numericalGradient(x, gy, ls.out, fwdMax, 1e-3)) < 1e-3);

    for (bool includePad : { true, false }) {
        AvgPool3d ap;
        ap.kernel_size = { 3, 2, 3 };
        ap.stride = Triple { 2, 2, 2 };
        ap.padding = explicitPadding3d(1, 1, 1, 0, 1, 1);
        ap.ceil_mode = true;
        ap.count_include_pad = includePad;
        const LayerShape as = inferLayer(ap, shape);
        REQUIRE(as.ok);
        const Tensor g = randomTensor(as.out, 2102);
        Tensor ga(shape);
        cpu::grad::avgPool3d(g, ap, as.resolvedPadding3d, ga);
        const auto fwdAvg = [&](Tensor& y) { cpu::direct::avgPool3d(x, ap, as.resolvedPadding3d, y); };
        CHECK(relL2(ga, numericalGradient(x, g, as.out, fwdAvg, 0.25)) < 1e-5);
    }
}

TEST_CASE(
    "a volume network's input gradient through the training session matches finite differences", "[training][volume]")
{
    NetworkBuilder b("volumes", 2, 2, 4, 5, false, 1, 2200);
    b.net.input.depth = 4;
    b.add("c1", conv3dSpec(3, { 3, 3, 3 }, { 1, 1, 1 }, explicitPadding3d(1, 1, 1, 1, 1, 1)));
    b.add("bn", BatchNorm3d {});
    b.add("act", SiLU {});
    MaxPool3d mp;
    mp.kernel_size = { 2, 2, 2 };
    b.add("pool", mp);
    ConvTranspose3d up;
    up.out_channels = 2;
    up.kernel_size = { 2, 2, 2 };
    up.stride = { 2, 2, 2 };
    b.add("up", up);
    b.add("gap", GlobalAvgPool3d {}, { "c1" });
    b.add("flat", Flatten {});
    b.add("cat", Concat {}, { "up", "up" });
    b.add("gap2", GlobalAvgPool3d {});
    b.add("flat2", Flatten {});
    Linear fc;
    fc.out_features = 2;
    b.add("fc", fc);
    Network net = b.net;
    const ShapeReport shapes = inferShapes(net);
    INFO(shapes.firstError());
    REQUIRE(shapes.ok());
    materializeParameters(net, shapes);
    Tensor input = randomTensor(shapes.input, 2300);
    const Tensor target = randomTensor(shapes.layers.back().out, 2301);
    TrainingOptions to;
    to.loss = LossKind::MSE;
    to.optimizer.lr = 0;
    to.inputGradient = true;
    for (const char* algorithm : { "direct", "im2col_gemm" }) {
        INFO(algorithm);
        auto session = BackendRegistry::instance().find("cpu")->createTrainingSession(algorithm, {});
        session->prepare(net, shapes, to);
        session->step(input, target, 1);
        const Tensor gx = session->inputGradient();
        Tensor numeric(input.shape());
        for (int64_t i = 0; i < input.numel(); i += 7) { // every 7th element: enough, and fast
            const float keep = input.data()[i];
            input.data()[i] = keep + 1e-2f;
            const double up1 = session->step(input, target, 1).loss;
            input.data()[i] = keep - 1e-2f;
            const double down = session->step(input, target, 1).loss;
            input.data()[i] = keep;
            numeric.data()[i] = static_cast<float>((up1 - down) / 2e-2);
        }
        double diff = 0, ref = 0;
        for (int64_t i = 0; i < input.numel(); i += 7) {
            diff += std::pow(double(gx.data()[i]) - numeric.data()[i], 2);
            ref += std::pow(double(numeric.data()[i]), 2);
        }
        CHECK(std::sqrt(diff / ref) < 3e-3);
    }
}
