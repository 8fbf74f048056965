// The backward of batch norm (training mode), the activations, PReLU, the pools, softmax, mul, concat, pad and dropout
// against finite differences of their forward, with PyTorch's rules where a derivative has a choice (kinks, ties).
#include "compute/cpu/cpu_ops.h"
#include "compute/cpu_threads.h"
#include "compute/layer_kinds.h"
#include "compute/training/cpu_backward_ops.h"
#include "tests/training/gradcheck.h"

#include <limits>

using namespace convscope;
using namespace convscope::test;

namespace {
// Random values kept at least `gap` away from every point in `kinks` (where a derivative jumps).
Tensor awayFrom(const Shape& shape, uint64_t seed, double scale, std::initializer_list<double> kinks, double gap)
{
    Tensor t = randomTensor(shape, seed);
    for (int64_t i = 0; i < t.numel(); ++i) {
        double v = t.data()[i] * scale;
        for (double k : kinks)
            if (std::abs(v - k) < gap)
                v = k + (v < k ? -gap : gap);
        t.data()[i] = static_cast<float>(v);
    }
    return t;
}
} // namespace

TEST_CASE("activation backward matches finite differences away from the kinks", "[training][activation]")
{
    LeakyReLU leaky;
    leaky.negative_slope = 0.2;
    ELU elu;
    elu.alpha = 0.7;
    Hardtanh ht;
    ht.min_val = -0.5;
    ht.max_val = 2;
    const std::vector<LayerSpec> kinds
        = { ReLU {}, leaky, Sigmoid {}, Tanh {}, elu, ReLU6 {}, Hardswish {}, Hardsigmoid {}, SiLU {}, ht };
    const Shape shape = Shape::nchw(2, 3, 4, 5);
    uint64_t seed = 400;
    for (const LayerSpec& spec : kinds) {
        INFO(layerKind(spec).type);
        Tensor x = awayFrom(shape, ++seed, 7.0, { 0, 6, -3, 3, -0.5, 2 }, 0.05);
        const Tensor gy = randomTensor(shape, ++seed);
        Tensor gx(shape);
        cpu::grad::activation(gy, x, spec, gx);
        const auto fwd = [&](Tensor& y) { cpu::direct::activation(x, spec, y); };
        CHECK(relL2(gx, numericalGradient(x, gy, shape, fwd, 1e-3)) < 2e-3);
    }
}

TEST_CASE("activation backward takes PyTorch's value at the kinks", "[training][activation]")
{
    const Shape shape = Shape::features(1, 4);
    Tensor x(shape), gy = Tensor::filled(shape, 1.0f), gx(shape);
    const float at[] = { 0.0f, 6.0f, -3.0f, 3.0f };
    std::copy(at, at + 4, x.data());
    cpu::grad::activation(gy, x, ReLU {}, gx);
    CHECK(gx.data()[0] == 0.0f); // relu'(0) = 0 (threshold_backward: result > 0)
    cpu::grad::activation(gy, x, ReLU6 {}, gx);
    CHECK(gx.data()[0] == 0.0f); // hardtanh_backward: 0 on both bounds
    CHECK(gx.data()[1] == 0.0f);
    cpu::grad::activation(gy, x, Hardswish {}, gx);
    CHECK(gx.data()[2] == Approx(-0.5)); // x = −3 takes the middle branch x/3 + 1/2
    CHECK(gx.data()[3] == Approx(1.5));
    cpu::grad::activation(gy, x, Hardsigmoid {}, gx);
    CHECK(gx.data()[2] == 0.0f);
    CHECK(gx.data()[3] == 0.0f);
    ELU elu;
    elu.alpha = 0.5;
    cpu::grad::activation(gy, x, elu, gx);
    CHECK(gx.data()[0] == Approx(0.5)); // elu'(0) = alpha (x <= 0 branch)
}

TEST_CASE("prelu backward matches finite differences, one slope and one per channel", "[training][activation]")
{
    const Shape shape = Shape::nchw(2, 3, 3, 4);
    for (int64_t slopes : { int64_t(1), int64_t(3) }) {
        INFO(slopes << " slopes");
        Tensor x = awayFrom(shape, 500 + uint64_t(slopes), 2.0, { 0 }, 0.05);
        Tensor a = randomTensor(Shape::nchw(slopes, 1, 1, 1), 510);
        const Tensor gy = randomTensor(shape, 511);
        Tensor gx(shape), ga(a.shape());
        cpu::grad::preluData(gy, x, a, gx);
        cpu::grad::preluWeights(gy, x, ga);
        const auto fwd = [&](Tensor& y) { cpu::direct::prelu(x, a, y); };
        CHECK(relL2(gx, numericalGradient(x, gy, shape, fwd, 1e-3)) < 1e-3);
        CHECK(relL2(ga, numericalGradient(a, gy, shape, fwd, 0.25)) < 1e-5);
    }
}

TEST_CASE("batch norm in training mode: statistics, running averages and backward", "[training][batchnorm]")
{
    const Shape shape = Shape::nchw(3, 2, 3, 2);
    Tensor x = randomTensor(shape, 600);
    Tensor w = randomTensor(Shape::nchw(2, 1, 1, 1), 601);
    Tensor b = randomTensor(Shape::nchw(2, 1, 1, 1), 602);
    const Tensor gy = randomTensor(shape, 603);
    Tensor rm = Tensor::filled(Shape::nchw(2, 1, 1, 1), 0.5f), rv = Tensor::filled(Shape::nchw(2, 1, 1, 1), 2.0f);
    Tensor y(shape);
    cpu::grad::BatchStats stats;
    cpu::grad::batchNorm2dTrainForward(x, &w, &b, 1e-5, 0.1, rm, rv, y, stats);
    // Channel 0's mean and unbiased variance by hand, and the running averages PyTorch keeps.
    double sum = 0, sq = 0;
    std::vector<double> v;
    for (int64_t n = 0; n < 3; ++n)
        for (int64_t i = 0; i < 6; ++i)
            v.push_back(x.data()[(n * 2 + 0) * 6 + i]);
    for (double e : v)
        sum += e;
    const double mean = sum / 18;
    for (double e : v)
        sq += (e - mean) * (e - mean);
    CHECK(rm.data()[0] == Approx(0.9 * 0.5 + 0.1 * mean).epsilon(1e-6));
    CHECK(rv.data()[0] == Approx(0.9 * 2.0 + 0.1 * sq / 17).epsilon(1e-6));
    CHECK(y.data()[0] == Approx((x.data()[0] - mean) / std::sqrt(sq / 18 + 1e-5) * w.data()[0] + b.data()[0]));

    Tensor gx(shape), gw(w.shape()), gb(b.shape());
    cpu::grad::batchNorm2dData(gy, x, &w, stats, gx);
    cpu::grad::batchNorm2dWeights(gy, x, stats, gw, gb);
    const auto fwd = [&](Tensor& out) {
        Tensor m = rm.clone(), var = rv.clone();
        cpu::grad::BatchStats s;
        cpu::grad::batchNorm2dTrainForward(x, &w, &b, 1e-5, 0.1, m, var, out, s);
    };
    CHECK(relL2(gx, numericalGradient(x, gy, shape, fwd, 1e-2)) < 2e-3);
    CHECK(relL2(gw, numericalGradient(w, gy, shape, fwd, 0.25)) < 1e-5);
    CHECK(relL2(gb, numericalGradient(b, gy, shape, fwd, 0.25)) < 1e-5);

    Tensor one = Tensor::filled(Shape::nchw(1, 2, 1, 1), 1.0f), out(one.shape());
    CHECK_THROWS_WITH(cpu::grad::batchNorm2dTrainForward(one, &w, &b, 1e-5, 0.1, rm, rv, out, stats),
        Catch::Contains("more than 1 value per channel"));
}

TEST_CASE("max pool backward: the gradient goes to the argmax, the first of a tie", "[training][pool]")
{
    // Distinct values (a shuffled ramp), so a small step never changes a window's argmax.
    const Shape shape = Shape::nchw(2, 2, 7, 6);
    uint64_t seed = 700;
    for (const auto& [k, s, pad, d, ceil] :
        { std::tuple { Pair { 2, 2 }, Pair { 2, 2 }, explicitPadding(0, 0, 0, 0), Pair { 1, 1 }, false },
            std::tuple { Pair { 3, 3 }, Pair { 2, 1 }, explicitPadding(1, 1, 1, 1), Pair { 1, 1 }, true },
            std::tuple { Pair { 3, 2 }, Pair { 1, 2 }, explicitPadding(1, 1, 0, 0), Pair { 2, 2 }, false },
            std::tuple { Pair { 3, 3 }, Pair { 1, 1 }, explicitPadding(1, 1, 1, 1), Pair { 1, 1 }, false } }) {
        MaxPool2d spec;
        spec.kernel_size = k;
        spec.stride = s;
        spec.padding = pad;
        spec.dilation = d;
        spec.ceil_mode = ceil;
        const LayerShape ls = inferLayer(spec, shape);
        REQUIRE(ls.ok);
        Tensor x(shape);
        Tensor order = randomTensor(shape, ++seed);
        std::vector<int64_t> idx(size_t(shape.numel()));
        for (size_t i = 0; i < idx.size(); ++i)
            idx[i] = int64_t(i);
        std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return order.data()[a] < order.data()[b]; });
        for (size_t i = 0; i < idx.size(); ++i)
            x.data()[idx[i]] = static_cast<float>(double(i) * 0.01);
        const Tensor gy = randomTensor(ls.out, ++seed);
        Tensor gx(shape);
        cpu::grad::maxPool2d(gy, x, spec, ls.resolvedPadding, gx);
        const auto fwd = [&](Tensor& y) { cpu::direct::maxPool2d(x, spec, ls.resolvedPadding, y); };
        CHECK(relL2(gx, numericalGradient(x, gy, ls.out, fwd, 1e-3)) < 1e-3);
    }
    // A tie: all four equal; PyTorch's CPU kernel keeps the first (row-major) index.
    MaxPool2d spec;
    Tensor x = Tensor::filled(Shape::nchw(1, 1, 2, 2), 3.0f), gy = Tensor::filled(Shape::nchw(1, 1, 1, 1), 1.0f);
    Tensor gx(x.shape());
    cpu::grad::maxPool2d(gy, x, spec, explicitPadding(0, 0, 0, 0), gx);
    CHECK(gx.data()[0] == 1.0f);
    CHECK(gx.data()[1] == 0.0f);
    CHECK(gx.data()[3] == 0.0f);
}

TEST_CASE("average pool backward matches finite differences in every divisor mode", "[training][pool]")
{
    const Shape shape = Shape::nchw(1, 2, 7, 5);
    uint64_t seed = 800;
    for (bool includePad : { true, false })
        for (bool ceil : { false, true })
            for (bool override : { false, true }) {
                INFO("count_include_pad " << includePad << " ceil_mode " << ceil << " override " << override);
                AvgPool2d spec;
                spec.kernel_size = { 3, 2 };
                spec.stride = Pair { 2, 2 };
                spec.padding = explicitPadding(1, 1, 1, 1);
                spec.ceil_mode = ceil;
                spec.count_include_pad = includePad;
                if (override)
                    spec.divisor_override = 5;
                const LayerShape ls = inferLayer(spec, shape);
                REQUIRE(ls.ok);
                Tensor x = randomTensor(shape, ++seed);
                const Tensor gy = randomTensor(ls.out, ++seed);
                Tensor gx(shape);
                cpu::grad::avgPool2d(gy, spec, ls.resolvedPadding, gx);
                const auto fwd = [&](Tensor& y) { cpu::direct::avgPool2d(x, spec, ls.resolvedPadding, y); };
                CHECK(relL2(gx, numericalGradient(x, gy, ls.out, fwd, 0.25)) < 1e-5);
            }
    Tensor x = randomTensor(shape, 850);
    const Shape gapShape = Shape::nchw(1, 2, 1, 1);
    const Tensor gy = randomTensor(gapShape, 851);
    Tensor gx(shape);
    cpu::grad::globalAvgPool2d(gy, gx);
    const auto fwd = [&](Tensor& y) { cpu::direct::globalAvgPool2d(x, y); };
    CHECK(relL2(gx, numericalGradient(x, gy, gapShape, fwd, 0.25)) < 1e-5);
}

TEST_CASE("softmax, mul (with a broadcast gate), concat and pad backward match finite differences", "[training][merge]")
{
    const Shape shape = Shape::nchw(2, 3, 2, 3);
    {
        Tensor x = randomTensor(shape, 900);
        const Tensor gy = randomTensor(shape, 901);
        Tensor y(shape), gx(shape);
        cpu::direct::softmax(x, y);
        cpu::grad::softmax(gy, y, gx);
        const auto fwd = [&](Tensor& out) { cpu::direct::softmax(x, out); };
        CHECK(relL2(gx, numericalGradient(x, gy, shape, fwd, 1e-2)) < 1e-3);
    }
    {
        Tensor a = randomTensor(shape, 902), gate = randomTensor(Shape::nchw(2, 3, 1, 1), 903);
        const Tensor gy = randomTensor(shape, 904);
        Tensor ga(shape), gg(gate.shape());
        cpu::grad::mulInput(gy, gate, ga);
        cpu::grad::mulInput(gy, a, gg);
        const auto fwd = [&](Tensor& out) { cpu::direct::mul(a, gate, out); };
        CHECK(relL2(ga, numericalGradient(a, gy, shape, fwd, 0.25)) < 1e-5);
        CHECK(relL2(gg, numericalGradient(gate, gy, shape, fwd, 0.25)) < 1e-5);
    }
    {
        Tensor a = randomTensor(Shape::nchw(2, 1, 2, 3), 905), b = randomTensor(shape, 906);
        const Shape outShape = Shape::nchw(2, 4, 2, 3);
        const Tensor gy = randomTensor(outShape, 907);
        Tensor ga(a.shape()), gb(b.shape());
        cpu::grad::concatInput(gy, 0, ga);
        cpu::grad::concatInput(gy, 1, gb);
        const auto fwd = [&](Tensor& out) { cpu::direct::concat({ &a, &b }, 1, out); };
        CHECK(relL2(ga, numericalGradient(a, gy, outShape, fwd, 0.25)) < 1e-5);
        CHECK(relL2(gb, numericalGradient(b, gy, outShape, fwd, 0.25)) < 1e-5);
    }
    for (Pad::Mode mode : { Pad::Mode::Constant, Pad::Mode::Reflect, Pad::Mode::Replicate }) {
        INFO(padModeName(mode));
        Pad spec;
        spec.mode = mode;
        spec.padding = { 1, 2, 2, 1 };
        spec.value = 0.5;
        const Shape in = Shape::nchw(1, 2, 4, 3);
        const LayerShape ls = inferLayer(spec, in);
        REQUIRE(ls.ok);
        Tensor x = randomTensor(in, 910);
        const Tensor gy = randomTensor(ls.out, 911);
        Tensor gx(in);
        cpu::grad::pad(gy, spec, gx);
        const auto fwd = [&](Tensor& out) { cpu::direct::pad(x, spec, out); };
        CHECK(relL2(gx, numericalGradient(x, gy, ls.out, fwd, 0.25)) < 1e-5);
    }
}

TEST_CASE("dropout in training mode: a seeded mask, scaled by 1 / (1 - p), and its backward", "[training][dropout]")
{
    const Shape shape = Shape::features(50, 40);
    Tensor x = randomTensor(shape, 950), y(shape), again(shape);
    std::vector<float> mask, mask2;
    cpu::grad::dropoutForward(x, 0.25, 7, mask, y);
    cpu::grad::dropoutForward(x, 0.25, 7, mask2, again);
    CHECK(mask == mask2); // the same seed, the same mask
    int64_t zeros = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
        if (mask[size_t(i)] == 0.0f) {
            ++zeros;
            CHECK(y.data()[i] == 0.0f);
        } else {
            CHECK(mask[size_t(i)] == Approx(1 / 0.75));
            CHECK(y.data()[i] == Approx(x.data()[i] / 0.75));
        }
    }
    CHECK(double(zeros) / double(x.numel()) == Approx(0.25).margin(0.04));
    const Tensor gy = randomTensor(shape, 951);
    Tensor gx(shape);
    cpu::grad::dropoutBackward(gy, mask, gx);
    for (int64_t i = 0; i < x.numel(); ++i)
        CHECK(gx.data()[i] == gy.data()[i] * mask[size_t(i)]);
}

TEST_CASE("the threaded element-wise backward (the fast path's) is bit-identical to the one-thread loops",
    "[training][parallel]")
{
    const Shape shape = Shape::nchw(4, 8, 40, 36); // 46080 elements: above the threshold that wakes the team
    const Tensor x = randomTensor(shape, 3000), gy = randomTensor(shape, 3001);
    const auto same = [](const Tensor& a, const Tensor& b) {
        return a.numel() == b.numel() && std::equal(a.data(), a.data() + a.numel(), b.data());
    };
    Tensor one(shape), many(shape);
    cpu::grad::activation(gy, x, SiLU {}, one, false);
    cpu::grad::activation(gy, x, SiLU {}, many, true);
    CHECK(same(one, many));
    cpu::grad::softmax(gy, x, one, false);
    cpu::grad::softmax(gy, x, many, true);
    CHECK(same(one, many));
    MaxPool2d mp;
    mp.kernel_size = { 3, 3 };
    mp.stride = Pair { 2, 2 };
    mp.padding = explicitPadding(1, 1, 1, 1);
    const LayerShape ls = inferLayer(mp, shape);
    const Tensor g = randomTensor(ls.out, 3002);
    cpu::grad::maxPool2d(g, x, mp, ls.resolvedPadding, one, false);
    cpu::grad::maxPool2d(g, x, mp, ls.resolvedPadding, many, true);
    CHECK(same(one, many));
    AvgPool2d ap;
    ap.kernel_size = { 3, 3 };
    ap.stride = Pair { 2, 2 };
    ap.padding = explicitPadding(1, 1, 1, 1);
    cpu::grad::avgPool2d(g, ap, ls.resolvedPadding, one, false);
    cpu::grad::avgPool2d(g, ap, ls.resolvedPadding, many, true);
    CHECK(same(one, many));
}

// Batch norm's fast path (batch_norm_fast.cpp) is its own arithmetic: float lanes over (channel, image) planes, the
// planes' partials added in a fixed order. It must give the same bits on one thread as on many, and agree with the
// reference's double loops to float rounding — on data far from zero too, where a one-pass Σx² would cancel.
TEST_CASE("batch norm's fast training path is thread-count independent and within float rounding of the reference",
    "[training][parallel]")
{
    const Shape shape = Shape::nchw(4, 8, 40, 36); // 46080 elements: above the threshold that wakes the team
    Tensor x = randomTensor(shape, 3000);
    const Tensor gy = randomTensor(shape, 3001);
    for (int64_t i = 0; i < x.numel(); ++i)
        x.data()[i] = 100.0f + 3.0f * x.data()[i]; // mean 100: the squares about a float mean, corrected
    const Tensor w = randomTensor(Shape::nchw(8, 1, 1, 1), 3003), b = randomTensor(Shape::nchw(8, 1, 1, 1), 3004);
    const auto run = [&](bool fast, Tensor& y, Tensor& rv, Tensor& gx, Tensor& gw, Tensor& gb) {
        Tensor rm = Tensor::zeros(Shape::nchw(8, 1, 1, 1));
        rv = Tensor::filled(Shape::nchw(8, 1, 1, 1), 1.0f);
        cpu::grad::BatchStats stats;
        cpu::grad::batchNorm2dTrainForward(x, &w, &b, 1e-5, 0.1, rm, rv, y, stats, fast);
        cpu::grad::batchNorm2dData(gy, x, &w, stats, gx, fast);
        cpu::grad::batchNorm2dWeights(gy, x, stats, gw, gb, fast);
    };
    const Shape vec = Shape::nchw(8, 1, 1, 1);
    Tensor y0(shape), rv0, gx0(shape), gw0(vec), gb0(vec); // the reference
    Tensor y1(shape), rv1, gx1(shape), gw1(vec), gb1(vec); // fast, every thread
    Tensor y2(shape), rv2, gx2(shape), gw2(vec), gb2(vec); // fast, one thread
    run(false, y0, rv0, gx0, gw0, gb0);
    run(true, y1, rv1, gx1, gw1, gb1);
    const int threads = cpuThreadCount();
    setCpuThreadCount(1);
    run(true, y2, rv2, gx2, gw2, gb2);
    setCpuThreadCount(threads);
    const auto same = [](const Tensor& a, const Tensor& b) {
        return a.numel() == b.numel() && std::equal(a.data(), a.data() + a.numel(), b.data());
    };
    CHECK(same(y1, y2));
    CHECK(same(rv1, rv2));
    CHECK(same(gx1, gx2));
    CHECK(same(gw1, gw2));
    CHECK(same(gb1, gb2));
    CHECK(relL2(y1, y0) < 1e-6);
    CHECK(relL2(rv1, rv0) < 1e-6);
    CHECK(relL2(gx1, gx0) < 1e-5);
    CHECK(relL2(gw1, gw0) < 1e-5);
    CHECK(relL2(gb1, gb0) < 1e-5);
    // The weights' gradient reuses the sums the data gradient kept (one read of gy and x): the same bits as summing
    // afresh, which it does when no data gradient ran before it (a first layer) and after a new forward.
    cpu::grad::BatchStats fresh;
    Tensor rm = Tensor::zeros(vec), rv3 = Tensor::filled(vec, 1.0f), y3(shape), gw3(vec), gb3(vec);
    cpu::grad::batchNorm2dTrainForward(x, &w, &b, 1e-5, 0.1, rm, rv3, y3, fresh, true);
    cpu::grad::batchNorm2dWeights(gy, x, fresh, gw3, gb3, true);
    CHECK(same(gw3, gw1));
    CHECK(same(gb3, gb1));
    Tensor gx3(shape);
    cpu::grad::batchNorm2dData(gy, x, &w, fresh, gx3, true);
    CHECK(fresh.sumsOf[0] == gy.data()); // kept for the weights' gradient
    cpu::grad::batchNorm2dTrainForward(x, &w, &b, 1e-5, 0.1, rm, rv3, y3, fresh, true);
    CHECK(fresh.sumsOf[0] == nullptr); // a new forward drops them
}

TEST_CASE("allFinite finds one NaN or infinity anywhere, on one thread and on the team", "[training][parallel]")
{
    Tensor t = randomTensor(Shape::nchw(3, 7, 61, 59), 3100); // 75579 elements: whole blocks, lanes and a tail
    for (const bool team : { false, true }) {
        CHECK(cpu::grad::allFinite(t, team));
        for (const int64_t at : { int64_t(0), int64_t(17), int64_t(65536), t.numel() - 1 })
            for (const float bad : { std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                     -std::numeric_limits<float>::infinity() }) {
                const float keep = t.data()[at];
                t.data()[at] = bad;
                INFO("element " << at << " = " << bad << (team ? ", the team" : ", one thread"));
                CHECK_FALSE(cpu::grad::allFinite(t, team));
                t.data()[at] = keep;
            }
    }
    CHECK(cpu::grad::allFinite(Tensor(Shape {}), true)); // empty
}
