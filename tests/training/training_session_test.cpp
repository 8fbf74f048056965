// The losses and optimizers against hand-computed values, and whole training steps: LeNet-5's loss going down on
// both CPU algorithms (which agree), a graph network's gradients (a residual add, a concat, batch norm, a gate)
// against finite differences of its loss, and the refusals (no backward, nothing to train, a NaN gradient).
#include "compute/backend_registry.h"
#include "compute/error.h"
#include "compute/materialize.h"
#include "compute/network_json.h"
#include "compute/training/train_run.h"
#include "tests/training/gradcheck.h"
#include "tests/training/session_checks.h"

using namespace convscope;
using namespace convscope::test;

TEST_CASE("losses: values and gradients computed by hand", "[training][loss]")
{
    Tensor logits(Shape::features(2, 3)), target(Shape::features(2, 1)), g(logits.shape());
    const float l[] = { 1, 2, 3, 0, 0, 0 };
    std::copy(l, l + 6, logits.data());
    target.data()[0] = 2;
    target.data()[1] = 0;
    const double ce = computeLoss(LossKind::CrossEntropy, logits, target, g);
    const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
    CHECK(ce == Approx(((lse - 3) + std::log(3.0)) / 2));
    CHECK(g.data()[2] == Approx((std::exp(3.0 - lse) - 1) / 2));
    CHECK(g.data()[3] == Approx((1.0 / 3 - 1) / 2));
    CHECK(g.data()[4] == Approx(1.0 / 6));

    Tensor x(Shape::features(1, 2)), y(Shape::features(1, 2)), gm(x.shape());
    x.data()[0] = 1;
    x.data()[1] = 2;
    y.data()[0] = 0;
    y.data()[1] = 4;
    CHECK(computeLoss(LossKind::MSE, x, y, gm) == Approx(2.5));
    CHECK(gm.data()[0] == Approx(1.0));
    CHECK(gm.data()[1] == Approx(-2.0));

    x.data()[0] = 0;
    x.data()[1] = -30;
    y.data()[0] = 1;
    y.data()[1] = 0;
    CHECK(computeLoss(LossKind::BCEWithLogits, x, y, gm) == Approx((std::log(2.0) + std::log1p(std::exp(-30.0))) / 2));
    CHECK(gm.data()[0] == Approx(-0.25));

    target.data()[0] = 3; // not a class of 3 logits
    CHECK_THROWS_WITH(computeLoss(LossKind::CrossEntropy, logits, target, g), Catch::Contains("not a class index"));
    CHECK_THROWS_WITH(checkLossTarget(LossKind::CrossEntropy, logits.shape(), { 2, 3 }), Catch::Contains("[2]"));
    CHECK_THROWS_WITH(checkLossTarget(LossKind::MSE, logits.shape(), { 2 }), Catch::Contains("output's shape"));
}

TEST_CASE("optimizers: SGD with momentum and weight decay, Adam, as torch.optim computes them", "[training][optim]")
{
    OptimizerSpec sgd;
    sgd.lr = 0.1;
    sgd.momentum = 0.9;
    sgd.weightDecay = 0.01;
    ParameterUpdate u(sgd, 1);
    float p = 1.0f;
    const float g = 0.5f;
    u.apply(&p, &g, 1); // d = 0.5 + 0.01; buf = d; p = 1 - 0.1 d
    CHECK(p == Approx(1 - 0.1 * 0.51));
    const double buf1 = 0.51;
    const double d2 = 0.5 + 0.01 * p;
    const double p1 = p;
    u.apply(&p, &g, 2); // buf = 0.9 buf + d
    CHECK(p == Approx(p1 - 0.1 * (0.9 * buf1 + d2)));
    u.reset();
    float q = 1.0f;
    u.apply(&q, &g, 1);
    CHECK(q == Approx(1 - 0.1 * 0.51)); // a reset starts the momentum buffer anew

    OptimizerSpec adam;
    adam.kind = OptimizerSpec::Kind::Adam;
    adam.lr = 0.1;
    ParameterUpdate a(adam, 1);
    float w = 1.0f;
    const float grads[] = { 0.5f, -0.25f };
    double m = 0, v = 0, ref = 1;
    for (int t = 1; t <= 2; ++t) {
        const double gt = grads[t - 1];
        m = 0.9 * m + 0.1 * gt;
        v = 0.999 * v + 0.001 * gt * gt;
        ref -= 0.1 / (1 - std::pow(0.9, t)) * m / (std::sqrt(v) / std::sqrt(1 - std::pow(0.999, t)) + 1e-8);
        a.apply(&w, &grads[t - 1], t);
        CHECK(w == Approx(ref).epsilon(1e-6));
    }
    OptimizerSpec bad;
    bad.lr = std::nan("");
    CHECK_THROWS_WITH(checkOptimizer(bad), Catch::Contains("learning rate"));
}

TEST_CASE(
    "a LeNet-5 training step: the loss goes down, and cpu.im2col_gemm agrees with cpu.direct", "[training][session]")
{
    const TrainResult r = checkLenetBesideDirect(Selection::parse("cpu.im2col_gemm"));
    CHECK(trainingReportCsv(r).find("cpu.im2col_gemm,3,c3,conv2d,backward-weights,") != std::string::npos);
    CHECK(trainingReportJson(r).find("\"backward-data\"") != std::string::npos);
    CHECK(trainingReportMarkdown(r).find("| 0 | c1 | conv2d |") != std::string::npos);
}

TEST_CASE("a graph network's gradients match finite differences of its loss", "[training][session]")
{
    // c1 feeds three layers (gradients summed), a residual add, batch norm in training mode, a squeeze-excitation
    // style gate, a concat, reflect padding, average pooling, then a linear head with MSE.
    NetworkBuilder b("graph", 2, 2, 6, 6, false, 1, 1100);
    b.add("c1", conv2dSpec(4, { 3, 3 }, explicitPadding(1, 1, 1, 1)));
    b.add("bn", BatchNorm2d {});
    b.add("act", Tanh {});
    b.add("res", Add {}, { "act", "c1" });
    b.add("gap", GlobalAvgPool2d {}, { "c1" });
    b.add("gate", Sigmoid {}, { "gap" });
    b.add("mul", Mul {}, { "res", "gate" });
    b.add("cat", Concat {}, { "mul", "c1" });
    Pad pad;
    pad.mode = Pad::Mode::Reflect;
    pad.padding = { 1, 0, 0, 1 };
    b.add("pad", pad);
    AvgPool2d pool;
    pool.kernel_size = { 3, 3 };
    pool.stride = Pair { 2, 2 };
    b.add("pool", pool);
    b.add("flat", Flatten {});
    Linear fc;
    fc.out_features = 3;
    b.add("fc", fc);
    Network net = b.net;
    const ShapeReport shapes = inferShapes(net);
    REQUIRE(shapes.ok());
    materializeParameters(net, shapes);
    Tensor input = randomTensor(shapes.input, 1200);
    const Tensor target = randomTensor(shapes.layers.back().out, 1201);

    TrainingOptions to;
    to.loss = LossKind::MSE;
    to.optimizer.lr = 0; // the parameters stay put, so every step evaluates the same function
    to.inputGradient = true;
    for (const char* algorithm : { "direct", "im2col_gemm" }) {
        INFO(algorithm);
        auto session = BackendRegistry::instance().find("cpu")->createTrainingSession(algorithm, {});
        REQUIRE(session);
        session->prepare(net, shapes, to);
        session->step(input, target, 1);
        const Tensor gx = session->inputGradient();
        const Tensor gw = session->parameterGradient({ 0, "weight" });
        // The loss as a function of one input element, by central differences (h = 1e-2; the loss is smooth here).
        Tensor numeric(input.shape());
        for (int64_t i = 0; i < input.numel(); ++i) {
            const float keep = input.data()[i];
            input.data()[i] = keep + 1e-2f;
            const double up = session->step(input, target, 1).loss;
            input.data()[i] = keep - 1e-2f;
            const double down = session->step(input, target, 1).loss;
            input.data()[i] = keep;
            numeric.data()[i] = static_cast<float>((up - down) / 2e-2);
        }
        CHECK(relL2(gx, numeric) < 2e-3);
        CHECK(gw.shape() == Shape::nchw(4, 2, 3, 3));
        const auto refs = session->parameters();
        CHECK(refs.size() == 6); // c1 weight, bias; bn weight, bias; fc weight, bias
    }
}

TEST_CASE(
    "train refuses what it cannot train, and names the step and layer of a non-finite gradient", "[training][session]")
{
    auto cpu = BackendRegistry::instance().find("cpu");
    CHECK_THROWS_WITH(cpu->createTrainingSession("fft", {}), Catch::Contains("no training path"));
    SessionOptions tf32; // the CPU has no TF32: it trains FP32 and says so, as its forward does
    tf32.math = MathMode::TF32;
    CHECK(cpu->createTrainingSession("direct", tf32)->metadata().at("math") == "fp32 (the CPU has no TF32)");

    // A convolution with an activation fused into its epilogue (the fusion pass's output) has no backward.
    NetworkBuilder fused("fused", 1, 2, 6, 6, false, 1, 1300);
    Conv2d conv = conv2dSpec(2, { 3, 3 }, explicitPadding(1, 1, 1, 1));
    conv.fused_activation.kind = FusedActivation::Kind::ReLU;
    fused.add("c_fused", conv);
    Network v = fused.net;
    CHECK_THAT(cpuTrainingRefusal(v), Catch::Contains("c_fused") && Catch::Contains("conv2d"));
    ShapeReport vs = inferShapes(v);
    REQUIRE(vs.ok());
    materializeParameters(v, vs);
    auto session = cpu->createTrainingSession("direct", {});
    CHECK_THROWS_AS(session->prepare(v, vs, {}), UnsupportedError);

    NetworkBuilder plain("no weights", 2, 3, 4, 4, false, 1, 1400);
    plain.add("relu", ReLU {});
    Network p = plain.net;
    ShapeReport ps = inferShapes(p);
    CHECK_THROWS_WITH(session->prepare(p, ps, {}), Catch::Contains("no trainable layer"));

    Network net = loadNetwork(examplesDir() / "lenet5.json");
    ShapeReport shapes = inferShapes(net);
    materializeParameters(net, shapes);
    TrainingOptions to;
    to.optimizer.lr = 1e30; // the first update overflows the weights: step 2's gradients are not finite
    session->prepare(net, shapes, to);
    const Tensor input = randomTensor(shapes.input, 1500);
    const Tensor target = classTargets(1, 10);
    session->step(input, target, 1);
    CHECK_THROWS_WITH(session->step(input, target, 2), Catch::Contains("step 2") && Catch::Contains("not finite"));
}

TEST_CASE("parameter drift is relative, except for a parameter that is zero by the mathematics", "[training]")
{
    Tensor a(Shape::features(1, 4)), b(Shape::features(1, 4));
    const float ref[] = { 1, -2, 3, 0.5f }, got[] = { 1.001f, -2, 3, 0.5f };
    std::copy(ref, ref + 4, a.data());
    std::copy(got, got + 4, b.data());
    CHECK(parameterDrift(b, a) == Approx(0.001 / std::sqrt(1 + 4 + 9 + 0.25)).epsilon(1e-3));
    // A zero-initialised bias before batch norm: both hold rounding noise; relative to noise the error would be ~1.
    const float noiseA[] = { 1e-9f, -2e-9f, 0, 3e-9f }, noiseB[] = { -1e-9f, 1e-9f, 2e-9f, 0 };
    std::copy(noiseA, noiseA + 4, a.data());
    std::copy(noiseB, noiseB + 4, b.data());
    CHECK(parameterDrift(b, a) < 1e-8);
}
